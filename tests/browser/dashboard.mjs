// Works every page of the dashboard in headless Chromium, the way a new user would, and checks
// each result through the API; axe-core checks every page for accessibility (serious and
// critical violations fail). Run by the cargo test `browser::dashboard_in_chromium`, which
// seeds the project and passes the server's URL and a FIXTURE (JSON) of ids, keys and accounts.
//
// With SCREENSHOTS=<dir> it also saves the pictures the README shows.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const base = process.argv[2];
const F = JSON.parse(process.env.FIXTURE);
const shots = process.env.SCREENSHOTS;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let secretKey = F.secretKey;

/** The API, as an app calls it. */
async function api(method, path, body, key = secretKey) {
  const headers = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

async function lookup(email) {
  const { body } = await api("POST", "/contacts/lookup", { emails: [email] });
  return body.data[0];
}

const violations = [];
/** Runs axe-core on the page as it is now; keeps serious and critical violations. */
async function audit(page, name) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
    violations.push(`${name}: ${v.id} (${v.impact}) ${v.help}\n    ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("\n    ")}`);
  }
}

async function shot(page, name) {
  if (!shots) return;
  await page.addStyleTag({ content: ".toasts { display: none !important; }" });
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
  await page.addStyleTag({ content: ".toasts { display: flex !important; }" });
}

let current = "start";
function step(name) {
  current = name;
  console.log(`- ${name}`);
}

async function nav(page, label) {
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: label, exact: true }).click();
  await page.waitForSelector(`h1:text-is("${label}")`);
}

/** Signs in on the sign-in page and opens the project Acme. */
async function signInToAcme(page, email) {
  await page.goto(`${base}/login`);
  await page.fill("#email", email);
  await page.fill("#password", F.password);
  await page.click("#auth-form button[type=submit]");
  await page.getByRole("link", { name: "Acme" }).click();
  await page.waitForSelector('#contacts-table tr[data-contact="ada@example.com"]');
}

const toast = (page, text) => page.waitForSelector(`.toast:has-text("${text}")`);

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const errors = [];
const watch = (page) => {
  page.on("pageerror", (e) => errors.push(`${current}: ${e.message}`));
  page.on("dialog", (d) => d.accept());
};

try {
  // ---------------------------------------------------------------------------------------
  step("sign up, create a project, see its keys");
  {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    watch(page);
    await page.goto(`${base}/`);
    await page.waitForSelector("h1:text('Sign in')");
    assert.equal(new URL(page.url()).pathname, "/login");
    await audit(page, "sign in");
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.fill("#email", "newbie@example.com");
    await page.fill("#password", "password123");
    await page.click("#auth-form button[type=submit]");
    await page.waitForSelector("h1:text('Projects')");
    await page.waitForSelector("text=No projects yet");
    await page.fill("#project-form input[name=name]", "My shop");
    await page.click("#project-form button[type=submit]");
    const secret = (await (await page.waitForSelector("[data-secret-key]")).textContent()).trim();
    assert.match(secret, /^sk_[A-Za-z0-9]{40}$/, "the secret key is shown once");
    const card = await page.waitForSelector("article[data-project]");
    assert.match(await card.textContent(), /pk_[A-Za-z0-9]{40}/);
    assert.doesNotMatch(await card.textContent(), /sk_[A-Za-z0-9]{40}/, "the card never shows the secret key");
    const res = await fetch(`${base}/contacts`, { headers: { authorization: `Bearer ${secret}` } });
    assert.equal(res.status, 200, "the shown key works");
    await audit(page, "projects");
    await page.reload();
    await page.waitForSelector("article[data-project]");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForSelector("h1:text('Sign in')");
    await page.fill("#email", "newbie@example.com");
    await page.fill("#password", "wrong password");
    await page.click("#auth-form button[type=submit]");
    const error = await page.waitForSelector(".error[role=alert]");
    assert.equal((await error.textContent()).trim(), "The email or password is incorrect");
    await context.close();
  }

  // ---------------------------------------------------------------------------------------
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page);
  const home = `${base}/app/p/${F.projectId}`;

  step("sign in as the owner and open the project");
  await signInToAcme(page, F.owner);

  step("contacts: the API's contacts are listed; one is created on the page");
  await page.waitForSelector('#contacts-table tr[data-contact="cy@example.com"]');
  await shot(page, "contacts");
  await audit(page, "contacts");
  await page.click("#new-contact summary");
  await page.fill("#new-contact input[name=email]", "grace@example.com");
  await page.getByRole("button", { name: "Create contact" }).click();
  await page.waitForSelector("h1:text-is('grace@example.com')");
  const grace = await lookup("grace@example.com");
  assert.ok(grace.exists && grace.subscribed, "created through the page");
  assert.match(page.url(), new RegExp(`/contacts/${grace.id}$`));

  step("contact: add a field, unsubscribe");
  await page.getByRole("button", { name: "Add field" }).click();
  const row = page.locator(".data-row").last();
  await row.getByLabel("Key").fill("plan");
  await row.getByLabel("Value").fill("pro");
  await page.getByRole("button", { name: "Save fields" }).click();
  await toast(page, "Fields saved");
  assert.equal((await api("GET", `/contacts/${grace.id}`)).body.data.plan, "pro");
  await page.getByRole("button", { name: "Unsubscribe", exact: true }).click();
  await toast(page, "Unsubscribed");
  assert.equal((await api("GET", `/contacts/${grace.id}`)).body.subscribed, false);
  await audit(page, "contact");

  step("contact: its events and emails");
  await page.goto(`${home}/contacts`);
  await page.getByRole("link", { name: "ada@example.com" }).click();
  await page.waitForSelector("td:text('signed_up')");
  await page.waitForSelector("td:has-text('Welcome')");
  await shot(page, "contact");

  step("contacts: bulk unsubscribe with the job's progress");
  await page.goto(`${home}/contacts`);
  await page.getByLabel("Select bob@example.com").check();
  await page.getByLabel("Select cy@example.com").check();
  await page.getByRole("region", { name: "Bulk actions" }).getByRole("button", { name: "Unsubscribe" }).click();
  await page.waitForSelector("[data-job-status=completed]");
  for (const email of ["bob@example.com", "cy@example.com"]) assert.equal((await lookup(email)).subscribed, false, email);
  await page.getByRole("button", { name: "Close" }).click();
  await page.getByRole("link", { name: "cy@example.com" }).click();
  await page.getByRole("button", { name: "Delete contact" }).click();
  await page.waitForSelector("h1:text-is('Contacts')");
  assert.equal((await lookup("cy@example.com")).exists, false, "deleted on its page");

  step("import: preview, import, watch it complete");
  await page.goto(`${home}/contacts`);
  await page.getByRole("link", { name: "Import CSV" }).click();
  const csv = "email,firstName,city,plan\ndan@example.com,Dan,Oslo,pro\neve@example.com,Eve,Oslo,free\nada@example.com,,London,\nnot-an-email,X,Y,Z\n";
  await page.setInputFiles("#csv-file", { name: "people.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
  const preview = await page.waitForSelector("#import-preview");
  assert.match(await preview.textContent(), /→ data\.city/);
  assert.match(await preview.textContent(), /4 rows/);
  await audit(page, "import preview");
  await page.click("#start-import");
  await page.waitForSelector("#import-job [data-job-status=completed]");
  assert.equal(await page.textContent("[data-count=imported]"), "2");
  assert.equal(await page.textContent("[data-count=updated]"), "1");
  assert.equal(await page.textContent("[data-count=errors]"), "1");
  await page.waitForSelector("#import-job td:text('invalid_email')");
  await shot(page, "import");
  assert.equal((await api("GET", `/contacts/${(await lookup("dan@example.com")).id}`)).body.data.city, "Oslo");

  step("fields: the catalogue and a field's values");
  await nav(page, "Fields");
  const city = page.locator('tr[data-field="data.city"]');
  await city.getByRole("button", { name: "Values" }).click();
  await city.locator("code.json", { hasText: "Oslo" }).first().waitFor();
  await audit(page, "fields");
  const source = page.locator('tr[data-field="data.source"]');
  await source.getByRole("button", { name: "Delete" }).click();
  await source.locator("[data-job-status=completed]").waitFor();
  const fields = (await api("GET", "/contacts/fields")).body.fields.map((f) => f.field);
  assert.ok(fields.includes("data.city") && !fields.includes("data.source"), "data.source removed");
  assert.equal((await api("GET", `/contacts/${(await lookup("ada@example.com")).id}`)).body.data.source, undefined);

  step("segments: a two-group condition counts what the API counts");
  await nav(page, "Segments");
  await page.getByRole("link", { name: "New segment" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Pro or Oslo");
  const first = page.getByRole("group", { name: "Condition, group 1, filter 1" });
  await first.getByLabel("Field", { exact: true }).fill("data.plan");
  await first.getByLabel(/^Operator/).selectOption("equals");
  await first.getByLabel("Value", { exact: true }).fill("pro");
  await page.getByLabel(/^Contacts must match/).selectOption("OR");
  await page.getByRole("button", { name: "Add group" }).click();
  const second = page.getByRole("group", { name: "Condition, group 2, filter 1" });
  await second.getByLabel("Field", { exact: true }).fill("data.city");
  await second.getByLabel(/^Operator/).selectOption("equals");
  await second.getByLabel("Value", { exact: true }).fill("Oslo");
  const condition = { logic: "OR", groups: [
    { filters: [{ field: "data.plan", operator: "equals", value: "pro" }] },
    { filters: [{ field: "data.city", operator: "equals", value: "Oslo" }] },
  ] };
  const expected = (await api("POST", "/segments/count", { condition })).body.count;
  assert.equal(expected, 5, "ada, grace and dan are pro; bob, dan and eve live in Oslo");
  await page.waitForSelector(`#live-count:text-is("${expected}")`);
  await shot(page, "segment-builder");
  await audit(page, "segment builder");
  await page.getByRole("button", { name: "Create segment" }).click();
  await page.waitForSelector("#members-table");
  const saved = (await api("GET", "/segments")).body.find((s) => s.name === "Pro or Oslo");
  assert.equal(saved.memberCount, expected);
  assert.equal(saved.condition.logic, "OR");
  assert.equal(await page.locator("#members-table tbody tr").count(), expected);
  await audit(page, "segment");
  await page.getByRole("button", { name: "Refresh count" }).click();
  await toast(page, `Counted: ${expected} members`);
  await page.getByLabel(/^Track membership/).check();
  await page.getByRole("button", { name: "Save segment" }).click();
  await toast(page, "Segment saved");
  await page.getByRole("button", { name: "Compute membership" }).click();
  await toast(page, "Membership computed");
  const entered = (await api("GET", "/events?name=segment.pro-or-oslo.entry")).body;
  assert.equal(entered.total, expected, "every member entered once");

  step("segments: a static segment's members by email");
  await nav(page, "Segments");
  await page.getByRole("link", { name: "New segment" }).click();
  await page.getByLabel("Name", { exact: true }).fill("VIPs");
  await page.getByLabel(/^Type/).selectOption("STATIC");
  await page.getByRole("button", { name: "Create segment" }).click();
  await page.getByLabel("Emails to add").fill("ada@example.com, eve@example.com");
  await page.getByRole("button", { name: "Add members" }).click();
  await page.waitForSelector("#members-table td:has-text('eve@example.com')");
  assert.equal((await api("GET", "/segments")).body.find((s) => s.name === "VIPs").memberCount, 2);
  await page.getByRole("button", { name: "Remove eve@example.com" }).click();
  await toast(page, "1 removed");
  assert.equal((await api("GET", "/segments")).body.find((s) => s.name === "VIPs").memberCount, 1);
  await nav(page, "Segments");
  await page.waitForSelector('#segments-table tr[data-segment="Pro or Oslo"]');
  await audit(page, "segments");

  step("templates: edit and see the preview change");
  await nav(page, "Templates");
  await page.waitForSelector('#templates-table tr[data-template="Welcome"]');
  await audit(page, "templates");
  await page.getByRole("link", { name: "Welcome" }).click();
  await page.waitForSelector("#preview-subject:text-is('Welcome, friend')");
  const ada = await lookup("ada@example.com");
  await page.getByLabel("Find a contact").fill("ada@");
  await page.locator(`#preview-contact option[value="${ada.id}"]`).waitFor({ state: "attached" });
  await page.selectOption("#preview-contact", ada.id);
  await page.waitForSelector("#preview-subject:text-is('Welcome, Ada')");
  assert.match(await page.getAttribute("#preview-frame", "srcdoc"), /Hello Ada<\/h1><p>You are on pro/);
  await page.getByLabel("Subject").fill("Hi {{ firstName }}, your {{ plan }} plan");
  await page.waitForSelector("#preview-subject:text-is('Hi Ada, your pro plan')");
  await page.getByLabel("Body (HTML with Liquid)").fill("<p>one</p>\n<p>{% if plan %}</p>");
  const liquid = await page.waitForSelector("#preview-heading ~ .error");
  assert.match(await liquid.textContent(), /Line 2/);
  await page.getByLabel("Body (HTML with Liquid)").fill("<h1>Hello {{ firstName }}</h1>");
  await page.waitForSelector("#preview-heading ~ .error", { state: "detached" });
  await shot(page, "template");
  await audit(page, "template editor");
  await page.getByRole("button", { name: "Save template" }).click();
  await toast(page, "Template saved");
  const templateId = page.url().split("/").pop();
  const template = (await api("GET", `/templates/${templateId}`)).body;
  assert.equal(template.subject, "Hi {{ firstName }}, your {{ plan }} plan");
  assert.equal(template.body, "<h1>Hello {{ firstName }}</h1>");

  step("templates: a sender on an unverified domain is refused with the rule explained");
  await page.getByLabel("From address").fill("news@elsewhere.example");
  await page.getByRole("button", { name: "Save template" }).click();
  const refused = await page.waitForSelector("#template-form .error");
  assert.match(await refused.textContent(), /verified/);
  await page.waitForSelector("#template-form .error a:text('Go to Domains')");
  await page.getByRole("button", { name: "Duplicate" }).click();
  await page.waitForSelector("h1:text-is('Welcome (copy)')");
  assert.equal((await api("GET", "/templates")).body.total, 2);
  await page.getByRole("button", { name: "Delete" }).click();
  await page.waitForSelector('#templates-table tr[data-template="Welcome"]');
  const remaining = (await api("GET", "/templates")).body.data.map((t) => t.name);
  assert.deepEqual(remaining, ["Welcome"]);

  step("events: recent, names and stats");
  await nav(page, "Events");
  await page.waitForSelector("#events-table td:text('signed_up')");
  await page.waitForSelector("#names-table td:has-text('signed_up')");
  const total = Number(await (await page.waitForSelector("#stats-total")).textContent());
  assert.equal(total, (await api("GET", "/events/stats")).body.total);
  await page.selectOption("#event-name-filter", "signed_up");
  await page.waitForFunction(() => document.querySelectorAll("#events-table tbody tr").length === 1);
  assert.equal(await page.textContent("#events-table tbody td:nth-child(2)"), "signed_up");
  await shot(page, "events");
  await audit(page, "events");
  // A tracked name is deleted on the page; service events cannot be.
  assert.equal((await api("POST", "/v1/track", { email: "ada@example.com", event: "temporary" }, F.publicKey)).status, 200);
  await page.reload();
  const temporary = page.locator('#names-table tr[data-event="temporary"]');
  await temporary.getByRole("button", { name: "Delete every temporary event" }).click();
  await toast(page, "1 temporary events deleted");
  await temporary.waitFor({ state: "detached" });
  assert.ok(!(await api("GET", "/events/names")).body.some((n) => n.name === "temporary"));
  assert.equal(await page.locator('#names-table tr[data-event="email.sent"] button').count(), 0);

  step("domains: the verified one, and a new one with its records");
  await nav(page, "Domains");
  await page.waitForSelector('article[data-domain="example.test"] .badge:text("verified")');
  await page.fill("#domain-form input[name=domain]", "news.example.test");
  await page.getByRole("button", { name: "Add domain" }).click();
  const added = page.locator('article[data-domain="news.example.test"]');
  await added.waitFor();
  assert.equal(await added.locator("tbody tr").count(), 3);
  const listed = (await api("GET", `/domains/project/${F.projectId}`)).body.find((d) => d.domain === "news.example.test");
  const dkim = listed.records.find((r) => r.purpose === "dkim");
  assert.equal((await added.locator('tr[data-purpose="dkim"] code.record').textContent()).trim(), dkim.value);
  await added.getByRole("button", { name: "Verify now" }).click();
  await added.locator(".badge:text('not found')").first().waitFor();
  await shot(page, "domains");
  await audit(page, "domains");
  await added.getByRole("button", { name: "Delete" }).click();
  await added.waitFor({ state: "detached" });
  const domains = (await api("GET", `/domains/project/${F.projectId}`)).body.map((d) => d.domain);
  assert.deepEqual(domains, ["example.test"]);

  step("outbox: the captured message, its HTML, headers and source");
  await nav(page, "Outbox");
  await page.locator("#outbox-table a").first().click();
  const frame = await page.waitForSelector("#message-frame");
  assert.match(await frame.getAttribute("srcdoc"), /Hello Ada/);
  assert.equal(await frame.getAttribute("sandbox"), "", "no scripts, no same origin");
  await audit(page, "outbox message");
  await page.getByRole("tab", { name: "HTML" }).focus();
  await page.keyboard.press("ArrowRight");
  await page.waitForSelector("[role=tab][aria-selected=true]:text-is('Text')");
  await page.waitForFunction(() => document.activeElement.textContent === "Text"); // the focus moves too
  await page.getByRole("tab", { name: "Headers" }).click();
  await page.waitForSelector("#headers-table th:text('DKIM-Signature')");
  await page.getByRole("tab", { name: "Source" }).click();
  assert.match(await page.textContent("#message-raw"), /Subject: Welcome, Ada/);
  await nav(page, "Outbox");
  await audit(page, "outbox");

  step("campaigns: a filtered audience counted as the API counts it, a test send, send now, results");
  await nav(page, "Campaigns");
  await page.waitForSelector("text=No campaigns yet");
  await page.getByRole("link", { name: "New campaign" }).click();
  await page.getByLabel("Name", { exact: true }).fill("November news");
  await page.getByLabel("From address").fill("news@example.test");
  await page.getByLabel("Subject", { exact: true }).fill("Hi {{ firstName }}, news from Oslo");
  await page.getByLabel("Body (HTML with Liquid)").fill("<p>Hello {{ firstName }} in {{ city }}</p>");
  await page.getByLabel("Contacts matching a condition").check();
  const oslo = page.getByRole("group", { name: "Condition, group 1, filter 1" });
  await oslo.getByLabel("Field", { exact: true }).fill("data.city");
  await oslo.getByLabel(/^Operator/).selectOption("equals");
  await oslo.getByLabel("Value", { exact: true }).fill("Oslo");
  const audience = { type: "MARKETING", audienceType: "FILTERED",
    audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.city", operator: "equals", value: "Oslo" }] }] } };
  const recipients = (await api("POST", "/campaigns/count", audience)).body.count;
  assert.equal(recipients, 2, "dan and eve: Oslo and subscribed (bob unsubscribed)");
  await page.waitForSelector(`#recipient-count:text-is("${recipients}")`);
  await page.waitForSelector("#preview-subject:has-text('news from Oslo')");
  await audit(page, "campaign editor");
  await page.getByRole("button", { name: "Create campaign" }).click();
  await page.waitForSelector("#send-panel");
  const campaignId = page.url().split("/").pop();
  await page.fill("#test-form input[name=email]", "boss@example.com");
  await page.getByRole("button", { name: "Send a test" }).click();
  await toast(page, "Test sent to boss@example.com");
  await page.waitForSelector("#preview-subject");
  await page.waitForSelector(`#recipient-count:text-is("${recipients}")`);
  await shot(page, "campaign");
  await audit(page, "campaign send panel");
  await page.getByRole("button", { name: `Send now to ${recipients} contacts` }).click();
  await page.waitForSelector("#results[data-status=SENT]");
  const sentCampaign = (await api("GET", `/campaigns/${campaignId}`)).body;
  assert.equal(sentCampaign.status, "SENT");
  assert.equal(sentCampaign.sentCount, recipients);
  assert.equal(await page.textContent("[data-stat=sent]"), String(recipients));
  await audit(page, "campaign results");
  // Duplicate it, schedule the copy in the browser's time zone, then cancel it.
  await page.getByRole("button", { name: "Duplicate" }).click();
  await page.waitForSelector("h1:text-is('November news (copy)')");
  const copyId = page.url().split("/").pop();
  await page.fill("#schedule-at", "2099-06-01T09:30");
  await page.getByRole("button", { name: "Schedule", exact: true }).click();
  await toast(page, "Campaign scheduled for");
  const scheduled = (await api("GET", `/campaigns/${copyId}`)).body;
  assert.equal(scheduled.status, "SCHEDULED");
  const expectedAt = await page.evaluate(() => new Date("2099-06-01T09:30").toISOString());
  assert.equal(scheduled.scheduledFor, expectedAt, "the time picked is the user's local time");
  await page.waitForSelector("text=Scheduled for");
  await page.getByRole("button", { name: "Cancel", exact: true }).click();
  await toast(page, "Campaign cancelled");
  assert.equal((await api("GET", `/campaigns/${copyId}`)).body.status, "CANCELLED");
  await nav(page, "Campaigns");
  await page.waitForSelector('#campaigns-table tr[data-campaign="November news"] .badge:text("sent")');
  const outbox = (await api("GET", "/outbox?limit=100")).body.data.map((m) => m.subject);
  assert.ok(outbox.includes("[Test] Hi , news from Oslo"), `the test message: ${outbox}`);
  assert.ok(outbox.includes("Hi Dan, news from Oslo") && outbox.includes("Hi Eve, news from Oslo"), `${outbox}`);

  step("overview: the mail chart and rates, the activity feed");
  await nav(page, "Overview");
  await page.waitForSelector("#overview-chart canvas");
  const sentStat = (await api("GET", "/activity/stats")).body.counts.send;
  await page.waitForSelector(`#overview-rates:has-text("${sentStat} sent")`);
  await page.waitForSelector('#activity-table tr[data-activity="send"]');
  await audit(page, "overview");
  await shot(page, "overview");

  step("workflows: build a graph, configure its steps, enable it, run it by hand, cancel, switch it off");
  await nav(page, "Workflows");
  await page.waitForSelector("text=No workflows yet");
  await page.fill("#workflow-create input[name=name]", "Welcome flow");
  await page.fill("#workflow-create input[name=event]", "signed_up");
  await page.getByRole("button", { name: "Create workflow" }).click();
  await page.waitForSelector("h1:text-is('Welcome flow')");
  const workflowId = page.url().split("/").pop();
  await page.getByRole("button", { name: "Trigger on signed_up" }).click();
  await page.locator("#add-step select[name=type]").selectOption("SEND_EMAIL");
  await page.getByRole("button", { name: "Add step" }).click();
  await toast(page, "Send email step added");
  await page.waitForSelector("#step-heading:text-is('Send email step')");
  await page.locator("#add-step select[name=type]").selectOption("DELAY");
  await page.getByRole("button", { name: "Add step" }).click();
  await toast(page, "Delay step added");
  await page.waitForSelector("#step-heading:text-is('Delay step')");
  await page.getByLabel("Delay amount").fill("2");
  await page.getByLabel("Delay unit").selectOption("days");
  await page.getByRole("button", { name: "Save step" }).click();
  await toast(page, "Step saved");
  await page.locator("#add-step select[name=type]").selectOption("CONDITION");
  await page.getByRole("button", { name: "Add step" }).click();
  await toast(page, "Condition step added");
  await page.waitForSelector("#step-heading:text-is('Condition step')");
  await page.locator("#add-step select[name=branch]").selectOption("no");
  await page.locator("#add-step select[name=type]").selectOption("EXIT");
  await page.getByRole("button", { name: "Add step" }).click();
  await toast(page, "Exit step added");
  await page.waitForSelector("#workflow-graph .edge[data-branch=no] text:text-is('no')");
  let built = (await api("GET", `/workflows/${workflowId}`)).body;
  assert.deepEqual(built.steps.map((s) => s.type), ["TRIGGER", "SEND_EMAIL", "DELAY", "CONDITION", "EXIT"]);
  assert.deepEqual(built.steps[2].config, { amount: 2, unit: "days" });
  assert.equal((await api("GET", `/templates/${built.steps[1].config.templateId}`)).status, 200, "the first template is picked");
  assert.equal(built.transitions.length, 4);
  assert.equal(built.transitions.find((t) => t.fromStepId === built.steps[3].id).branch, "no");
  await page.locator("#workflow-form input[name=enabled]").check();
  await page.getByRole("button", { name: "Save workflow" }).click();
  await toast(page, "Workflow saved");
  assert.equal((await api("GET", `/workflows/${workflowId}`)).body.enabled, true);
  await audit(page, "workflow editor");
  await shot(page, "workflow");
  await page.fill("#start-execution input[name=email]", "ada@example.com");
  await page.fill("#start-execution input[name=context]", '{"plan": "pro"}');
  await page.getByRole("button", { name: "Start", exact: true }).click();
  await toast(page, "Execution started");
  for (let i = 0; i < 100; i++) {
    const list = (await api("GET", `/workflows/${workflowId}/executions?status=WAITING`)).body;
    if (list.total === 1) break;
    await page.waitForTimeout(100);
  }
  await page.getByRole("button", { name: "Refresh" }).click();
  await page.waitForSelector('#executions-table tr[data-execution="ada@example.com"] .badge:text("waiting")');
  await page.locator('#executions-table tr[data-execution="ada@example.com"]').getByRole("button", { name: "Steps" }).click();
  await page.waitForSelector(".steps-history li:has-text('Send email')");
  await audit(page, "workflow executions");
  await page.getByRole("button", { name: "Cancel the execution of ada@example.com" }).click();
  await toast(page, "Execution cancelled");
  const runs = (await api("GET", `/workflows/${workflowId}/executions`)).body.data;
  assert.equal(runs[0].status, "CANCELLED");
  assert.equal(runs[0].steps[1].status, "COMPLETED", "the email step ran before the delay");
  await nav(page, "Workflows");
  await page.getByLabel("Welcome flow enabled").click();
  await toast(page, "Welcome flow disabled");
  assert.equal((await api("GET", `/workflows/${workflowId}`)).body.enabled, false);
  await audit(page, "workflows");

  step("webhooks: add an endpoint (its secret shown once), send a test, see the log, disable it");
  await nav(page, "Webhooks");
  await page.waitForSelector("text=No endpoints yet");
  await page.fill("#webhook-form input[name=url]", "https://hooks.example.test/tidings");
  await page.fill("#webhook-form input[name=events]", "email.*, signed_up");
  await page.getByRole("button", { name: "Add endpoint" }).click();
  await toast(page, "Endpoint added");
  const shownSecret = (await page.textContent("[data-webhook-secret]")).trim();
  assert.match(shownSecret, /^whsec_[A-Za-z0-9+/=]{32}$/);
  const [endpoint] = (await api("GET", "/webhooks")).body;
  assert.deepEqual(endpoint.events, ["email.*", "signed_up"]);
  assert.equal(endpoint.secret, undefined, "the API never shows it again");
  await page.locator('#webhooks-table tr[data-webhook="https://hooks.example.test/tidings"]').getByRole("button", { name: "Deliveries" }).click();
  await page.getByRole("button", { name: "Send test" }).click();
  await toast(page, "Test delivery queued");
  await page.waitForSelector('#deliveries-table tr[data-delivery="webhook.test"]');
  const log = (await api("GET", `/webhooks/${endpoint.id}/deliveries`)).body.data;
  assert.equal(log[0].eventType, "webhook.test");
  await audit(page, "webhooks");
  await page.locator('#webhooks-table tr[data-webhook="https://hooks.example.test/tidings"]').getByRole("button", { name: "Disable" }).click();
  await toast(page, "Endpoint disabled");
  assert.equal((await api("GET", `/webhooks/${endpoint.id}`)).body.enabled, false);

  step("settings: add a member, rotate the keys");
  await nav(page, "Settings");
  await page.waitForSelector("#security .badge:text('ok')");
  await page.fill("#member-form input[name=email]", F.member);
  await page.getByRole("button", { name: "Add member" }).click();
  await page.waitForSelector(`tr[data-member="${F.member}"]`);
  await audit(page, "settings");
  const roleOf = async () => (await (await page.request.get(`${base}/projects/${F.projectId}/members`)).json())
    .find((m) => m.email === F.member).role;
  assert.equal(await roleOf(), "MEMBER");
  await page.getByLabel(`Role of ${F.member}`).selectOption("ADMIN");
  await toast(page, `${F.member} is now admin`);
  assert.equal(await roleOf(), "ADMIN");
  await page.getByLabel(`Role of ${F.member}`).selectOption("MEMBER");
  await toast(page, `${F.member} is now member`);
  assert.equal(await roleOf(), "MEMBER");
  await page.locator("#rename-form input[name=name]").fill("Acme Inc");
  await page.getByRole("button", { name: "Rename" }).click();
  await toast(page, "Project renamed");
  await page.waitForSelector(".project-name:has-text('Acme Inc')");
  const renamed = (await (await page.request.get(`${base}/users/@me/projects/${F.projectId}`)).json()).name;
  assert.equal(renamed, "Acme Inc");
  await page.getByRole("button", { name: "Regenerate keys" }).click();
  const rotated = (await (await page.waitForSelector("[data-secret-key]")).textContent()).trim();
  assert.match(rotated, /^sk_[A-Za-z0-9]{40}$/);
  assert.equal((await api("GET", "/contacts")).status, 401, "the old secret key stopped working");
  secretKey = rotated;
  assert.equal((await api("GET", "/contacts")).status, 200, "the new one works");
  const shownPublic = (await page.textContent("[data-public-key]")).trim();
  assert.notEqual(shownPublic, F.publicKey);
  assert.equal((await api("POST", "/v1/track", { email: "ada@example.com", event: "rotated" }, shownPublic)).status, 200);
  await shot(page, "settings");

  step("the project switcher keeps the page and changes the project");
  await page.goto(`${base}/app/projects`);
  await page.fill("#project-form input[name=name]", "Beta");
  await page.click("#project-form button[type=submit]");
  await page.waitForSelector("[data-secret-key]");
  const beta = (await page.getAttribute("article[data-project]:has-text('Beta')", "data-project"));
  await page.goto(`${home}/segments`);
  await page.waitForSelector('#segments-table tr[data-segment="VIPs"]');
  await page.getByRole("combobox", { name: /^Project/ }).selectOption(beta);
  await page.waitForSelector("text=No segments yet");
  assert.equal(new URL(page.url()).pathname, `/app/p/${beta}/segments`);
  await page.getByRole("combobox", { name: /^Project/ }).selectOption(F.projectId);
  await page.waitForSelector('#segments-table tr[data-segment="VIPs"]');
  await page.goto(`${base}/app/p/not-a-project/contacts`);
  await page.waitForSelector(".error:has-text('Project not found')");
  await page.getByRole("link", { name: "Go to your projects" }).click();
  await page.waitForSelector("h1:text('Projects')");
  await page.goto(`${home}/contacts`);
  await page.waitForSelector('#contacts-table tr[data-contact="ada@example.com"]');

  step("dark theme and a phone's width");
  await page.getByRole("button", { name: "Dark theme" }).click();
  await page.waitForSelector("html[data-theme=dark]");
  await audit(page, "contacts, dark");
  await shot(page, "contacts-dark");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("button", { name: "Menu" }).waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page fits a phone (overflow ${overflow}px)`);
  await page.getByRole("button", { name: "Menu" }).click();
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Segments" }).click();
  await page.waitForSelector("h1:text-is('Segments')");
  await audit(page, "segments, phone");
  await shot(page, "phone");
  await context.close();

  // ---------------------------------------------------------------------------------------
  step("a MEMBER sees no key or member management");
  {
    const memberContext = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const member = await memberContext.newPage();
    watch(member);
    await signInToAcme(member, F.member);
    await nav(member, "Settings");
    await member.waitForSelector(`tr[data-member="${F.member}"]`);
    assert.equal(await member.locator("text=Regenerate keys").count(), 0);
    assert.equal(await member.locator("#member-form").count(), 0);
    assert.equal(await member.locator("#members-table select").count(), 0, "no role changes");
    assert.equal(await member.locator("[data-public-key]").count(), 0);
    await member.waitForSelector("text=Only owners and admins see and rotate");
    await audit(member, "settings as member");
    // A shared link opens the same page.
    await member.goto(`${home}/segments`);
    await member.waitForSelector('#segments-table tr[data-segment="VIPs"]');
    await memberContext.close();
  }

  assert.deepEqual(violations, [], `accessibility violations:\n${violations.join("\n")}`);
  assert.deepEqual(errors, [], "no script errors");
  console.log("dashboard ok");
} catch (e) {
  console.error(`failed at: ${current}`);
  throw e;
} finally {
  await browser.close();
}
