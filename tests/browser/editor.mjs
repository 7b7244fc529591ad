// The mail editor (issue 33, item 2): a template begun from a starter layout in the visual block
// editor, test-sent as a chosen contact; the code editor's colours and a Liquid error shown with
// its line, column, text and hint; the preview at a desktop's and a phone's width and in dark
// mode; then a campaign built in the block editor only, test-sent as a contact, sent, its
// captured mail opened (by a privacy proxy, then a reader) and clicked, and its report read
// (item 3): link clicks, people apart from machines, recipient statuses, the CSV. At 1400 and
// 375 px with axe. Run by
// the cargo test `browser::dashboard_in_chromium` after archive.mjs; it deletes what it made,
// for dashboard.mjs.

import assert from "node:assert/strict";
import { F, api, audit, base, drive, fitsAPhone, lookup, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

/** The newest captured mail to `to` whose subject `subject` accepts, with its HTML. */
async function mailTo(to, subject) {
  for (let i = 0; i < 200; i++) {
    const mail = (await api("GET", "/outbox?limit=30")).body.data.find((m) => m.to.includes(to) && subject(m.subject));
    if (mail) return (await api("GET", `/outbox/${mail.id}`)).body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no mail to ${to}`);
}

/** Sends a test of the page's template or campaign to boss@example.com, rendered as `contact`. */
async function testSendAs(page, contact) {
  await page.fill("#test-email", "boss@example.com");
  await page.fill("#test-contact-search", contact.email.split("@")[0] + "@");
  await page.locator(`#test-contact option[value="${contact.id}"]`).waitFor({ state: "attached" });
  await page.selectOption("#test-contact", contact.id);
  await page.getByRole("button", { name: "Send test" }).click();
  await toast(page, "Test sent to boss@example.com");
}

await drive("editor", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);
  const uma = (await api("POST", "/contacts", { email: "uma@example.com", subscribed: true, data: { firstName: "Uma" } })).body;

  step("templates: a new template from the newsletter starter, in blocks");
  await nav(page, "Templates");
  await page.getByRole("link", { name: "New template" }).click();
  await page.waitForSelector("#starters-heading");
  await page.click("[data-starter=newsletter]");
  await page.waitForSelector("#block-editor li[data-block=columns]");
  assert.equal(await page.isChecked("input[name=body-format][value=blocks]"), true);
  await page.getByLabel("From address").fill("hello@example.test");
  await page.waitForSelector("#preview-subject:text-is('What is new this month')");
  assert.match(await page.getAttribute("#preview-frame", "srcdoc"), /This month at Acme/);
  await audit(page, "template editor with blocks");
  await shot(page, "template-blocks");
  await fitsAPhone(page, "template editor with blocks");
  await page.getByRole("button", { name: "Create template" }).click();
  await toast(page, "Template saved");
  const templateId = page.url().split("/").pop();
  const template = (await api("GET", `/templates/${templateId}`)).body;
  assert.equal(template.format, "blocks");
  assert.equal(JSON.parse(template.body).blocks.length, 7);

  step("templates: a test send rendered as a chosen contact");
  await testSendAs(page, uma);
  const test = await mailTo("boss@example.com", (s) => s === "[Test] What is new this month");
  assert.match(test.html, /Hi Uma, here is what we shipped/);

  step("templates: the preview as a phone and in dark mode");
  await page.getByRole("tab", { name: "Mobile" }).click();
  const width = await page.$eval("#preview-frame", (f) => f.getBoundingClientRect().width);
  assert.ok(width <= 376, `a phone's width: ${width}`);
  await page.getByRole("tab", { name: "Dark mode" }).click();
  assert.match(await page.getAttribute("#preview-frame", "srcdoc"), /invert\(1\)/);
  await audit(page, "template preview, dark");

  step("templates: the code editor colours Liquid and places an error");
  await nav(page, "Templates");
  await page.getByRole("link", { name: "New template" }).click();
  await page.check("input[name=body-format][value=html]");
  await page.getByLabel("Subject").fill("Hello");
  await page.getByLabel("Body (HTML with Liquid)").fill("<p>Hello {{ firstName }}</p>\n<p>{% iff plan %}pro{% endif %}</p>");
  await page.waitForSelector(".code-copy .hl-liquid:text-is('{{ firstName }}')");
  await page.waitForSelector(".code-copy .hl-tag:text-is('<p')");
  const error = await page.waitForSelector("#preview-heading ~ .error");
  const said = await error.textContent();
  assert.match(said, /Line 2, column 4/);
  assert.match(said, /\{% iff plan %\}/);
  assert.match(said, /Did you mean `\{% if %\}`\?/);
  await audit(page, "template editor with a Liquid error");
  await shot(page, "template-liquid-error");

  step("campaigns: built in the block editor only");
  await nav(page, "Campaigns");
  await page.getByRole("link", { name: "New campaign" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Spring offer");
  await page.getByLabel("From address").fill("hello@example.test");
  await page.getByLabel("Subject", { exact: true }).fill("Spring, {{ firstName ?? \"friend\" }}");
  await page.fill("#mail-0-text", "Hello {{ firstName ?? \"there\" }}");
  const text = page.locator("#mail-1-html");
  await text.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.type("Our spring offer is here. ");
  await page.getByRole("button", { name: "Bold" }).first().click();
  await page.keyboard.type("Half price");
  await page.selectOption("#add-mail", "button");
  await page.getByRole("button", { name: "Add", exact: true }).first().click();
  await page.fill("#mail-3-label", "See the offer");
  await page.fill("#mail-3-href", "https://example.org/offer");
  await page.getByRole("button", { name: "Move block 4 up" }).click();
  await page.getByLabel("Contacts matching a condition").check();
  const only = page.getByRole("group", { name: "Condition, group 1, filter 1" });
  await only.getByLabel("Field", { exact: true }).fill("email");
  await only.getByLabel(/^Operator/).selectOption("equals");
  await only.getByLabel("Value", { exact: true }).fill("uma@example.com");
  await page.waitForSelector("#recipient-count:text-is('1')");
  await page.waitForFunction(() => /Half price<\/b>/.test(document.querySelector("#preview-frame")?.getAttribute("srcdoc") || ""));
  await audit(page, "campaign editor with blocks");
  await shot(page, "campaign-blocks");
  await fitsAPhone(page, "campaign editor with blocks");
  await page.getByRole("button", { name: "Create campaign" }).click();
  await page.waitForSelector("#send-panel");
  const campaignId = page.url().split("/").pop();
  const made = (await api("GET", `/campaigns/${campaignId}`)).body;
  assert.equal(made.format, "blocks");
  assert.deepEqual(JSON.parse(made.body).blocks.map((b) => b.type), ["heading", "text", "button", "footer"]);

  step("campaigns: a test send as the contact, then the send");
  await testSendAs(page, uma);
  const campaignTest = await mailTo("boss@example.com", (s) => s === "[Test] Spring, Uma");
  assert.match(campaignTest.html, /Hello Uma/);
  await page.getByRole("button", { name: "Send now to 1 contacts" }).click();
  await page.waitForSelector("#results[data-status=SENT]");

  step("campaigns: the captured mail opened and clicked");
  const mail = await mailTo("uma@example.com", (s) => s === "Spring, Uma");
  assert.match(mail.html, /<b>Half price<\/b>/);
  const open = mail.html.match(/src="([^"]+\/t\/o\/[^"]+)"/)[1];
  const click = mail.html.match(/href="([^"]+\/t\/c\/[^"]+)"/)[1];
  const browserish = { "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120 Safari/537.36" };
  // Apple's privacy proxy loads the pixel on delivery: a machine's open, counted apart.
  assert.equal((await fetch(open, { headers: { "user-agent": "Mozilla/5.0" } })).status, 200);
  assert.equal((await fetch(open, { headers: browserish })).status, 200);
  // A click within seconds of the send is a link scanner's; a reader takes longer.
  await new Promise((r) => setTimeout(r, 5500));
  const clicked = await fetch(click, { headers: browserish, redirect: "manual" });
  assert.equal(clicked.headers.get("location"), "https://example.org/offer");
  for (let i = 0; i < 100 && (await api("GET", `/campaigns/${campaignId}`)).body.clickedCount < 1; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const figures = (await api("GET", `/campaigns/${campaignId}`)).body;
  assert.deepEqual([figures.openedCount, figures.clickedCount], [1, 1]);
  await page.reload();
  await page.waitForSelector("#results[data-status=SENT]");

  step("campaigns: the report: link clicks, people apart from machines, recipients, the CSV");
  const offer = page.locator('#report-links tr[data-link="https://example.org/offer"]');
  assert.equal(await offer.locator("[data-col=clicks]").textContent(), "1");
  assert.match(await page.textContent("#report-people"), /Opened by 1 person and clicked by 1/);
  await page.waitForSelector("#report-providers tr[data-provider='example.com']");
  await page.waitForSelector("#recipients-table tr[data-recipient='uma@example.com'] .badge:text('clicked')");
  await page.selectOption("#recipient-status", "bounced");
  await page.waitForSelector("#recipients-total:text('0 recipients')");
  await page.selectOption("#recipient-status", "clicked");
  await page.waitForSelector("#recipients-total:text('1 recipient')");
  const downloading = page.waitForEvent("download");
  await page.click("#recipients-export");
  const csv = await (await downloading).createReadStream().then(async (stream) => {
    let text = "";
    for await (const chunk of stream) text += chunk;
    return text;
  });
  const [header, row, ...rest] = csv.trim().split("\n");
  assert.equal(header, "email,status,sentAt,openedAt,clickedAt,bounceType,unsubscribedAt,error,contactId");
  assert.match(row, /^uma@example\.com,clicked,/);
  assert.equal(rest.length, 0, csv);
  await audit(page, "campaign report");
  await page.locator("#campaign-report").scrollIntoViewIfNeeded();
  await shot(page, "campaign-report");
  await fitsAPhone(page, "campaign report");

  step("campaigns: the list reads the subject as a reader would, not as Liquid");
  await nav(page, "Campaigns");
  const listed = page.locator('#campaigns-table tr[data-campaign="Spring offer"] .meta');
  assert.equal(await listed.textContent(), "Spring, friend");
  assert.equal(await listed.getAttribute("title"), "Spring, {{ firstName ?? \"friend\" }}");

  step("clean up, for dashboard.mjs");
  assert.equal((await api("DELETE", `/campaigns/${campaignId}`)).status, 204);
  assert.equal((await api("DELETE", `/templates/${templateId}`)).status, 204);
  assert.equal((await api("DELETE", `/contacts/${uma.id}`)).status, 204);
  assert.equal((await lookup("uma@example.com")).exists, false);
  await context.close();
});
