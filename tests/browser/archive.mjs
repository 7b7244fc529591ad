// The campaign archive and web version (issue 32, items 8 and 9): the Public pages page gives the
// archive its address; a campaign that went out is published from its page, with a fill-in for
// the archived copy; then a reader reads the archive (in English and in German), opens the
// campaign there rendered for no one, finds the feed, and a recipient opens the web version from
// the mail (read from the capture outbox). At 1400 and 375 px with axe. Run by the cargo test
// `browser::dashboard_in_chromium` after branding.mjs; it deletes what it made, for dashboard.mjs.

import assert from "node:assert/strict";
import { F, api, audit, base, drive, fitsAPhone, linkInMail, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

const BODY = `<!doctype html><html lang="en"><head><title>November news</title></head><body>
  <h1>November news</h1><p>Hello {{ firstName | default: "there" }}, here is what is new.</p>
  <p><a href="{{ viewInBrowserUrl }}">View in your browser</a></p>
  <script>document.title = "a script ran"</script></body></html>`;

await drive("archive", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("public pages: the archive's address");
  await nav(page, "Public pages");
  await page.fill("#branding-slug", "acme-news");
  await page.getByRole("button", { name: "Save the address" }).click();
  await toast(page, "Archive address saved");
  await page.waitForSelector(`#archive-url:text("${base}/archive/acme-news")`);

  step("a campaign goes out, and its page publishes it with a fill-in");
  const email = "ivy@example.com";
  await api("POST", "/contacts", { email, subscribed: true, data: { firstName: "Ivy" } });
  const made = await api("POST", "/campaigns", {
    name: "November news", subject: "News for {{ firstName | default: \"you\" }}", body: BODY,
    from: "hello@example.test", audienceType: "FILTERED",
    audienceCondition: { groups: [{ filters: [{ field: "email", operator: "equals", value: email }] }] },
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const id = made.body.data.id;
  const sent = await api("POST", `/campaigns/${id}/send`, {});
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  for (let i = 0; i < 300 && (await api("GET", `/campaigns/${id}`)).body.status !== "SENT"; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.goto(`${base}/app/p/${encodeURIComponent(F.projectId)}/campaigns/${encodeURIComponent(id)}`);
  await page.waitForSelector("#results[data-status=SENT]");
  // The fixture captures mail: the results say that nobody received it.
  await page.waitForSelector("#captured-notice");
  await page.check("#campaign-public");
  await page.fill('[data-fill-name="0"]', "firstName");
  await page.fill('[data-fill-value="0"]', "reader");
  await page.getByRole("button", { name: "Save", exact: true }).click();
  await toast(page, "Listed in the archive");
  const saved = (await api("GET", `/campaigns/${id}`)).body;
  assert.deepEqual([saved.public, saved.archiveData], [true, { firstName: "reader" }]);
  const link = page.locator("#campaign-archive-link");
  assert.equal(await link.getAttribute("href"), `${base}/archive/acme-news/${id}`);
  await audit(page, "campaign page with its archive panel");
  await page.locator("#campaign-archive").scrollIntoViewIfNeeded();
  await shot(page, "campaign-archive");
  await fitsAPhone(page, "campaign page");

  step("a reader reads the archive");
  const reader = await context.newPage();
  watch(reader);
  await reader.goto(`${base}/archive/acme-news`);
  await reader.getByRole("heading", { name: "Archive" }).waitFor();
  const entry = reader.getByRole("link", { name: "News for reader" });
  await entry.waitFor();
  await audit(reader, "archive");
  await shot(reader, "archive");
  await fitsAPhone(reader, "archive");

  step("the feed is found from the archive and lists the campaign");
  const feedHref = await reader.getAttribute('link[rel="alternate"][type="application/atom+xml"]', "href");
  const feed = await fetch(new URL(feedHref, base));
  assert.equal(feed.headers.get("content-type"), "application/atom+xml");
  const xml = await feed.text();
  assert.match(xml, /<title[^>]*>News for reader<\/title>/);
  assert.ok(xml.includes(`urn:uuid:${id}`), xml);

  step("the campaign in the archive: rendered for no one, its script never runs");
  await entry.click();
  await reader.waitForURL(`${base}/archive/acme-news/${id}`);
  await reader.getByText("Hello reader, here is what is new.").waitFor();
  assert.equal(await reader.title(), "November news", "the campaign's script did not run");
  assert.ok(!(await reader.content()).includes(email), "no address in the archived copy");

  step("the archive in German, from the browser's language");
  const german = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: "de-DE" });
  const leser = await german.newPage();
  watch(leser);
  await leser.goto(`${base}/archive/acme-news`);
  await leser.getByRole("heading", { name: "Archiv" }).waitFor();
  assert.equal(await leser.getAttribute("html", "lang"), "de");
  await leser.getByRole("link", { name: "In einem Feedreader abonnieren" }).waitFor();
  await audit(leser, "archive, de");
  await german.close();

  step("the web version, from the recipient's mail: their own copy, without tracking");
  const path = await linkInMail(email, (s) => s === "News for Ivy", /href="([^"]*\/c\/[^"]+)"/);
  await reader.goto(base + path);
  await reader.getByText("Hello Ivy, here is what is new.").waitFor();
  const html = await reader.content();
  assert.ok(!html.includes("/t/o/") && !html.includes("/t/c/"), "no tracking in the web version");

  // dashboard.mjs, next, starts from a project that has sent no campaign.
  assert.equal((await api("DELETE", `/campaigns/${id}`)).status, 204);
  const ivy = (await api("POST", "/contacts/lookup", { emails: [email] })).body.data[0];
  assert.equal((await api("DELETE", `/contacts/${ivy.id}`)).status, 204);
  await context.close();
});
