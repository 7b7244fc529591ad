// Every page of the dashboard at 1400 and 375 px (issue 33, must-show): each section of the
// navigation and each kind of detail page, opened as a user would, audited with axe at both
// widths, checked not to scroll sideways on a phone (`scrollWidth <= innerWidth`), and saved as
// `page-<name>.png` and `page-<name>-375.png` under the screenshot folder. How long each page
// took to become interactive (heading shown, nothing loading) is written to
// `timings-pages.txt` beside them. The header
// is checked to stay one row on a phone. Run by the cargo test `browser::dashboard_in_chromium`
// after the other scripts have filled the project; it changes nothing.

import assert from "node:assert/strict";
import { F, audit, base, drive, fitsAPhone, nav, record, shot, signInToAcme, step, watch } from "./lib.mjs";

const SECTIONS = [
  "Overview", "Contacts", "Fields", "Segments", "Topics", "Forms", "Suppressions", "Public pages", "Templates",
  "Campaigns", "Workflows", "Events", "Domains", "Outbox", "Webhooks", "SMTP", "Inbound", "Settings", "API reference",
];

/** Waits until nothing on the page is loading. */
const settled = (page) => page.waitForFunction(() => !document.querySelector("main .loading"), null, { polling: 20 });

const slug = (name) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");

/** Audits the page at 1400 px, saves it, then does the same at 375 px with the overflow check. */
async function bothWidths(page, name) {
  await settled(page);
  await audit(page, name);
  await shot(page, `page-${slug(name)}`);
  await fitsAPhone(page, name, `page-${slug(name)}-375`);
}

/** Opens the first link of the main area matching `selector`, and waits for its page. */
async function openFirst(page, selector, name) {
  const link = page.locator(`main ${selector}`).first();
  await link.waitFor();
  const heading = await page.locator("main h1").textContent();
  const started = Date.now();
  await link.click();
  await page.waitForFunction((before) => {
    const h1 = document.querySelector("main h1");
    return h1 && h1.textContent !== before && !document.querySelector("main .loading");
  }, heading, { polling: 10 });
  record(name, Date.now() - started);
}

await drive("pages", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  for (const section of SECTIONS) {
    step(`${section} at 1400 and 375 px`);
    await nav(page, section);
    await bothWidths(page, section);
  }

  const details = [
    ["Contacts", "#contacts-table a[href*='/contacts/']", "a contact"],
    ["Contacts", "a[href$='/contacts/import']", "the CSV import"],
    ["Templates", "#templates-table a[href*='/templates/']", "a template"],
    ["Segments", "a[href*='/segments/']", "a segment"],
    ["Campaigns", "#campaigns-table a[href*='/campaigns/']", "a campaign"],
    ["Workflows", "#workflows-table a[href*='/workflows/']", "a workflow"],
    ["Outbox", "a[href*='/outbox/']", "a captured message"],
    ["Inbound", "a[href*='/inbound/']", "a received message"],
  ];
  for (const [section, selector, name] of details) {
    step(`${name} at 1400 and 375 px`);
    await nav(page, section);
    await openFirst(page, selector, name);
    await bothWidths(page, name);
  }

  step("the projects page, and the header on a phone: one row, the sections and account behind Menu");
  await page.goto(`${base}/app/projects`);
  await page.waitForSelector("h1:text('Projects')");
  await bothWidths(page, "projects");
  await page.goto(`${base}/app/p/${F.projectId}/contacts`);
  await settled(page);
  await page.setViewportSize({ width: 375, height: 812 });
  const header = await page.locator("header.bar").boundingBox();
  assert.ok(header.height <= 64, `the header is one row on a phone (${header.height} px high)`);
  const sections = page.getByRole("navigation", { name: "Sections", exact: true });
  assert.equal(await sections.isVisible(), false, "the sections wait behind Menu");
  assert.equal(await page.getByRole("button", { name: "Sign out" }).isVisible(), false, "so does signing out");
  await page.getByRole("button", { name: "Menu" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
  await audit(page, "header with its menu open, phone");
  await shot(page, "page-menu-375");
  await sections.getByRole("link", { name: "Campaigns", exact: true }).click();
  await page.waitForSelector("h1:text-is('Campaigns')");
  await audit(page, "header and menu, phone");
  await page.setViewportSize({ width: 1400, height: 900 });
  await context.close();
});
