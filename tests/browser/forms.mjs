// Signup forms (issue 32, item 4): one built on the Forms page with a live preview, filled on
// its hosted page and, embedded, on a page of another origin; the hosted signup confirmed
// through the mail read from the capture outbox; a scripted submitter refused; and the
// suppression list kept on its page. At 1400 and 375 px with axe. Run by the cargo test `browser::dashboard_in_chromium` after audience.mjs.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { F, api, audit, base, drive, fitsAPhone, linkInMail, lookup, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

/** The confirmation link of the newest captured mail to `to`, once it is there. */
const confirmationLink = (to) =>
  linkInMail(to, (subject) => subject.startsWith("Confirm your subscription"), /href="([^"]*\/confirm\/[^"]+)"/);

// Another site: a page on another port (so another origin) that embeds the form.
let embedCode = "";
const site = createServer((_, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title></head>
    <body><main><h1>Our newsletter</h1>${embedCode}</main></body></html>`);
});
await new Promise((r) => site.listen(0, "127.0.0.1", r));
const siteOrigin = `http://127.0.0.1:${site.address().port}`;

await drive("forms", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("forms: none yet; one built with a field, a topic, double opt-in and the other site allowed");
  await nav(page, "Forms");
  await page.waitForSelector("text=No forms yet");
  await audit(page, "forms, empty");
  await page.click("#new-form");
  await page.fill("#form-settings input[name=name]", "Newsletter");
  await page.click("#add-form-field");
  const row = page.locator('[data-form-field="0"]');
  await row.getByLabel("Label").fill("First name");
  await row.getByLabel("Key").fill("firstName");
  await row.getByLabel("Required").check();
  await page.locator('#form-builder input[data-form-topic="Product news"]').check();
  await page.selectOption("#form-double-opt-in", "true");
  await page.fill("#form-settings textarea[name=consentText]", "Send me product news, once a month");
  await page.fill("#form-origins", siteOrigin);
  // The preview follows what is typed, before anything is saved.
  await page.locator("#form-preview").getByText("First name *").waitFor();
  await page.locator("#form-preview").getByText("Send me product news, once a month").waitFor();
  await audit(page, "form builder");
  await shot(page, "form-builder");
  await fitsAPhone(page, "form builder");
  await page.getByRole("button", { name: "Save form" }).click();
  await toast(page, "Form Newsletter saved");
  const form = (await api("GET", "/forms")).body[0];
  assert.deepEqual(form.fields, [{ key: "firstName", label: "First name", type: "string", required: true }]);
  assert.equal(form.doubleOptIn, true);
  assert.deepEqual(form.allowedOrigins, [siteOrigin]);
  await page.locator(`[data-form-share="Newsletter"] pre`).getByText("embed.js").waitFor();
  await audit(page, "forms with the embed snippet");
  await shot(page, "forms");
  embedCode = form.embed;

  step("the hosted page: filled, sent after the proof of work, confirmed from the captured mail");
  const hosted = await context.newPage();
  watch(hosted);
  await hosted.goto(form.url.replace(/^https?:\/\/[^/]+/, base));
  await hosted.getByLabel("Email").fill("gus@example.com");
  await hosted.getByLabel("First name").fill("Gus");
  await hosted.getByLabel("Product news").check();
  await audit(hosted, "hosted form");
  await hosted.setViewportSize({ width: 375, height: 812 });
  const hostedOverflow = await hosted.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(hostedOverflow <= 1, `the hosted form fits a phone (overflow ${hostedOverflow}px)`);
  await audit(hosted, "hosted form, phone");
  // A person takes longer than the minimum fill time (3 s) to fill a form.
  await hosted.waitForTimeout(3_100);
  await hosted.getByRole("button", { name: "Subscribe" }).click();
  await hosted.getByText("Thank you. Please check your inbox.").waitFor();
  const gus = await lookup("gus@example.com");
  assert.equal(gus.subscribed, false, "waits for the confirmation");
  const confirm = await context.newPage();
  watch(confirm);
  await confirm.goto(base + (await confirmationLink("gus@example.com")));
  await confirm.getByRole("button", { name: "Confirm my subscription" }).click();
  await confirm.getByText("Subscription confirmed").waitFor();
  const confirmed = (await api("GET", `/contacts/${gus.id}`)).body;
  const news = (await api("GET", "/topics")).body.find((t) => t.name === "Product news");
  assert.equal(confirmed.subscribed, true);
  assert.equal(confirmed.topics[news.id], true);
  assert.equal(confirmed.data.firstName, "Gus");
  const record = (await api("GET", `/contacts/${gus.id}/consents`)).body.records;
  assert.ok(record.every((r) => r.method === "form" && r.formId === form.id && r.consentText === "Send me product news, once a month"));
  await hosted.close();
  await confirm.close();

  step("embedded on a page of another origin: built by the script, sent with CORS");
  const shop = await context.newPage();
  watch(shop);
  await shop.goto(siteOrigin);
  const embedded = shop.locator(`[data-tidings-form="${form.id}"] form`);
  await embedded.getByLabel("Email").fill("hal@example.com");
  await embedded.getByLabel("First name").fill("Hal");
  await audit(shop, "embedded form");
  await shop.waitForTimeout(3_100);
  await embedded.getByRole("button", { name: "Subscribe" }).click();
  await shop.getByText("Thank you. Please check your inbox.").waitFor();
  const hal = (await api("GET", `/contacts/${(await lookup("hal@example.com")).id}`)).body;
  assert.equal(hal.pending.formId, form.id, "the embedded signup waits for its confirmation too");
  await shop.setViewportSize({ width: 375, height: 812 });
  await audit(shop, "embedded form, phone");
  await shop.close();

  step("a scripted submitter: refused without the proof of work, and from a site not allowed");
  const submit = (body, origin) => fetch(`${base}/f/${form.id}/submit`, {
    method: "POST", headers: { "content-type": "application/json", ...(origin ? { origin } : {}) }, body: JSON.stringify(body),
  });
  const bot = await submit({ email: "bot@example.com", firstName: "Bot" });
  assert.equal(bot.status, 403);
  assert.match((await bot.json()).error.details.reason, /proof of work/);
  const elsewhere = await submit({ email: "bot@example.com", firstName: "Bot" }, "https://evil.example");
  assert.equal(elsewhere.status, 403);
  assert.equal(elsewhere.headers.get("access-control-allow-origin"), null);
  assert.equal((await api("POST", "/contacts/lookup", { emails: ["bot@example.com"] })).body.found, 0);

  step("suppressions: an address added by hand, a CSV file imported, an entry removed");
  await nav(page, "Suppressions");
  // Dee complained (the fixture's report): on the list already, for marketing mail.
  await page.locator('#suppressions-table tr[data-suppression="dee@example.com"]').getByText("marketing mail").waitFor();
  await page.fill("#suppression-form input[name=value]", "Never@Example.com");
  await page.fill("#suppression-form input[name=reason]", "Asked by phone");
  await page.getByRole("button", { name: "Suppress" }).click();
  await toast(page, "never@example.com is suppressed");
  await page.setInputFiles("#suppression-import input[type=file]", {
    name: "list.csv", mimeType: "text/csv", buffer: Buffer.from("email,reason\nold@example.com,bought list\nspam.example,\nnot an address,\n"),
  });
  await page.getByRole("button", { name: "Import" }).click();
  await toast(page, "2 added, 0 listed before, 1 skipped");
  await page.locator("#suppression-import-errors").getByText("Row 3").waitFor();
  await page.locator('#suppressions-table tr[data-suppression="spam.example"]').getByText("all mail").waitFor();
  await audit(page, "suppressions");
  await shot(page, "suppressions");
  await page.locator('#suppressions-table tr[data-suppression="old@example.com"]').getByRole("button").click();
  await toast(page, "old@example.com may get mail again");
  const listed = (await api("GET", "/suppressions")).body.data.map((e) => e.value).sort();
  assert.deepEqual(listed, ["dee@example.com", "never@example.com", "spam.example"]);
  await page.setViewportSize({ width: 375, height: 812 });
  await audit(page, "suppressions, phone");
  await context.close();
});
site.close();
