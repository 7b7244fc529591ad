// The public pages' look and words: the name, logo and accent colour contacts see on the
// unsubscribe, preferences, confirmation and form pages, their default language, the project's
// own wording of any shipped text, and a live preview of each page in each language.

import { html, useState } from "../../vendor/preact-htm.js";
import { api, get, patch, postForText } from "../api.js";
import { ErrorBox, Field, Form, Loaded, Page, useAction, useDebouncedLoad, useLoad } from "../ui.js";

const PAGES = [["manage", "Preferences"], ["unsubscribe", "Unsubscribe"], ["confirm", "Confirmation"]];
const SECTIONS = {
  page: "Every page", unsubscribe: "Unsubscribe page", subscribe: "Subscribe page", manage: "Preferences page",
  confirm: "Confirmation page", form: "Forms", mail: "Confirmation mail", archive: "Archive",
};

/** A page as contacts would see it with the changes not saved yet, in a sandboxed frame. */
function Preview({ changes, languages }) {
  const [page, setPage] = useState("manage");
  const [language, setLanguage] = useState("");
  const [shown, setShown] = useState({ html: "", error: null });
  useDebouncedLoad(() => {
    const body = { page, changes };
    if (language) body.language = language;
    return postForText("/branding/preview", body);
  }, (text, error) => setShown((s) => (error ? { ...s, error } : { html: text, error: null })),
  [page, language, JSON.stringify(changes)], 250);
  return html`
    <section class="card" aria-labelledby="branding-preview-heading" id="branding-preview">
      <h2 id="branding-preview-heading">Preview</h2>
      <div class="grid2">
        <${Field} label="Page">
          <select id="preview-page" value=${page} onChange=${(e) => setPage(e.currentTarget.value)}>
            ${PAGES.map(([id, name]) => html`<option key=${id} value=${id}>${name}</option>`)}
          </select>
        <//>
        <${Field} label="Language" hint="As a contact with this locale sees it.">
          <select id="preview-language" value=${language} onChange=${(e) => setLanguage(e.currentTarget.value)}>
            <option value="">The default</option>
            ${languages.map((l) => html`<option key=${l.code} value=${l.code}>${l.name}</option>`)}
          </select>
        <//>
      </div>
      <${ErrorBox} error=${shown.error} />
      <iframe class="preview-frame" id="branding-frame" title="Preview of the page" sandbox="" srcdoc=${shown.html}></iframe>
    </section>`;
}

/** Name, logo, colour and default language. */
function Look({ saved, draft, setDraft, onSaved, languages }) {
  const set = (part) => (e) => setDraft({ ...draft, [part]: e.currentTarget.value });
  const upload = useAction(async (file) => {
    const body = new FormData();
    body.append("file", file, file.name);
    const image = await api("POST", "/uploads/image", body);
    setDraft({ ...draft, logo: image.id, logoUrl: image.url });
    return image;
  }, "Logo uploaded: save to use it");
  const save = useAction(async () => {
    const done = await patch("/branding", {
      name: draft.name.trim() || null,
      logo: draft.logo || null,
      color: draft.color || null,
      language: draft.language || null,
    });
    onSaved(done);
    return done;
  }, "Branding saved");
  return html`
    <section class="card" aria-labelledby="branding-look-heading" id="branding-look">
      <h2 id="branding-look-heading">Look</h2>
      <${Form} action=${save} submit="Save the look" id="branding-form">
        <${Field} label="Name shown" hint="The project's name when empty.">
          <input name="name" id="branding-name" maxlength="100" value=${draft.name} onInput=${set("name")} />
        <//>
        <${Field} label="Logo" hint="PNG, JPEG, GIF or WebP, shown at most 48 pixels high.">
          <input type="file" id="branding-logo" accept="image/png,image/jpeg,image/gif,image/webp"
            onChange=${(e) => e.currentTarget.files[0] && upload.run(e.currentTarget.files[0])} />
        <//>
        ${draft.logo && html`<p class="logo-row"><img src=${draft.logoUrl} alt="The logo" class="logo-thumb" />
          <button type="button" class="secondary small" id="branding-logo-remove" onClick=${() => setDraft({ ...draft, logo: "", logoUrl: "" })}>Remove the logo</button></p>`}
        <${ErrorBox} error=${upload.error} />
        <${Field} label="Accent colour" hint="Buttons and the line under the logo; text on it stays readable.">
          <span class="color-row">
            <input type="color" id="branding-color-pick" aria-label="Pick the accent colour" value=${draft.color || "#2f5d8a"} onInput=${set("color")} />
            <input id="branding-color" value=${draft.color} onInput=${set("color")} placeholder="#2f5d8a" maxlength="7" />
          </span>
        <//>
        <${Field} label="Default language" hint="For a contact without a locale whose browser names no language below.">
          <select id="branding-language" value=${draft.language} onChange=${set("language")}>
            <option value="">English (no default)</option>
            ${languages.map((l) => html`<option key=${l.code} value=${l.code}>${l.name}</option>`)}
          </select>
        <//>
      <//>
      ${saved.logo !== (draft.logo || null) && html`<p class="meta">The logo changes when you save.</p>`}
    </section>`;
}

/** The archive's address: a slug of the project's choosing, or its id. */
function Archive({ branding, onSaved }) {
  const [slug, setSlug] = useState(branding.slug || "");
  const save = useAction(async () => {
    const done = await patch("/branding", { slug: slug.trim() || null });
    onSaved(done);
    return done;
  }, "Archive address saved");
  return html`
    <section class="card" aria-labelledby="branding-archive-heading" id="branding-archive">
      <h2 id="branding-archive-heading">Archive</h2>
      <p class="meta">Campaigns marked public are listed at <a id="archive-url" href=${branding.archiveUrl} target="_blank" rel="noopener">${branding.archiveUrl}</a>,
        with a feed readers can follow (<a href=${`${branding.archiveUrl}/feed.atom`} target="_blank" rel="noopener">Atom</a>).</p>
      <${Form} action=${save} submit="Save the address" id="archive-slug-form">
        <${Field} label="Address" hint="3 to 64 lowercase letters, digits and hyphens; the project's id when empty.">
          <input id="branding-slug" maxlength="64" pattern="[a-z0-9][a-z0-9-]{1,62}[a-z0-9]" value=${slug}
            placeholder="acme-news" onInput=${(e) => setSlug(e.currentTarget.value.toLowerCase())} />
        <//>
      <//>
    </section>`;
}

/** The project's wording, one language and one part at a time. */
function Wording({ catalogue, texts, language, setLanguage, edits, setEdits, onSaved }) {
  const [section, setSection] = useState("manage");
  const own = texts[language] || {};
  const rows = catalogue.texts.filter((t) => t.key.startsWith(section + "."));
  const save = useAction(async () => {
    const changes = Object.fromEntries(Object.entries(edits).map(([key, text]) => [key, text.trim() ? text : null]));
    const done = await patch("/branding", { texts: { [language]: changes } });
    setEdits({});
    onSaved(done);
    return done;
  }, "Wording saved");
  const value = (key) => (key in edits ? edits[key] : own[key] || "");
  return html`
    <section class="card" aria-labelledby="branding-words-heading" id="branding-words">
      <h2 id="branding-words-heading">Wording</h2>
      <p class="meta">Leave a text empty to use the shipped one (shown greyed). Texts are plain text; <code>{{ project }}</code> and the
        variables listed print the name shown, the address and the rest.</p>
      <div class="grid2">
        <${Field} label="Language">
          <select id="words-language" value=${language} onChange=${(e) => setLanguage(e.currentTarget.value)}>
            ${catalogue.languages.map((l) => html`<option key=${l.code} value=${l.code}>${l.name}</option>`)}
          </select>
        <//>
        <${Field} label="Part">
          <select id="words-section" value=${section} onChange=${(e) => setSection(e.currentTarget.value)}>
            ${Object.entries(SECTIONS).map(([id, name]) => html`<option key=${id} value=${id}>${name}</option>`)}
          </select>
        <//>
      </div>
      <${Form} action=${save} submit="Save the wording" id="words-form">
        ${rows.map((t) => html`<${Field} key=${t.key} wide label=${t.key.split(".")[1].replaceAll("_", " ")}
            hint=${t.variables.length ? `Variables: ${t.variables.map((v) => `{{ ${v} }}`).join(", ")}` : null}>
          <input data-key=${t.key} maxlength="500" value=${value(t.key)} placeholder=${t.shipped[language]}
            onInput=${(e) => setEdits({ ...edits, [t.key]: e.currentTarget.value })} />
        <//>`)}
      <//>
    </section>`;
}

export function Branding() {
  const loaded = useLoad(() => Promise.all([get("/branding"), get("/branding/texts")]), []);
  return html`
    <${Page} title="Public pages">
      <p class="meta">The pages your contacts open from your mail (unsubscribe, preferences, confirmation) and your forms come in the
        contact's language (its <code>locale</code> field, else the browser's) in English, German, French, Spanish, Portuguese or Dutch,
        with your name, logo and colour; so does the archive of your public campaigns.</p>
      <${Loaded} result=${loaded}>${([branding, catalogue]) => html`<${Editor} key=${branding.color + branding.name}
        branding=${branding} catalogue=${catalogue} onSaved=${(b) => loaded.setData([b, catalogue])} />`}<//>
    <//>`;
}

/** The look and wording being edited, and the preview of both before they are saved. */
function Editor({ branding, catalogue, onSaved }) {
  const [draft, setDraft] = useState({
    name: branding.name || "", logo: branding.logo || "", logoUrl: branding.logoUrl || "",
    color: branding.color || "", language: branding.language || "",
  });
  const [language, setLanguageOnly] = useState("en");
  const [edits, setEdits] = useState({});
  // Edits are per language: cleared in the same update that changes it. (An effect after the
  // render would clear what was typed between the render and the effect.)
  const setLanguage = (next) => {
    setLanguageOnly(next);
    setEdits({});
  };
  const changes = {
    name: draft.name.trim() || null, logo: draft.logo || null, language: draft.language || null,
    texts: { [language]: Object.fromEntries(Object.entries(edits).map(([k, v]) => [k, v.trim() ? v : null])) },
  };
  if (/^#[0-9a-fA-F]{6}$/.test(draft.color)) changes.color = draft.color;
  return html`
    <div class="grid2">
      <div>
        <${Look} saved=${branding} draft=${draft} setDraft=${setDraft} onSaved=${onSaved} languages=${catalogue.languages} />
        <${Archive} key=${branding.slug || ""} branding=${branding} onSaved=${onSaved} />
        <${Wording} catalogue=${catalogue} texts=${branding.texts} language=${language} setLanguage=${setLanguage}
          edits=${edits} setEdits=${setEdits} onSaved=${onSaved} />
      </div>
      <${Preview} changes=${changes} languages=${catalogue.languages} />
    </div>`;
}
