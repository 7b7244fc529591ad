// After a hard bounce took the project over its bounce threshold: the owner sees the suspension
// and its reason in Settings, the keys are refused meanwhile, and enabling the project on the
// page lifts it. Run by the cargo test `browser::dashboard_in_chromium` after `dashboard.mjs`.

import assert from "node:assert/strict";
import { F, audit, base, drive, nav, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("suspended", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page);
  const security = async () => (await (await page.request.get(`${base}/users/@me/projects/${F.projectId}/security`)).json());

  step("settings: the suspension and its reason");
  await signInToAcme(page, F.owner);
  await nav(page, "Settings");
  const banner = await page.waitForSelector("#suspension[role=alert]");
  const state = await security();
  assert.ok(state.suspension, `the API says suspended: ${JSON.stringify(state)}`);
  assert.match(state.suspension.reason, /^hard-bounce rate .* is above 1\.00 %$/);
  assert.ok((await banner.textContent()).includes(state.suspension.reason), "the page gives the reason");
  await page.waitForSelector("dd .badge.bad:text-is('disabled')");
  await audit(page, "settings, suspended");

  step("settings: enabling the project lifts the suspension");
  await page.getByRole("button", { name: "Enable", exact: true }).click();
  await toast(page, "Project enabled");
  await page.locator("#suspension").waitFor({ state: "detached" });
  const lifted = await security();
  assert.equal(lifted.suspension, null, JSON.stringify(lifted));
  assert.equal(lifted.suspensions.length, 1, "the lifted suspension stays on record");
  await page.getByText("Earlier suspensions").click();
  await page.waitForSelector(`details li:has-text("${state.suspension.reason}")`);
  await context.close();
});
