// Templates: the list (search, type filter, pages) and the editor with a live preview rendered
// by the server's own renderer for a chosen contact, so what is shown is what is sent.

import { html, useRef, useState } from "../../vendor/preact-htm.js";
import { api, del, get, patch, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { BodyEditor, StarterPicker, TestSend, emptyBody } from "../editor/body.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Loaded, Page, PagePager, date, toast, useAction,
  useDebouncedLoad, useLoad, useSearch, Table, Tabs } from "../ui.js";

const TYPES = ["MARKETING", "TRANSACTIONAL", "HEADLESS"];

export function Templates({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [type, setType] = useState(params.get("type") || "");
  const [page, setPage] = useState(1);
  const search = useSearch(params.get("search"), () => setPage(1));
  const applied = search.applied;
  const list = useLoad(() => {
    setQuery({ search: applied, type });
    return get("/templates", { page, pageSize: 20, search: applied.trim(), type, sort: "updatedAt" });
  }, [applied, type, page]);
  return html`
    <${Page} title="Templates" actions=${html`<a class="button-link primary" href=${`${base}/templates/new`}>New template</a>`}>
      <div class="toolbar" role="search">
        <${Field} label="Search"><input type="search" value=${search.text} placeholder="name, description or subject" onInput=${(e) => search.setText(e.currentTarget.value)} /><//>
        <div class="field narrow-field">
          <label class="label" for="type-filter">Type</label>
          <select id="type-filter" value=${type} onChange=${(e) => { setType(e.currentTarget.value); setPage(1); }}>
            <option value="">All types</option>
            ${TYPES.map((t) => html`<option value=${t}>${t.toLowerCase()}</option>`)}
          </select>
        </div>
      </div>
      <${Loaded} result=${list}>${(p) => p.data.length === 0
        ? html`<${Empty}>${applied || type ? "No templates match." : "No templates yet. A template holds a subject, a sender and a Liquid body that /v1/send and campaigns use."}<//>`
        : html`
          <${Table} label="Templates" id="templates-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Subject</th><th scope="col">From</th><th scope="col">Updated</th></tr></thead>
            <tbody>${p.data.map((t) => html`
              <tr key=${t.id} data-template=${t.name}>
                <td><a href=${`${base}/templates/${encodeURIComponent(t.id)}`}>${t.name}</a>${t.description && html`<div class="meta">${t.description}</div>`}</td>
                <td><${Badge}>${t.type.toLowerCase()}<//></td>
                <td>${t.subject}</td><td>${t.from}</td><td>${date(t.updatedAt)}</td>
              </tr>`)}</tbody>
          <//>
          <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Templates" />`}<//>
    <//>`;
}

/** An error of the API about a template: where (line, column, the text there, the block), what and the hint. */
export function TemplateError({ error, base }) {
  if (!error) return null;
  const place = (error.errors || []).map((e) => e.received).find((r) => r && (r.line || r.block)) || {};
  const sender = error.details && error.details.reason === "DOMAIN_NOT_VERIFIED";
  const where = [place.block && `in ${place.block}`, place.line && `line ${place.line}`, place.column && `column ${place.column}`].filter(Boolean).join(", ");
  return html`
    <div class="error" role="alert">
      <p>${where ? html`<strong>${where[0].toUpperCase()}${where.slice(1)}:</strong> ` : ""}${error.message}</p>
      ${place.text && html`<p><code class="error-text">${place.text}</code></p>`}
      ${sender && html`<p>Mail can only come from a domain this project has verified (or a subdomain of one), so that it can be DKIM-signed and delivered.
        ${error.suggestion ? ` ${error.suggestion} ` : " "}<a href=${`${base}/domains`}>Go to Domains</a>.</p>`}
    </div>`;
}

// The contact the preview was last rendered for, kept while the dashboard is open: saving a new
// template moves to its own address, and the preview should still show the same person.
let lastPreviewContact = null;

// Dark mode as the clients that invert a mail's colours show it (Outlook, Gmail's apps): the
// page inverted with hues kept, and its images inverted back.
const DARK = "<style>html { filter: invert(1) hue-rotate(180deg); background: #fff; } img { filter: invert(1) hue-rotate(180deg); }</style>";

const DEVICES = [["desktop", "Desktop"], ["mobile", "Mobile"], ["dark", "Dark mode"], ["text", "Plain text"]];

/**
 * The live preview: the subject, the HTML in a sandboxed frame (no scripts) at a desktop or a
 * phone's width or as a dark-mode client inverts it, and the text part.
 */
export function Preview({ subject, body, format = "html" }) {
  const [contactQuery, setContactQuery] = useState("");
  const [contact, setContactState] = useState(lastPreviewContact);
  const setContact = (c) => { lastPreviewContact = c; setContactState(c); };
  const [shown, setShown] = useState(null);
  const [error, setError] = useState(null);
  const [device, setDevice] = useState("desktop");
  const options = useLoad(() => get("/contacts", { limit: 8, search: contactQuery.trim() }), [contactQuery]);
  useDebouncedLoad(async () => {
    if (!subject.trim() || !body) return null;
    const request = { subject, body, format };
    if (contact) request.contactId = contact.id;
    return post("/templates/preview", request);
  }, (preview, e) => {
    if (e) return setError(e);
    setShown(preview);
    setError(null);
  }, [subject, body, format, contact && contact.id], 300);
  const pick = (event) => {
    const value = event.currentTarget.value;
    const list = (options.data && options.data.data) || [];
    setContact(list.find((c) => c.id === value) || (contact && contact.id === value ? contact : null));
  };
  return html`
    <section class="card preview" aria-labelledby="preview-heading">
      <h2 id="preview-heading">Preview</h2>
      <div class="inline">
        <${Field} label="Find a contact"><input type="search" value=${contactQuery} placeholder="email" onInput=${(e) => setContactQuery(e.currentTarget.value)} /><//>
        <${Field} label="Render for">
          <select id="preview-contact" value=${contact ? contact.id : ""} onChange=${pick}>
            <option value="">No contact (variables empty)</option>
            ${contact && !((options.data && options.data.data) || []).some((c) => c.id === contact.id) && html`<option value=${contact.id}>${contact.email}</option>`}
            ${((options.data && options.data.data) || []).map((c) => html`<option value=${c.id} key=${c.id}>${c.email}</option>`)}
          </select>
        <//>
      </div>
      ${error && html`<${TemplateError} error=${error} />`}
      ${shown && html`
        <p class="subject-line" id="preview-subject">${shown.subject}</p>
        <${Tabs} label="Preview as" tabs=${DEVICES} current=${device} onChange=${setDevice}>
          ${device === "text"
            ? html`<pre>${shown.text}</pre>`
            : html`<div class=${`preview-device ${device}`}><iframe class="preview-frame" id="preview-frame" title=${`Rendered email (${device})`} sandbox=""
                srcdoc=${device === "dark" ? shown.html + DARK : shown.html}></iframe></div>`}
        <//>`}
      ${!shown && !error && html`<p class="meta">Type a subject and a body to see them rendered.</p>`}
    </section>`;
}

/**
 * Uploads an image (the server checks its bytes: PNG, JPEG, GIF or WebP) and hands back the
 * `<img>` tag that shows it, for the body.
 */
export function ImageUpload({ onUploaded, format = "html" }) {
  const upload = useAction(async (file) => {
    const form = new FormData();
    form.append("file", file);
    const image = await api("POST", "/uploads/image", form);
    onUploaded(format === "markdown" ? `![](${image.url})`
      : format === "mjml" ? `<mj-image src="${image.url}" alt="" />`
        : `<img src="${image.url}" alt="" style="max-width: 100%;">`);
    return image;
  }, "Image uploaded and added to the body");
  return html`
    <div class="field">
      <label class="label" for="image-upload">Add an image</label>
      <input id="image-upload" type="file" accept="image/png,image/jpeg,image/gif,image/webp" disabled=${upload.busy}
        onChange=${(e) => { const file = e.currentTarget.files[0]; e.currentTarget.value = ""; if (file) upload.run(file); }} />
      <small class="hint">PNG, JPEG, GIF or WebP; it gets a permanent address that anyone with it can open, as the mail's readers must.</small>
      <${ErrorBox} error=${upload.error} />
    </div>`;
}

const EMPTY = { name: "", description: "", subject: "", body: emptyBody("blocks"), format: "blocks", from: "", fromName: "", replyTo: "", type: "MARKETING" };

export function TemplateEditor({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const isNew = params.id === "new";
  const result = useLoad(() => (isNew ? Promise.resolve(EMPTY) : get(`/templates/${encodeURIComponent(params.id)}`)), [params.id]);
  return html`
    <${Loaded} result=${result}>${(t) => html`<${Editor} template=${t} isNew=${isNew} base=${base} />`}<//>`;
}

function Editor({ template, isNew, base }) {
  const [draft, setDraft] = useState({ ...EMPTY, ...template, description: template.description || "", fromName: template.fromName || "", replyTo: template.replyTo || "" });
  const set = (key) => (event) => setDraft({ ...draft, [key]: event.currentTarget.value });
  const bodyField = useRef(null);
  // An uploaded image's tag goes where the cursor was in the body (at its end otherwise).
  const insertIntoBody = (tag) => {
    const area = bodyField.current;
    const at = area && area.selectionStart !== undefined ? area.selectionEnd : draft.body.length;
    setDraft((d) => ({ ...d, body: d.body.slice(0, at) + tag + d.body.slice(at) }));
  };
  const save = useAction(async () => {
    const body = {
      name: draft.name, description: draft.description, subject: draft.subject, body: draft.body, format: draft.format,
      from: draft.from, fromName: draft.fromName, replyTo: draft.replyTo, type: draft.type,
    };
    const saved = isNew ? await post("/templates", body) : await patch(`/templates/${encodeURIComponent(template.id)}`, body);
    if (isNew) navigate(`${base}/templates/${encodeURIComponent(saved.id)}`, { replace: true });
    return saved;
  }, "Template saved");
  const duplicate = useAction(async () => {
    const copy = await post(`/templates/${encodeURIComponent(template.id)}/duplicate`);
    navigate(`${base}/templates/${encodeURIComponent(copy.id)}`);
    return copy;
  }, (c) => `Created ${c.name}`);
  const remove = useAction(async () => {
    await del(`/templates/${encodeURIComponent(template.id)}`);
    toast("Template deleted");
    navigate(`${base}/templates`);
  });
  const onSubmit = (event) => {
    event.preventDefault();
    save.run();
  };
  return html`
    <${Page} title=${isNew ? "New template" : draft.name || "Template"} back=${{ href: `${base}/templates`, label: "Templates" }}
      actions=${!isNew && html`
        <${ActionButton} action=${duplicate}>Duplicate<//>
        <${ActionButton} class="danger" action=${remove} confirm=${`Delete the template ${template.name}?`}>Delete<//>`}>
      <${ErrorBox} error=${duplicate.error || remove.error} />
      ${isNew && html`<${StarterPicker} onPick=${(s) => setDraft((d) => ({ ...d, format: s.format, body: s.body, subject: d.subject || s.subject, type: s.type, name: d.name || s.name }))} />`}
      <div class="split">
        <form class="card stack" id="template-form" onSubmit=${onSubmit}>
          <div class="grid2">
            <${Field} label="Name"><input name="name" required maxlength="200" value=${draft.name} onInput=${set("name")} /><//>
            <${Field} label="Type">
              <select name="type" value=${draft.type} onChange=${set("type")}>${TYPES.map((t) => html`<option value=${t}>${t.toLowerCase()}</option>`)}</select>
            <//>
          </div>
          <${Field} label="Description" hint="For your team; never sent."><input name="description" value=${draft.description} onInput=${set("description")} /><//>
          <div class="grid2">
            <${Field} label="From address" hint="On a verified domain of this project."><input name="from" type="email" required value=${draft.from} onInput=${set("from")} /><//>
            <${Field} label="From name"><input name="fromName" value=${draft.fromName} onInput=${set("fromName")} /><//>
          </div>
          <${Field} label="Reply-to"><input name="replyTo" type="email" value=${draft.replyTo} onInput=${set("replyTo")} /><//>
          <${Field} label="Subject"><input name="subject" required value=${draft.subject} onInput=${set("subject")} /><//>
          <${BodyEditor} format=${draft.format} body=${draft.body} error=${save.error} textareaRef=${bodyField}
            onChange=${({ format, body }) => setDraft((d) => ({ ...d, format, body }))} />
          ${draft.format !== "blocks" && html`<${ImageUpload} format=${draft.format} onUploaded=${insertIntoBody} />`}
          <${TemplateError} error=${save.error} base=${base} />
          <div class="buttons"><button type="submit" disabled=${save.busy}>${save.busy ? "Saving…" : isNew ? "Create template" : "Save template"}</button>
            ${!isNew && html`<span class="meta">Updated ${date(template.updatedAt)}</span>`}</div>
        </form>
        <div class="stack preview-column">
          <${Preview} subject=${draft.subject} body=${draft.body} format=${draft.format} />
          ${!isNew && html`<${TestSend} path=${`/templates/${encodeURIComponent(template.id)}/test`} />`}
        </div>
      </div>
    <//>`;
}
