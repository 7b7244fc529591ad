// Years of data, safely (issue 35) in the dashboard: Settings set how long the project keeps
// each kind of data; a contact's page downloads everything held about the contact and erases
// it at the person's request, leaving its address on the suppression list as a digest. At 1400
// and 375 px with axe. Run by the cargo test `browser::dashboard_in_chromium` after sending.mjs.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { F, api, audit, base, drive, fitsAPhone, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("data", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("every page warns that the data passed 90 % of its disk budget (1 byte, in this test)");
  await nav(page, "Settings");
  await page.waitForSelector('#storage-banner:has-text("of its 1 byte budget")');
  const storage = (await page.request.get(`${base}/server/storage`)).json();
  assert.equal((await storage).warning, true);

  step("settings: the project keeps events for 90 days, the rest as the server says");
  const form = page.locator("#retention-form");
  await form.getByLabel("Events (days)").fill("90");
  await audit(page, "settings, data retention");
  await page.locator("#retention").scrollIntoViewIfNeeded();
  await shot(page, "settings-retention");
  await fitsAPhone(page, "settings, data retention", "settings-retention-375");
  await form.getByRole("button", { name: "Save retention" }).click();
  await toast(page, "Retention saved");
  let kept = (await api("GET", "/retention")).body;
  assert.equal(kept.eventsDays, 90);
  assert.deepEqual(kept.custom, ["eventsDays"]);
  await form.getByLabel("Events (days)").fill("");
  await form.getByRole("button", { name: "Save retention" }).click();
  await page.waitForFunction(() => document.querySelectorAll(".toast").length >= 2);
  kept = (await api("GET", "/retention")).body;
  assert.deepEqual([kept.eventsDays, kept.custom], [kept.defaults.eventsDays, []], "empty goes back to the default");

  step("settings: the whole project exported as a zip");
  await page.click("#export-start");
  await toast(page, "Export ready");
  const [zipped] = await Promise.all([page.waitForEvent("download"), page.click("#export-download")]);
  const zip = await readFile(await zipped.path());
  assert.equal(zip.subarray(0, 2).toString(), "PK", "a zip file");
  await audit(page, "settings, project export");

  step("a contact's data downloaded, then erased at the person's request");
  const email = "gdpr.person@example.com";
  const made = await api("POST", "/contacts", { email, data: { firstName: "Gudrun" } });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  assert.equal((await api("POST", "/events/track", { event: "visited", email })).status, 200);
  await page.goto(`${base}/app/p/${encodeURIComponent(F.projectId)}/contacts/${made.body.id}`);
  await page.waitForSelector(`h1:text-is("${email}")`);
  await audit(page, "contact page with its data actions");
  await fitsAPhone(page, "contact page with its data actions", "contact-data-375");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Export data" }).click(),
  ]);
  const exported = JSON.parse(await readFile(await download.path(), "utf8"));
  assert.equal(exported.contact.email, email);
  assert.equal(exported.contact.data.firstName, "Gudrun");
  assert.ok(exported.events.some((e) => e.name === "visited"), JSON.stringify(exported.events));
  await page.getByRole("button", { name: "Erase (GDPR)" }).click();
  await toast(page, "Contact erased");
  await page.waitForURL(/\/contacts$/);
  assert.equal((await api("GET", `/contacts/${made.body.id}`)).status, 404);
  const listed = (await api("GET", "/suppressions")).body;
  const entries = listed.data || listed.suppressions || listed;
  assert.ok(entries.some((s) => s.type === "erased" && !s.value.includes("gdpr")), JSON.stringify(listed));
  await context.close();
});
