// The danger zone, last because it ends the project: the owner resets Acme (typing its name,
// Acme Inc by now, to confirm), sees the reset finish and the project empty, then deletes it and
// lands on a project list without it. Run last by the cargo test `browser::dashboard_in_chromium`.

import assert from "node:assert/strict";
import { F, audit, base, drive, nav, signInToAcme, step, toast, watch } from "./lib.mjs";

await drive("wipes", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page);

  step("settings: the reset waits for the project's name");
  await signInToAcme(page, F.owner);
  await nav(page, "Settings");
  const name = (await (await page.request.get(`${base}/users/@me/projects/${F.projectId}`)).json()).name;
  const confirmLabel = `Type ${name} to confirm`;
  const resetForm = page.locator("#reset-form");
  const resetButton = resetForm.getByRole("button", { name: "Reset project" });
  await resetForm.getByLabel(confirmLabel).fill(name.toLowerCase());
  assert.equal(await resetButton.isDisabled(), true, "a name that does not match keeps the button off");
  await resetForm.getByLabel(confirmLabel).fill(name);
  await audit(page, "settings, danger zone");

  step("settings: resetting empties the project");
  await resetButton.click();
  await toast(page, "Reset started");
  await toast(page, `${name} is reset; its keys work again`);
  await page.locator("#reset-form").waitFor();
  const project = async () => page.request.get(`${base}/users/@me/projects/${F.projectId}`);
  assert.equal((await (await project()).json()).resetting, false);
  await nav(page, "Contacts");
  await page.waitForSelector("text=No contacts yet");
  await page.waitForSelector("#checklist");

  step("settings: deleting the project");
  await nav(page, "Settings");
  const deleteForm = page.locator("#delete-form");
  await deleteForm.getByLabel(confirmLabel).fill(name);
  await deleteForm.getByRole("button", { name: "Delete project" }).click();
  await page.waitForURL(`${base}/app/projects`);
  await page.waitForSelector("h1");
  assert.equal(await page.getByRole("link", { name }).count(), 0, `${name} is gone from the list`);
  assert.equal((await project()).status(), 404, "the project is gone for its owner");
  await context.close();
});
