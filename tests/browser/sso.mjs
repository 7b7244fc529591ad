// Single sign-on: the sign-in page offers the providers the server is configured with (OpenID
// Connect and GitHub); each button goes through its provider (on loopback, which sends the
// browser straight back) and lands signed in, as a new account with the provider's verified
// address; an account someone made earlier with that address without confirming it is taken
// over, and the user told. A failed sign-in comes back to the sign-in page with the reason. Run
// by the cargo test `browser::dashboard_in_chromium`.

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

  step("someone signs up first with the provider's address, and never confirms it");
  const other = await browser.newContext();
  const signup = await other.request.post(`${base}/auth/signup`, {
    data: { email: "sso@example.com", password: "attacker-password" },
    headers: { Origin: base },
  });
  assert.equal(signup.status(), 200, await signup.text());

  step("signing in through the provider takes that account over, says so, and lands as the provider's user");
  await button.click();
  await page.waitForSelector("h1:text('Projects')");
  await page.waitForSelector(".who:text-is('sso@example.com')");
  const notice = await page.waitForSelector("#reclaimed[role=status]");
  assert.match(await notice.textContent(), /never confirmed the address/);
  await audit(page, "an account taken over by its address's owner");
  const attacker = await other.request.post(`${base}/auth/login`, {
    data: { email: "sso@example.com", password: "attacker-password" },
    headers: { Origin: base },
  });
  assert.equal(attacker.status(), 401, "the first sign-up's password no longer works");
  assert.equal((await other.request.get(`${base}/users/@me`)).status(), 401, "nor its session");
  await other.close();
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
  assert.match(await alert.textContent(), /not started in this browser/, "a return this browser did not start");
  await page.goto(`${base}/login?error=expired`);
  assert.match(await (await page.waitForSelector("#sso-error")).textContent(), /expired or was used already/);
  await page.goto(`${base}/login?error=unverified`);
  assert.match(await (await page.waitForSelector("#sso-error")).textContent(), /verify your primary address/);
  // Only known reasons are worded: anything else in the address shows nothing.
  await page.goto(`${base}/login?error=Call+555+to+unlock+your+account`);
  await page.waitForSelector("#auth-form");
  assert.equal(await page.locator("#sso-error").count(), 0);
  await context.close();
});
