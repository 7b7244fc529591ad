// Single sign-on: the sign-in page offers the providers the server is configured with (OpenID
// Connect and GitHub); each button goes through its provider (on loopback, which sends the
// browser straight back) and lands signed in, as a new account with the provider's verified
// address. A failed sign-in comes back to the sign-in page with the reason. Run by the cargo test `browser::dashboard_in_chromium`.

import assert from "node:assert/strict";
import { audit, base, drive, step, watch } from "./lib.mjs";

await drive("sso", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  watch(page);

  step("sign-in page: the provider's button");
  await page.goto(`${base}/login`);
  const button = page.getByRole("link", { name: "Sign in with Loopback SSO" });
  await button.waitFor();
  await audit(page, "sign in with a provider");

  step("signing in through the provider lands in the dashboard as the provider's user");
  await button.click();
  await page.waitForSelector("h1:text('Projects')");
  await page.waitForSelector(".who:text-is('sso@example.com')");
  const me = await (await page.request.get(`${base}/users/@me`)).json();
  assert.equal(me.email, "sso@example.com");
  assert.equal(me.emailVerified, true, "the provider vouched for the address");

  step("GitHub: its button signs in as the account's verified primary address");
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByRole("link", { name: "Sign in with GitHub" }).click();
  await page.waitForSelector(".who:text-is('octo@example.com')");
  await page.getByRole("button", { name: "Sign out" }).click();

  step("a sign-in that cannot be finished comes back with the reason");
  await page.goto(`${base}/auth/oauth/acme/callback?code=x&state=made-up`);
  const alert = await page.waitForSelector("#sso-error[role=alert]");
  assert.match(await alert.textContent(), /expired or was used already/);
  await page.goto(`${base}/login?error=unverified`);
  assert.match(await (await page.waitForSelector("#sso-error")).textContent(), /verify your primary address/);
  // Only known reasons are worded: anything else in the address shows nothing.
  await page.goto(`${base}/login?error=Call+555+to+unlock+your+account`);
  await page.waitForSelector("#auth-form");
  assert.equal(await page.locator("#sso-error").count(), 0);
  await context.close();
});
