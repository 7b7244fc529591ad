// Sending well (issue 34) in the dashboard: a sent campaign's results put people's opens and
// clicks first, with machines' beside them; its Follow up panel counts who missed it and makes
// the follow-up, whose audience the condition builder shows as a campaign filter with "Count
// machines' too". Settings set the project's time zone and quiet hours, and a campaign is
// scheduled at a time in each contact's zone. A campaign gets an A/B test on its page, and the
// winner is picked by hand from the variants' results. The sender domain gets a warm-up plan on
// the Domains page. At 1400 and 375 px with axe. Run by the cargo test
// `browser::dashboard_in_chromium` after archive.mjs; it deletes what it made.

import assert from "node:assert/strict";
import { F, api, audit, base, drive, fitsAPhone, lookup, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("sending", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("a campaign goes out to two contacts");
  const emails = ["kim@example.com", "lee@example.com"];
  for (const email of emails) assert.equal((await api("POST", "/contacts", { email, subscribed: true })).status, 200);
  const made = await api("POST", "/campaigns", {
    name: "Spring sale", subject: "Spring sale", body: "<p>Hello</p>", from: "hello@example.test", audienceType: "FILTERED",
    audienceCondition: { logic: "OR", groups: emails.map((value) => ({ filters: [{ field: "email", operator: "equals", value }] })) },
  });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  const id = made.body.data.id;
  assert.equal((await api("POST", `/campaigns/${id}/send`, {})).status, 200);
  for (let i = 0; i < 300 && (await api("GET", `/campaigns/${id}`)).body.status !== "SENT"; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const projectBase = `${base}/app/p/${encodeURIComponent(F.projectId)}`;
  await page.goto(`${projectBase}/campaigns/${encodeURIComponent(id)}`);
  await page.waitForSelector("#results[data-status=SENT]");
  await page.waitForSelector('#campaign-stats dt:text-is("Opened by people")');
  await page.waitForSelector('[data-stat="opened"]:has-text("with machines")');

  step("the follow-up panel counts who missed it and makes a draft");
  await page.waitForSelector('#follow-up-count:text("2 so far")');
  await page.selectOption("#follow-up-audience", "notClicked");
  await page.waitForSelector('#follow-up-count:text("2 so far")');
  await page.fill("#follow-up-subject", "Last days of the spring sale");
  await page.locator('input[name="follow-up-when"]').nth(1).check();
  assert.equal(await page.locator("#follow-up-delay").isDisabled(), true, "a draft has no delay");
  await audit(page, "campaign page with its follow-up panel");
  await page.locator("#follow-up").scrollIntoViewIfNeeded();
  await shot(page, "campaign-follow-up");
  await fitsAPhone(page, "campaign follow-up", "campaign-follow-up-375");
  await page.click("#follow-up-create");
  await toast(page, "Created Spring sale (follow-up)");
  await page.waitForSelector('h1:text-is("Spring sale (follow-up)")');
  const follow = (await api("GET", "/campaigns?search=follow-up")).body.data.find((c) => c.name === "Spring sale (follow-up)");
  assert.equal(follow.subject, "Last days of the spring sale");
  assert.deepEqual(follow.audienceCondition.groups[0].filters[0], { field: `campaign.${id}`, operator: "notClicked" });

  step("the follow-up's audience is a campaign filter in the condition builder");
  const campaignSelect = page.getByRole("combobox", { name: "Campaign", exact: true });
  await campaignSelect.waitFor();
  assert.equal(await campaignSelect.inputValue(), `campaign.${id}`);
  const machines = page.getByRole("checkbox", { name: "Count machines' too" });
  assert.equal(await machines.isChecked(), false, "people's clicks only, unless asked");
  await machines.check();
  await audit(page, "a follow-up's audience in the condition builder");
  await shot(page, "follow-up-audience");
  await fitsAPhone(page, "follow-up audience", "follow-up-audience-375");

  step("sending times in Settings: the project's zone, quiet hours and days");
  await page.goto(`${projectBase}/settings`);
  await page.waitForSelector("#windows-form");
  await page.fill("#windows-timezone", "Europe/Berlin");
  await page.check("#windows-quiet-on");
  await page.fill("#windows-quiet-start", "21:30");
  await page.fill("#windows-quiet-end", "07:45");
  await page.getByRole("checkbox", { name: "Sunday" }).check();
  await page.getByRole("button", { name: "Save sending times" }).click();
  await toast(page, "Sending times saved");
  assert.deepEqual((await api("GET", "/sending-settings")).body,
    { timezone: "Europe/Berlin", quietHours: { start: "21:30", end: "07:45" }, quietDays: ["sunday"] });
  await audit(page, "settings with sending times");
  await page.locator("#delivery-windows").scrollIntoViewIfNeeded();
  await shot(page, "sending-times");
  await fitsAPhone(page, "settings with sending times", "sending-times-375");
  // Back as it was, for the scripts after this one.
  assert.equal((await api("PATCH", "/sending-settings", { timezone: "UTC", quietHours: null, quietDays: [] })).status, 200);

  step("a campaign scheduled at 09:00 in each contact's time zone");
  const draft = await api("POST", "/campaigns", {
    name: "Morning news", subject: "Good morning", body: "<p>Hello</p>", from: "hello@example.test", audienceType: "FILTERED",
    audienceCondition: { groups: [{ filters: [{ field: "email", operator: "equals", value: emails[0] }] }] },
  });
  assert.equal(draft.status, 200, JSON.stringify(draft.body));
  const morning = draft.body.data.id;
  await page.goto(`${projectBase}/campaigns/${encodeURIComponent(morning)}`);
  await page.waitForSelector("#send-panel");
  await page.check("#schedule-local");
  await page.fill("#schedule-at", "2030-06-03T09:00");
  await page.getByRole("button", { name: "Schedule", exact: true }).click();
  await toast(page, "in each contact's time zone");
  await page.waitForSelector(`#send-panel :text("2030-06-03 09:00 in each contact's time zone")`);
  const scheduled = (await api("GET", `/campaigns/${morning}`)).body;
  assert.equal(scheduled.localTime, "2030-06-03T09:00:00");
  assert.equal(scheduled.scheduledFor, "2030-06-02T19:00:00.000Z", "first where 09:00 comes first (UTC+14)");
  await audit(page, "a campaign scheduled in each contact's zone");
  assert.equal((await api("POST", `/campaigns/${morning}/cancel`, {})).status, 200);
  assert.equal((await api("DELETE", `/campaigns/${morning}`)).status, 204);

  step("a tracking domain on the Domains page, and a campaign that tracks no clicks");
  await page.goto(`${projectBase}/domains`);
  await page.fill("#tracking-input", "track.example.test");
  await page.getByRole("button", { name: "Set tracking domain" }).click();
  await toast(page, "track.example.test set");
  await page.waitForSelector('#tracking-domain tr[data-type="A"]'); // the fixture's server is known by its address
  await page.getByRole("button", { name: "Verify now" }).last().click();
  await toast(page, "is not verified yet");
  await audit(page, "domains with a tracking domain");
  await page.locator("#tracking-domain").scrollIntoViewIfNeeded();
  await shot(page, "tracking-domain");
  await fitsAPhone(page, "tracking domain", "tracking-domain-375");
  await page.getByRole("button", { name: "Remove", exact: true }).click();
  await toast(page, "Tracking domain removed");
  assert.equal((await api("GET", "/tracking-domain")).status, 404);
  await page.goto(`${projectBase}/campaigns/new`);
  await page.waitForSelector("#campaign-track-links");
  assert.equal(await page.isChecked("#campaign-track-links"), true, "tracked unless unticked");

  step("an A/B test: two subjects set on the campaign page, then the winner picked by hand");
  const tested = await api("POST", "/campaigns", {
    name: "Two subjects", subject: "Our news", body: "<p>Hello</p>", from: "hello@example.test", audienceType: "FILTERED",
    audienceCondition: { logic: "OR", groups: emails.map((value) => ({ filters: [{ field: "email", operator: "equals", value }] })) },
  });
  assert.equal(tested.status, 200, JSON.stringify(tested.body));
  const ab = tested.body.data.id;
  await page.goto(`${projectBase}/campaigns/${encodeURIComponent(ab)}`);
  await page.click("#ab-start");
  await page.getByRole("textbox", { name: "Subject of B" }).fill("News you asked for");
  await page.fill("#ab-share", "100");
  await page.fill("#ab-wait", "1");
  await page.selectOption("#ab-pick", "manual");
  await audit(page, "a campaign's A/B test settings");
  await page.locator("#ab-test").scrollIntoViewIfNeeded();
  await shot(page, "ab-test-settings");
  await fitsAPhone(page, "A/B test settings", "ab-test-settings-375");
  await page.click("#ab-save");
  await toast(page, "A/B test saved");
  const set = (await api("GET", `/campaigns/${ab}/ab-test`)).body;
  assert.deepEqual([set.testShare, set.waitHours, set.pick, set.metric, set.variants[1].subject],
    [100, 1, "manual", "humanClicks", "News you asked for"]);
  assert.equal((await api("POST", `/campaigns/${ab}/send`, {})).status, 200);
  for (let i = 0; i < 300; i++) {
    const t = (await api("GET", `/campaigns/${ab}/ab-test`)).body;
    if (t.decideAt && t.variants.reduce((n, v) => n + v.results.sent, 0) === 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.reload();
  await page.waitForSelector("#ab-results [data-pick=B]");
  await page.waitForSelector('#ab-phase:text("The wait ends")');
  await audit(page, "a campaign's A/B test results");
  await page.locator("#ab-test").scrollIntoViewIfNeeded();
  await shot(page, "ab-test-results");
  await fitsAPhone(page, "A/B test results", "ab-test-results-375");
  await page.click("#ab-results [data-pick=B]");
  await toast(page, "Variant B goes to the rest");
  await page.waitForSelector('#ab-results tr[data-variant=B] :text("Winner")');
  const decided = (await api("GET", `/campaigns/${ab}/ab-test`)).body;
  assert.deepEqual([decided.phase, decided.winner, decided.decidedBy], ["DECIDED", 1, "hand"]);
  for (let i = 0; i < 300 && (await api("GET", `/campaigns/${ab}`)).body.status !== "SENT"; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }

  step("a warm-up plan for the sender domain on the Domains page");
  await page.goto(`${projectBase}/domains`);
  const warmup = page.locator('[data-warmup="example.test"]');
  await warmup.getByRole("button", { name: "Warm up example.test" }).click();
  await warmup.getByLabel("First day's volume").fill("100");
  await warmup.getByLabel("Last day's volume").fill("1000");
  await warmup.getByLabel("Days").fill("10");
  await warmup.getByRole("button", { name: "Start the warm-up" }).click();
  await toast(page, "example.test warms up over 10 days");
  await warmup.locator("tr[aria-current=date]").waitFor();
  assert.equal(await warmup.locator("tbody tr").count(), 10);
  await warmup.locator(':text("of 100 sent")').waitFor();
  const domains = (await api("GET", `/domains/project/${F.projectId}`)).body;
  const domainId = domains.find((d) => d.domain === "example.test").id;
  const plan = (await api("GET", `/domains/${domainId}/warmup`)).body;
  assert.deepEqual([plan.startDaily, plan.targetDaily, plan.days, plan.schedule[9].volume], [100, 1000, 10, 1000]);
  await audit(page, "domains with a warm-up");
  await warmup.scrollIntoViewIfNeeded();
  await shot(page, "domain-warmup");
  await fitsAPhone(page, "domain warm-up", "domain-warmup-375");
  // Ended, for the scripts after this one (they send marketing mail from example.test).
  await warmup.getByRole("button", { name: "End the warm-up" }).click();
  await toast(page, "example.test sends at any volume again");
  assert.equal((await api("GET", `/domains/${domainId}/warmup`)).status, 404);

  step("clean up");
  for (const c of [follow.id, id, ab]) assert.equal((await api("DELETE", `/campaigns/${c}`)).status, 204);
  for (const email of emails) {
    const contact = await lookup(email);
    assert.equal((await api("DELETE", `/contacts/${contact.id}`)).status, 204);
  }
  await context.close();
});
