// Billing with Stripe (on loopback): the owner subscribes from Settings through Stripe's
// checkout, which pays at once and tells the server by its signed event; the page then shows the
// subscription, opens Stripe's billing portal and lists the invoice. Run by the cargo test
// `browser::dashboard_in_chromium`, with the server's `[billing]` pointed at the stand-in.

import assert from "node:assert/strict";
import { F, audit, base, drive, nav, shot, signInToAcme, step, watch } from "./lib.mjs";

await drive("billing", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page);

  step("settings: no subscription yet, and a button to subscribe");
  await signInToAcme(page, F.owner);
  await nav(page, "Settings");
  const card = page.locator("#subscription");
  await card.getByText("This project has no subscription yet.").waitFor();
  await card.getByText("No invoices yet.").waitFor();
  assert.equal(await card.getByRole("button", { name: "Manage billing" }).count(), 0);
  await audit(page, "settings, subscription");

  step("checkout: Stripe takes the payment and the page comes back with the subscription");
  await card.getByRole("button", { name: "Subscribe with Stripe" }).click();
  await page.waitForURL(/\/settings\?billing=success$/);
  await card.locator("#subscription-status .badge").getByText("active").waitFor();
  await page.locator("#billing-returned").getByText("Checkout is done. Stripe has confirmed the subscription.").waitFor();
  assert.equal(await card.getByRole("button", { name: "Subscribe with Stripe" }).count(), 0);

  step("invoices: Stripe's, with the amount in its currency and links to Stripe");
  const row = card.locator("#invoices-table tbody tr");
  await row.getByText("LOOP-0001").waitFor();
  assert.match(await row.textContent(), /\$29\.00/);
  assert.equal(await row.getByRole("link", { name: "PDF" }).getAttribute("href"), "https://pay.stripe.com/invoice/browser/pdf");
  await audit(page, "settings, subscribed");
  await card.scrollIntoViewIfNeeded();
  await shot(page, "settings-subscription");

  step("the billing portal is Stripe's page");
  await card.getByRole("button", { name: "Manage billing" }).click();
  await page.waitForSelector("h1:text('Loopback billing portal')");
  await page.goto(`${base}/app/p/${F.projectId}/settings`);
  await card.locator("#subscription-status .badge").getByText("active").waitFor();
  assert.equal(await page.locator("#billing-returned").count(), 0, "no checkout notice without one");
  await context.close();
});
