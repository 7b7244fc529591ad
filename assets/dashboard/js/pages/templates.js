// Templates: the list (search, type filter, pages) and the editor with a live preview rendered
// by the server's own renderer for a chosen contact, so what is shown is what is sent.

import { html, useRef, useState } from "../../vendor/preact-htm.js";
import { api, del, get, patch, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Loaded, Page, PagePager, date, toast, useAction,
  useDebounced, useLoad, useSearch, Table, Tabs } from "../ui.js";

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

/** An error of the API about a template, with the Liquid line and the sender rule explained. */
export function TemplateError({ error, base }) {
  if (!error) return null;
  const line = error.line;
  const sender = error.details && error.details.reason === "DOMAIN_NOT_VERIFIED";
  return html`
    <div class="error" role="alert">
      <p>${line ? html`<strong>Line ${line}:</strong> ` : ""}${error.message}</p>
      ${sender && html`<p>Mail can only come from a domain this project has verified (or a subdomain of one), so that it can be DKIM-signed and delivered.
        ${error.suggestion ? ` ${error.suggestion} ` : " "}<a href=${`${base}/domains`}>Go to Domains</a>.</p>`}
    </div>`;
}

/** The live preview: the subject, the HTML in a sandboxed frame (no scripts) and the text. */
export function Preview({ subject, body }) {
  const [contactQuery, setContactQuery] = useState("");
  const [contact, setContact] = useState(null);
  const [shown, setShown] = useState(null);
  const [error, setError] = useState(null);
  const [tab, setTab] = useState("html");
  const options = useLoad(() => get("/contacts", { limit: 8, search: contactQuery.trim() }), [contactQuery]);
  useDebounced(async () => {
    if (!subject.trim() || !body) {
      setShown(null);
      return;
    }
    try {
      const request = { subject, body };
      if (contact) request.contactId = contact.id;
      setShown(await post("/templates/preview", request));
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, [subject, body, contact && contact.id], 300);
  const pick = (event) => {
    const value = event.currentTarget.value;
    const list = (options.data && options.data.data) || [];
    setContact(list.find((c) => c.id === value) || null);
  };
  return html`
    <section class="card" aria-labelledby="preview-heading">
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
        <${Tabs} label="Preview format" tabs=${[["html", "HTML"], ["text", "Plain text"]]} current=${tab} onChange=${setTab}>
          ${tab === "html"
            ? html`<iframe class="preview-frame" id="preview-frame" title="Rendered email" sandbox="" srcdoc=${shown.html}></iframe>`
            : html`<pre>${shown.text}</pre>`}
        <//>`}
      ${!shown && !error && html`<p class="meta">Type a subject and a body to see them rendered.</p>`}
    </section>`;
}

/**
 * Uploads an image (the server checks its bytes: PNG, JPEG, GIF or WebP) and hands back the
 * `<img>` tag that shows it, for the body.
 */
function ImageUpload({ onUploaded }) {
  const upload = useAction(async (file) => {
    const form = new FormData();
    form.append("file", file);
    const image = await api("POST", "/uploads/image", form);
    onUploaded(`<img src="${image.url}" alt="" style="max-width: 100%;">`);
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

const EMPTY = { name: "", description: "", subject: "", body: "<p>Hello {{ firstName ?? \"there\" }},</p>\n", from: "", fromName: "", replyTo: "", type: "MARKETING" };

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
      name: draft.name, description: draft.description, subject: draft.subject, body: draft.body,
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
          <${Field} label="Body (HTML with Liquid)" hint="Variables: {{ firstName }}, {{ plan ?? \"free\" }}, {{ unsubscribeUrl }}; {% if %} and {% for %} work. Variables are HTML-escaped; {{ x | raw }} is not.">
            <textarea class="code" name="body" ref=${bodyField} required spellcheck="false" value=${draft.body} onInput=${set("body")}></textarea>
          <//>
          <${ImageUpload} onUploaded=${insertIntoBody} />
          <${TemplateError} error=${save.error} base=${base} />
          <div class="buttons"><button type="submit" disabled=${save.busy}>${save.busy ? "Saving…" : isNew ? "Create template" : "Save template"}</button>
            ${!isNew && html`<span class="meta">Updated ${date(template.updatedAt)}</span>`}</div>
        </form>
        <${Preview} subject=${draft.subject} body=${draft.body} />
      </div>
    <//>`;
}
