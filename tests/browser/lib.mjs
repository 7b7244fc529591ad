// What the browser scripts share: the server and FIXTURE they are given, the API as an app
// calls it, axe-core audits, steps, signing in, and the browser itself.

import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

export const base = process.argv[2];
export const F = JSON.parse(process.env.FIXTURE);
const shots = process.env.SCREENSHOTS;
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let secretKey = F.secretKey;

/** From now on `api` calls with `key` (after the keys were rotated). */
export function useSecretKey(key) {
  secretKey = key;
}

/** The API, as an app calls it. */
export async function api(method, path, body, key = secretKey) {
  const headers = { authorization: `Bearer ${key}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
}

export async function lookup(email) {
  const { body } = await api("POST", "/contacts/lookup", { emails: [email] });
  return body.data[0];
}

/**
 * The path of the link matching `pattern` in the newest captured mail to `to` whose subject
 * `subject` accepts, once that mail is there.
 */
export async function linkInMail(to, subject, pattern) {
  for (let i = 0; i < 200; i++) {
    const list = (await api("GET", "/outbox?limit=20")).body.data;
    const mail = list.find((m) => m.to.includes(to) && subject(m.subject));
    if (mail) {
      const html = (await api("GET", `/outbox/${mail.id}`)).body.html;
      return new URL(html.match(pattern)[1]).pathname;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no mail to ${to}`);
}

const violations = [];
/** Runs axe-core on the page as it is now; keeps serious and critical violations. */
export async function audit(page, name) {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  for (const v of result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")) {
    violations.push(`${name}: ${v.id} (${v.impact}) ${v.help}\n    ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join("\n    ")}`);
  }
}

export async function shot(page, name) {
  if (!shots) return;
  await page.addStyleTag({ content: ".toasts { display: none !important; }" });
  // From the top: scrolled, a full-page picture shows the sticky header where the view was.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
  await page.addStyleTag({ content: ".toasts { display: flex !important; }" });
}

/**
 * Checks that `page` fits a phone's screen (375 px) and audits it there, `what` naming it; then
 * goes back to 1400 px.
 */
export async function fitsAPhone(page, what, shotName) {
  await page.setViewportSize({ width: 375, height: 812 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  // On failure, name the outermost elements that stick out, to find the culprit at once.
  const culprits = overflow <= 1 ? [] : await page.evaluate(() => [...document.querySelectorAll("body *")]
    .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1
      && !(el.parentElement && el.parentElement.getBoundingClientRect().right > window.innerWidth + 1))
    .slice(0, 5).map((el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}.${[...el.classList].join(".")} (${Math.round(el.getBoundingClientRect().width)}px)`));
  assert.ok(overflow <= 1, `${what} fits a phone (overflow ${overflow}px): ${culprits.join(", ")}`);
  await audit(page, `${what}, phone`);
  if (shotName) await shot(page, shotName);
  await page.setViewportSize({ width: 1400, height: 900 });
  // Let the browser lay the page out again at the new width before anything is timed after it.
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
}

let current = "start";
export function step(name) {
  current = name;
  console.log(`- ${name}`);
}

const timings = [];
/** Records how long a page took to become interactive, for the script's timings. */
export const record = (label, ms) => timings.push([label, ms]);
/**
 * Opens a section from the navigation. How long it took from the click until the page is
 * interactive (its heading shown and nothing of it still loading) is recorded and printed when
 * the script ends (measured, not asserted: a timed assertion would fail on a busy machine
 * rather than on a slow page).
 */
export async function nav(page, label) {
  const started = Date.now();
  await page.getByRole("navigation", { name: "Sections", exact: true }).getByRole("link", { name: label, exact: true }).click();
  await page.waitForSelector(`h1:text-is("${label}")`);
  await page.waitForFunction(() => !document.querySelector("main .loading"), null, { polling: 10 });
  timings.push([label, Date.now() - started]);
}

/** Signs in on the sign-in page and opens the project Acme. */
export async function signInToAcme(page, email) {
  await page.goto(`${base}/login`);
  await page.fill("#email", email);
  await page.fill("#password", F.password);
  await page.click("#auth-form button[type=submit]");
  // Signed in first: on the sign-in page a provider's button could match the name too.
  await page.waitForSelector("h1:text('Projects')");
  await page.getByRole("link", { name: "Acme" }).click();
  await page.waitForSelector('#contacts-table tr[data-contact="ada@example.com"]');
}

export const toast = (page, text) => page.waitForSelector(`.toast:has-text("${text}")`);

const errors = [];
/** Records the page's script errors and accepts its confirmation dialogs. */
export const watch = (page) => {
  page.on("pageerror", (e) => errors.push(`${current}: ${e.message}`));
  page.on("dialog", (d) => d.accept());
};

/**
 * Runs `script` with a headless Chromium; fails on any accessibility violation or script error
 * it met, and prints `<name> ok` when all went well.
 */
export async function drive(name, script) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  // Waits get a minute: the whole test suite shares two cores with this browser.
  const newContext = browser.newContext.bind(browser);
  browser.newContext = async (options) => {
    const context = await newContext(options);
    context.setDefaultTimeout(60_000);
    return context;
  };
  try {
    await script(browser);
    assert.deepEqual(violations, [], `accessibility violations:\n${violations.join("\n")}`);
    assert.deepEqual(errors, [], "no script errors");
    if (timings.length) {
      const sorted = timings.map(([, ms]) => ms).sort((a, b) => a - b);
      const slowest = timings.reduce((a, b) => (b[1] > a[1] ? b : a));
      const summary = `${name}: ${timings.length} pages opened from the navigation, median ${sorted[sorted.length >> 1]} ms, slowest ${slowest[0]} ${slowest[1]} ms`;
      console.log(summary);
      // Beside the screenshots, where a run keeps what it saw.
      if (shots) writeFileSync(`${shots}/timings-${name}.txt`, `${summary}\n${timings.map(([l, ms]) => `${ms}\t${l}`).join("\n")}\n`);
    }
    console.log(`${name} ok`);
  } catch (e) {
    console.error(`failed at: ${current}`);
    // What each open page showed, to tell a slow page from a wrong one.
    for (const context of browser.contexts()) {
      for (const page of context.pages()) {
        const text = await page.evaluate(() => document.body.innerText).catch(() => "(unreadable)");
        console.error(`page ${page.url()}:\n${text.slice(0, 1500)}`);
      }
    }
    throw e;
  } finally {
    await browser.close();
  }
}
