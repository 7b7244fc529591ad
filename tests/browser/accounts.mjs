// The pages mailed links open: a password reset, an invitation that creates the account and
// joins the project, an address verification; and the page that asks for a reset link. Run by
// the cargo test `browser::dashboard_in_chromium` after the others, with the links it read from
// the capture outbox in FIXTURE.links.

import assert from "node:assert/strict";
import { F, audit, base, drive, step, watch } from "./lib.mjs";

await drive("accounts", async (browser) => {
  const open = async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    watch(page);
    return { context, page };
  };

  step("forgot password: the same answer for any address");
  {
    const { context, page } = await open();
    await page.goto(`${base}/login`);
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.fill("#email", "nobody@example.com");
    await page.getByRole("button", { name: "Send me a link" }).click();
    await page.waitForSelector("#reset-requested:has-text('If an account uses this address')");
    await audit(page, "forgot password");
    await context.close();
  }

  step("reset link: a new password, signed in");
  {
    const { context, page } = await open();
    await page.goto(base + F.links.reset);
    await audit(page, "reset password");
    await page.fill("#password", "a brand new password");
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForSelector("h1:text-is('Projects')");
    const login = await fetch(`${base}/auth/login`, { method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: F.member, password: "a brand new password" }) });
    assert.equal(login.status, 200, "the new password works");
    await page.goto(base + F.links.reset);
    await page.fill("#password", "yet another password");
    await page.getByRole("button", { name: "Set password" }).click();
    await page.waitForSelector(".error[role=alert]:has-text('already used or expired')");
    await context.close();
  }

  step("invitation link: the account is created and joins the project");
  {
    const { context, page } = await open();
    await page.goto(base + F.links.invitation);
    await page.waitForSelector(`#offer:has-text("${F.invitee}")`);
    await audit(page, "invitation");
    await page.fill("#password", "password123");
    await page.getByRole("button", { name: "Create account and join" }).click();
    await page.waitForSelector('#contacts-table tr[data-contact="ada@example.com"]');
    const project = await (await page.request.get(`${base}/users/@me/projects/${F.projectId}`)).json();
    assert.equal(project.role, "MEMBER");
    const me = await (await page.request.get(`${base}/users/@me`)).json();
    assert.equal(me.emailVerified, true, "the link reached the address");
    await context.close();
  }

  step("verification link: the address is confirmed");
  {
    const { context, page } = await open();
    await page.goto(base + F.links.verify);
    await page.waitForSelector("#verified");
    await audit(page, "verify email");
    await page.reload();
    await page.waitForSelector(".error[role=alert]:has-text('already used or expired')");
    await context.close();
  }
});
