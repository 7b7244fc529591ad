// The public pages' look and words (issue 32, items 7 and 9): the Public pages page gives the
// project a name, a logo, a colour, a default language and its own wording, previewed before it
// is saved; then a contact opens its preferences page from a mail (read from the capture
// outbox), changes a topic there, and the page comes in each shipped language with the
// project's dress. At 1400 and 375 px with axe. Run by the cargo test
// `browser::dashboard_in_chromium` after forms.mjs.

import assert from "node:assert/strict";
import { F, api, audit, base, drive, fitsAPhone, linkInMail, lookup, nav, shot, signInToAcme, step, toast, watch } from "./lib.mjs";

// A 120x36 PNG: a green square and a dark bar.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAHgAAAAkCAYAAABCKP5eAAAAbElEQVR42u3ZoQ0AIAxFwXpmwDEAm7AJ+7sisShCwr3kL9CTjZAkSU9U5sibc3HAAizAAgwYMGDAgAED3tXW084HGDBgwIABAwYMGDBgwAYYMGDAgAEDBuzZ4NkgwAIswIABAwYMGLAkSfqwBfp2kQd/1A2DAAAAAElFTkSuQmCC", "base64");

/** The preferences link of the newest captured mail to `to` with `subject`. */
const manageLink = (to, subject) => linkInMail(to, (s) => s === subject, /href="([^"]*\/manage\/[^"]+)"/);

/** The preview frame's document. */
const frame = (page) => page.frameLocator("#branding-frame");

await drive("branding", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  watch(page);
  await signInToAcme(page, F.owner);

  step("public pages: name, logo, colour and default language, previewed before they are saved");
  await nav(page, "Public pages");
  await frame(page).getByRole("heading", { name: "Email preferences" }).waitFor();
  await page.fill("#branding-name", "Acme Weekly");
  await page.setInputFiles("#branding-logo", { name: "logo.png", mimeType: "image/png", buffer: PNG });
  await toast(page, "Logo uploaded: save to use it");
  await page.fill("#branding-color", "#0b6e4f");
  await page.selectOption("#branding-language", "de");
  await frame(page).getByRole("heading", { name: "E-Mail-Einstellungen" }).waitFor();
  await frame(page).getByRole("img", { name: "Acme Weekly" }).waitFor();
  assert.equal((await api("GET", "/branding")).body.name, null, "nothing is saved by the preview");
  await page.getByRole("button", { name: "Save the look" }).click();
  await toast(page, "Branding saved");
  const saved = (await api("GET", "/branding")).body;
  assert.deepEqual([saved.name, saved.color, saved.language], ["Acme Weekly", "#0b6e4f", "de"]);
  assert.match(saved.logoUrl, /^\/uploads\/\w+\.png$/);

  step("wording: the German preferences page's title in the project's words");
  await page.selectOption("#words-language", "de");
  await page.selectOption("#words-section", "manage");
  await page.locator('#words-form input[data-key="manage.title"]').fill("Ihre Post von {{ project }}");
  await frame(page).getByRole("heading", { name: "Ihre Post von Acme Weekly" }).waitFor();
  await page.selectOption("#preview-page", "unsubscribe");
  await page.selectOption("#preview-language", "fr");
  await frame(page).getByRole("heading", { name: "Se désabonner" }).waitFor();
  await page.getByRole("button", { name: "Save the wording" }).click();
  await toast(page, "Wording saved");
  assert.equal((await api("GET", "/branding")).body.texts.de["manage.title"], "Ihre Post von {{ project }}");
  await audit(page, "public pages");
  await shot(page, "public-pages");
  await fitsAPhone(page, "public pages");

  step("a contact's preferences page, from a mail: topics changed there, in the project's dress");
  const email = "ida@example.com";
  const { body: ida } = await api("POST", "/contacts", { email, subscribed: true });
  const { body: topic } = await api("POST", "/topics", { name: "Weekly digest", description: "Every Friday", defaultOptIn: false });
  const sent = await api("POST", "/v1/send", {
    to: email, from: "hello@example.test", subject: "Your preferences", body: '<p><a href="{{ manageUrl }}">Preferences</a></p>',
  });
  assert.equal(sent.status, 200, JSON.stringify(sent.body));
  const path = await manageLink(email, "Your preferences");
  const reader = await context.newPage();
  watch(reader);
  await reader.goto(base + path);
  // No locale, a browser in English: the project's words only replace the German title.
  await reader.getByRole("heading", { name: "Email preferences" }).waitFor();
  await reader.getByRole("img", { name: "Acme Weekly" }).waitFor();
  await reader.getByRole("button", { name: "Subscribe to Weekly digest" }).click();
  await reader.getByText("Your preference is saved.").waitFor();
  assert.equal((await api("GET", `/contacts/${ida.id}`)).body.topics[topic.id], true);
  await reader.getByRole("button", { name: "Unsubscribe from Weekly digest" }).waitFor();
  await audit(reader, "preferences page");
  await shot(reader, "preferences-page");

  step("the same page in each shipped language, from the contact's locale");
  const titles = { de: "Ihre Post von Acme Weekly", fr: "Préférences d’e-mail", es: "Preferencias de correo", pt: "Preferências de email", nl: "E-mailvoorkeuren", en: "Email preferences" };
  for (const [locale, title] of Object.entries(titles)) {
    await api("PATCH", `/contacts/${ida.id}`, { data: { locale } });
    await reader.goto(base + path);
    await reader.getByRole("heading", { name: title }).waitFor();
    assert.equal(await reader.getAttribute("html", "lang"), locale);
    await audit(reader, `preferences page, ${locale}`);
    if (locale === "de") await shot(reader, "preferences-page-de");
  }
  await reader.setViewportSize({ width: 375, height: 812 });
  const readerOverflow = await reader.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(readerOverflow <= 1, `the preferences page fits a phone (overflow ${readerOverflow}px)`);
  await audit(reader, "preferences page, phone");
  assert.ok(await lookup(email));
  await context.close();
});
