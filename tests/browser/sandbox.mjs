// A first hour without DNS (issue 33, item 1): with mail captured, the Domains page names the
// project's sandbox sender; a template is saved from it without any DNS; and the Outbox shows the
// instance's owner the mail the server sent itself. At 1400 and 375 px with axe. Run by the cargo
// test `browser::dashboard_in_chromium` after dashboard.mjs, through the pages alone (the keys the
// fixture names were rotated there); it deletes the template it made.

import assert from "node:assert/strict";
import { F, audit, drive, fitsAPhone, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("sandbox", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("domains: the sandbox sender, verified while mail is captured");
  await nav(page, "Domains");
  await page.waitForSelector('#sandbox-domain[data-verified="true"]');
  const sandbox = (await page.textContent("#sandbox-name")).trim();
  assert.match(sandbox, /^[0-9a-f]{12}\.sandbox\.invalid$/);
  await audit(page, "domains with the sandbox sender");
  await shot(page, "domains-sandbox");
  await fitsAPhone(page, "domains");

  step("a template saved from the sandbox address: no DNS needed");
  await nav(page, "Templates");
  await page.getByRole("link", { name: "New template" }).click();
  await page.getByLabel("Name", { exact: true }).fill("Sandbox hello");
  await page.getByLabel("From address").fill(`hello@${sandbox}`);
  await page.getByLabel("Subject", { exact: true }).fill("Hello from the sandbox");
  await page.getByRole("button", { name: "Create template" }).click();
  await toast(page, "Template saved");
  await page.waitForURL(/\/templates\/[0-9a-f-]{36}$/);
  await page.getByRole("button", { name: "Delete" }).click();
  await toast(page, "Template deleted");

  step("outbox: the server's own mail, for the instance's owner");
  await nav(page, "Outbox");
  await page.getByRole("tab", { name: "The server's own mail" }).click();
  const invitation = page.locator("#outbox-table tr", { hasText: "invitee@example.com" }).first();
  await invitation.waitFor();
  await audit(page, "outbox, the server's own mail");
  await shot(page, "outbox-system");
  await fitsAPhone(page, "outbox, the server's own mail");
  await invitation.getByRole("link").click();
  await page.waitForURL(/\/outbox\/system\/\d+$/);
  await page.waitForSelector("#message-frame");
  assert.match(await page.getAttribute("#message-frame", "srcdoc"), /invitation/i);
  await audit(page, "a message the server sent itself");
  await context.close();
});
