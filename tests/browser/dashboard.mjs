// Drives the dashboard in headless Chromium: sign up, create a project and see its keys, sign
// out, fail to sign in with a wrong password, sign in again. Run by the cargo test
// `browser::dashboard_in_chromium` with the server's URL as the first argument.
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const base = process.argv[2];
const executablePath = process.env.CHROMIUM || "/usr/bin/chromium";
const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const errors = [];
try {
  const page = await browser.newPage();
  page.on("pageerror", (e) => errors.push(e.message));

  await page.goto(`${base}/`);
  await page.getByText("Create an account").click();
  await page.fill("#email", "ada@example.com");
  await page.fill("#password", "password123");
  await page.click("#auth-form button[type=submit]");
  await page.waitForSelector("h1:text('Projects')");
  assert.equal(new URL(page.url()).pathname, "/app/projects");

  await page.fill("#project-form input[name=name]", "My shop");
  await page.click("#project-form button[type=submit]");
  const notice = await page.waitForSelector(".notice");
  const secret = (await notice.textContent()).match(/sk_[A-Za-z0-9]{40}/);
  assert.ok(secret, "the secret key is shown once");
  const card = await page.waitForSelector("article[data-project]");
  assert.match(await card.textContent(), /My shop/);
  assert.match(await card.textContent(), /pk_[A-Za-z0-9]{40}/);
  assert.doesNotMatch(await card.textContent(), /sk_[A-Za-z0-9]{40}/, "the card never shows the secret key");

  // The key works against the API.
  const res = await fetch(`${base}/users/@me/projects`, { headers: { cookie: (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } });
  const projects = await res.json();
  assert.equal(projects.length, 1);
  assert.equal(projects[0].name, "My shop");

  // A client-side route loads on reload.
  await page.reload();
  await page.waitForSelector("article[data-project]");

  await page.getByText("Sign out").click();
  await page.waitForSelector("h1:text('Sign in')");
  await page.fill("#email", "ada@example.com");
  await page.fill("#password", "wrong password");
  await page.click("#auth-form button[type=submit]");
  const error = await page.waitForSelector(".error:not([hidden])");
  assert.equal(await error.textContent(), "The email or password is incorrect");

  await page.fill("#password", "password123");
  await page.click("#auth-form button[type=submit]");
  await page.waitForSelector("article[data-project]");
  assert.deepEqual(errors, [], "no script errors");
  console.log("dashboard ok");
} finally {
  await browser.close();
}
