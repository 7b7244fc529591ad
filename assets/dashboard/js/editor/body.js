// What templates and campaigns share to write a mail: the body in its format (blocks in the
// visual editor, HTML, MJML or Markdown in the code editor), the starter layouts, and the test
// send rendered as a chosen contact.

import { html, useState } from "../../vendor/preact-htm.js";
import { get, post } from "../api.js";
import { ErrorBox, Field, Loaded, useAction, useLoad } from "../ui.js";
import { BlockEditor, parseDocument } from "./blocks.js";
import { CodeEditor } from "./code.js";

export const FORMATS = [
  ["blocks", "Visual blocks"], ["html", "HTML"], ["mjml", "MJML"], ["markdown", "Markdown"],
];

const HINTS = {
  html: "HTML with Liquid: {{ firstName ?? \"there\" }}, {% if plan == \"pro\" %}…{% endif %}. Variables are HTML-escaped; {{ x | raw }} is not.",
  mjml: "MJML (mjml.io), rendered to responsive HTML when saved; Liquid works in text and attributes.",
  markdown: "Markdown, laid out as a responsive mail when saved; Liquid works anywhere.",
};

/** A new body in `format`: the blocks' starting document, or a line of the code formats. */
export function emptyBody(format) {
  if (format === "blocks") return JSON.stringify(parseDocument(""));
  if (format === "mjml") return "<mjml>\n  <mj-body>\n    <mj-section>\n      <mj-column>\n        <mj-text>Hello {{ firstName ?? \"there\" }},</mj-text>\n      </mj-column>\n    </mj-section>\n  </mj-body>\n</mjml>\n";
  if (format === "markdown") return "Hello {{ firstName ?? \"there\" }},\n\n";
  return "<p>Hello {{ firstName ?? \"there\" }},</p>\n";
}

/**
 * The body and its format. Changing the format of a body that was only the starting text
 * replaces it with the new format's; otherwise the author confirms losing the old text.
 */
export function BodyEditor({ format, body, onChange, error, textareaRef }) {
  const choose = (next) => {
    if (next === format) return;
    const untouched = body === emptyBody(format) || !body.trim();
    if (!untouched && !window.confirm("Switch the format? The body is started afresh in the new one.")) return;
    onChange({ format: next, body: emptyBody(next) });
  };
  const line = error && error.line;
  return html`
    <div class="body-editor">
      <div class="format-choice" role="radiogroup" aria-label="Body format">
        ${FORMATS.map(([value, label]) => html`
          <label class=${`format-option${format === value ? " chosen" : ""}`} key=${value}>
            <input type="radio" name="body-format" value=${value} checked=${format === value} onChange=${() => choose(value)} />${label}
          </label>`)}
      </div>
      ${format === "blocks"
        ? html`<${BlockEditor} value=${body} onChange=${(next) => onChange({ format, body: next })} />`
        : html`
          <div class="field">
            <label class="label" for="body-code">Body (${(FORMATS.find(([v]) => v === format) || FORMATS[1])[1]} with Liquid)</label>
            <${CodeEditor} id="body-code" name="body" label=${null} language=${format} value=${body} line=${line} textareaRef=${textareaRef} required=${true}
              onInput=${(next) => onChange({ format, body: next })} />
            <small class="hint">${HINTS[format]}</small>
          </div>`}
    </div>`;
}

/** The starter layouts; `onPick` gets one ({format, subject, body, type}). */
export function StarterPicker({ onPick }) {
  const starters = useLoad(() => get("/templates/starters"), []);
  return html`
    <section class="card starters" aria-labelledby="starters-heading">
      <h2 id="starters-heading">Start from a layout</h2>
      <${Loaded} result=${starters}>${(list) => html`
        <ul class="starter-list">
          ${list.map((s) => html`
            <li key=${s.id}>
              <button type="button" class="secondary starter" data-starter=${s.id} onClick=${() => onPick(s)}>
                <strong>${s.name}</strong><span class="meta">${s.description}</span>
              </button>
            </li>`)}
        </ul>`}<//>
    </section>`;
}

/** Sends a saved template or campaign (`path`, its `/test` endpoint) as a chosen contact. */
export function TestSend({ path, defaultEmail = "" }) {
  const [email, setEmail] = useState(defaultEmail);
  const [query, setQuery] = useState("");
  const [contactId, setContactId] = useState("");
  const options = useLoad(() => get("/contacts", { limit: 8, search: query.trim() }), [query]);
  const list = (options.data && options.data.data) || [];
  const send = useAction(async () => {
    const body = { email };
    if (contactId) body.contactId = contactId;
    return post(path, body);
  }, (t) => `Test sent to ${t.to}`);
  return html`
    <section class="card" aria-labelledby="test-heading">
      <h2 id="test-heading">Send a test</h2>
      <form class="stack" id="test-send" onSubmit=${(e) => { e.preventDefault(); send.run(); }}>
        <${Field} label="Send to"><input id="test-email" type="email" required value=${email} onInput=${(e) => setEmail(e.currentTarget.value)} /><//>
        <div class="inline">
          <${Field} label="Search contacts"><input type="search" id="test-contact-search" value=${query} placeholder="email" onInput=${(e) => setQuery(e.currentTarget.value)} /><//>
          <${Field} label="Render as">
            <select id="test-contact" value=${contactId} onChange=${(e) => setContactId(e.currentTarget.value)}>
              <option value="">The contact with that address, if any</option>
              ${list.map((c) => html`<option value=${c.id} key=${c.id}>${c.email}</option>`)}
            </select>
          <//>
        </div>
        <${ErrorBox} error=${send.error} />
        <div class="buttons"><button type="submit" disabled=${send.busy}>${send.busy ? "Sending…" : "Send test"}</button></div>
      </form>
    </section>`;
}
