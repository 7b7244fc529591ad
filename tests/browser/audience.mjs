// Growing an audience with consent (issue 32): topics made and edited on their page, a contact's
// topics switched and its marketing mail paused on its page, a campaign sent to a topic, and a
// double opt-in confirmed from the captured mail with its consent record shown, at 1400 and
// 375 px with axe. Run
// by the cargo test `browser::dashboard_in_chromium` before dashboard.mjs.

import assert from "node:assert/strict";
import { F, api, audit, base, drive, fitsAPhone, lookup, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("audience", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);
  const project = `${base}/app/p/${encodeURIComponent(F.projectId)}`;

  step("topics: none yet, one added with contacts subscribed until they choose, then edited");
  await nav(page, "Topics");
  await page.waitForSelector("text=No topics yet");
  await audit(page, "topics, empty");
  await page.fill("#topic-form input[name=name]", "Product news");
  await page.fill("#topic-form input[name=description]", "New features, once a month");
  await page.check("#topic-form input[name=defaultOptIn]");
  await page.getByRole("button", { name: "Add topic" }).click();
  await toast(page, "Topic Product news added");
  const row = page.locator('#topics-table tr[data-topic="Product news"]');
  await row.getByText("subscribed", { exact: true }).waitFor();
  const topics = (await api("GET", "/topics")).body;
  assert.deepEqual(topics.map((t) => [t.name, t.defaultOptIn, t.public]), [["Product news", true, true]]);
  const news = topics[0];
  await row.getByRole("button", { name: "Edit" }).click();
  await row.locator("input[name=description]").fill("What is new, monthly");
  await row.getByRole("button", { name: "Save topic" }).click();
  await toast(page, "Topic saved");
  await row.getByText("What is new, monthly").waitFor();
  assert.equal((await api("GET", "/topics")).body[0].description, "What is new, monthly");
  await audit(page, "topics");
  await shot(page, "topics");
  await fitsAPhone(page, "topics");

  step("a contact's topics: subscribed by the default, switched off on its page");
  const ada = await lookup("ada@example.com");
  await page.goto(`${project}/contacts/${ada.id}`);
  const box = page.locator('#contact-topics input[data-contact-topic="Product news"]');
  await box.waitFor();
  assert.equal(await box.isChecked(), true, "the topic's default");
  // The switch shows the saved state: it turns off once the server has the choice.
  await box.click();
  await toast(page, "Unsubscribed from Product news");
  await page.waitForFunction(() => !document.querySelector('#contact-topics input[data-contact-topic="Product news"]').checked);
  const read = (await api("GET", `/contacts/${ada.id}`)).body;
  assert.equal(read.topics[news.id], false);
  // Marketing mail paused for a month from the same card, then resumed.
  await page.locator("#contact-pause").getByRole("button", { name: "Pause for 30 days" }).click();
  await toast(page, "Marketing email paused for 30 days");
  await page.locator("#contact-pause").getByText("Marketing email paused until").waitFor();
  const paused = (await api("GET", `/contacts/${ada.id}`)).body.snoozedUntil;
  assert.ok(new Date(paused) - Date.now() > 29 * 86_400_000, `paused for a month: ${paused}`);
  await audit(page, "contact with topics");
  await page.locator("#contact-pause").getByRole("button", { name: "Resume now" }).click();
  await toast(page, "Marketing email resumed");
  assert.equal((await api("GET", `/contacts/${ada.id}`)).body.snoozedUntil, null);
  await page.setViewportSize({ width: 375, height: 812 });
  await audit(page, "contact with topics, phone");
  await page.setViewportSize({ width: 1400, height: 900 });

  step("a campaign to a topic: the topic chosen, the count without the contacts who left it");
  await page.goto(`${project}/campaigns/new`);
  const select = page.locator("#campaign-topic");
  await select.waitFor();
  const counted = async () => {
    await page.waitForFunction(() => /^\d+$/.test(document.querySelector("#recipient-count")?.textContent || ""));
    return Number(await page.locator("#recipient-count").innerText());
  };
  const everyone = await counted();
  await select.selectOption({ label: "Product news" });
  await page.waitForFunction((before) => {
    const text = document.querySelector("#recipient-count")?.textContent;
    return text && text !== "…" && Number(text) < before;
  }, everyone);
  const expected = (await api("POST", "/campaigns/count", { audienceType: "ALL", topicId: news.id })).body.count;
  assert.equal(await counted(), expected);
  await audit(page, "campaign with a topic");

  step("a condition on a topic: offered by the builder as a true/false field");
  await select.selectOption({ value: "" });
  await page.getByLabel("Contacts matching a condition").check();
  const field = page.getByRole("group", { name: "Condition, group 1, filter 1" });
  await field.getByRole("combobox", { name: "Field" }).fill(`topic.${news.id}`);
  // The row's selects: the test, the operator, and the value (true or false for a topic).
  await field.locator("select").nth(2).selectOption("false");
  const condition = { groups: [{ filters: [{ field: `topic.${news.id}`, operator: "equals", value: false }] }] };
  const left = (await api("POST", "/campaigns/count", { audienceType: "FILTERED", audienceCondition: condition })).body.count;
  assert.equal(left, 1, "ada left the topic");
  await page.waitForFunction((n) => document.querySelector("#recipient-count")?.textContent === String(n), left);
  const offered = await page.locator(`#condition-fields option[value="topic.${news.id}"]`).getAttribute("label");
  assert.equal(offered, "Topic: Product news");
  await audit(page, "a condition on a topic");

  step("double opt-in: the setting saved, a subscriber confirms from the captured mail, the consent record shown");
  await nav(page, "Topics");
  await page.check("#consent-form input[name=doubleOptIn]");
  await page.getByRole("button", { name: "Save consent settings" }).click();
  await toast(page, "Consent settings saved");
  assert.equal((await api("GET", "/audience-settings")).body.doubleOptIn, true);
  await audit(page, "topics with consent settings");
  const asked = await api("POST", "/contacts", { email: "fay@example.com", confirm: true, consent: { text: "Monthly product news" } });
  assert.equal(asked.body.subscribed, false, "waiting for confirmation");
  await page.goto(`${project}/contacts/${asked.body.id}`);
  await page.locator("#consent-pending").getByText("waiting for confirmation").waitFor();
  let captured;
  for (let i = 0; i < 100 && !captured; i++) {
    const list = (await api("GET", "/outbox?limit=20")).body.data;
    captured = list.find((m) => m.to.includes("fay@example.com") && m.subject.startsWith("Confirm your subscription"));
    if (!captured) await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(captured, "the confirmation mail was captured");
  const mail = (await api("GET", `/outbox/${captured.id}`)).body;
  const link = mail.html.match(/href="([^"]*\/confirm\/[^"]+)"/)[1];
  const confirmPage = await context.newPage();
  watch(confirmPage);
  await confirmPage.goto(`${base}${new URL(link).pathname}`);
  await confirmPage.getByRole("button", { name: "Confirm my subscription" }).waitFor();
  await audit(confirmPage, "confirmation page");
  assert.equal((await api("GET", `/contacts/${asked.body.id}`)).body.subscribed, false, "opening the page confirms nothing");
  await confirmPage.getByRole("button", { name: "Confirm my subscription" }).click();
  await confirmPage.getByText("Subscription confirmed").waitFor();
  await confirmPage.close();
  assert.equal((await api("GET", `/contacts/${asked.body.id}`)).body.subscribed, true);
  await page.reload();
  const grant = page.locator("#consent-table tbody tr").first();
  await grant.getByText("Monthly product news").waitFor();
  await grant.getByText("Marketing email").waitFor();
  await audit(page, "contact with its consent record");
  await shot(page, "consent");
  await page.setViewportSize({ width: 375, height: 812 });
  await audit(page, "contact with its consent record, phone");
  await page.setViewportSize({ width: 1400, height: 900 });
  await context.close();
});
