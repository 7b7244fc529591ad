// One contact: its address and subscription, its custom fields (edited with the custom-field
// rules: only changed keys are sent, a removed key is sent as null), its events, its emails and
// the mail received from it (replies included).

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch } from "../api.js";
import { Verdicts } from "./inbound.js";
import { ContactConsent } from "./consent.js";
import { ContactTopics } from "./topics.js";
import { navigate } from "../router.js";
import {
  ActionButton, Badge, CursorPager, ErrorBox, Field, Form, Json, Loaded, Page, date, toast, useAction,
  useCursor, useLoad, Table } from "../ui.js";

const TYPES = [
  ["string", "Text"],
  ["number", "Number"],
  ["boolean", "True/false"],
  ["date", "Date"],
  ["json", "List or object (JSON)"],
];

function typeOf(value) {
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (value !== null && typeof value === "object") return "json";
  if (typeof value === "string" && /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z)?$/.test(value)) return "date";
  return "string";
}

function textOf(value, type) {
  if (type === "json") return JSON.stringify(value, null, 0);
  return value === null || value === undefined ? "" : String(value);
}

/** The typed value of an edited row, or throws with a message naming the field. */
function valueOf(row) {
  const text = row.text.trim();
  switch (row.type) {
    case "number": {
      const n = Number(text);
      if (text === "" || !Number.isFinite(n)) throw new Error(`${row.key} must be a number`);
      return n;
    }
    case "boolean":
      return row.text === "true";
    case "date":
      if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?)?$/.test(text)) throw new Error(`${row.key} must be a date like 2025-01-31 or 2025-01-31T09:30:00Z`);
      return text.length === 16 ? `${text}:00Z` : text.length === 19 ? `${text}Z` : text;
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`${row.key} must be valid JSON`);
      }
    default:
      return row.text;
  }
}

function rowsOf(data) {
  return Object.entries(data || {}).map(([key, value], i) => {
    const type = typeOf(value);
    return { id: i, key, type, text: textOf(value, type), original: key };
  });
}

function DataEditor({ contact, onSaved }) {
  const [rows, setRows] = useState(rowsOf(contact.data));
  const [serial, setSerial] = useState(rows.length);
  const set = (id, changes) => setRows((list) => list.map((r) => (r.id === id ? { ...r, ...changes } : r)));
  const save = useAction(async () => {
    const patchData = {};
    const kept = new Set();
    for (const row of rows) {
      const key = row.key.trim();
      if (!key) continue;
      if (kept.has(key)) throw new Error(`The key ${key} is listed twice`);
      kept.add(key);
      const value = valueOf({ ...row, key });
      if (JSON.stringify(contact.data[key]) !== JSON.stringify(value)) patchData[key] = value;
    }
    for (const key of Object.keys(contact.data || {})) if (!kept.has(key)) patchData[key] = null;
    if (Object.keys(patchData).length === 0) return contact;
    const saved = await patch(`/contacts/${encodeURIComponent(contact.id)}`, { data: patchData });
    setRows(rowsOf(saved.data));
    onSaved(saved);
    return saved;
  }, "Fields saved");
  return html`
    <section class="card" aria-labelledby="data-heading">
      <h2 id="data-heading">Custom fields</h2>
      <p class="meta">Keys are stored in <code>data</code>; templates read them as <code>{{ key }}</code> and segments as <code>data.key</code>. A field's type is fixed by the first value the project saw.
        Only changed keys are saved; Remove deletes a key; an empty text leaves the stored value as it is, and reserved keys (<code>id</code>, <code>email</code>, the link variables) are dropped.</p>
      <${Form} action=${save} submit="Save fields">
        ${rows.length === 0 && html`<p class="meta">No custom fields yet.</p>`}
        ${rows.map((row) => html`
          <div class="inline data-row" key=${row.id}>
            <${Field} label="Key"><input value=${row.key} required onInput=${(e) => set(row.id, { key: e.currentTarget.value })} /><//>
            <${Field} label="Type">
              <select value=${row.type} onChange=${(e) => set(row.id, { type: e.currentTarget.value, text: e.currentTarget.value === "boolean" ? "true" : row.text })}>
                ${TYPES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
              </select>
            <//>
            <${Field} label="Value">
              ${row.type === "boolean"
                ? html`<select value=${row.text} onChange=${(e) => set(row.id, { text: e.currentTarget.value })}><option value="true">true</option><option value="false">false</option></select>`
                : html`<input value=${row.text} inputmode=${row.type === "number" ? "decimal" : undefined} onInput=${(e) => set(row.id, { text: e.currentTarget.value })} />`}
            <//>
            <button type="button" class="danger" aria-label=${`Remove ${row.key || "this field"}`} onClick=${() => setRows((list) => list.filter((r) => r.id !== row.id))}>Remove</button>
          </div>`)}
        <div><button type="button" class="secondary" onClick=${() => { setRows([...rows, { id: serial, key: "", type: "string", text: "" }]); setSerial(serial + 1); }}>Add field</button></div>
      <//>
    </section>`;
}

function Details({ contact, onChanged }) {
  const toggle = useAction(async () => {
    const saved = await patch(`/contacts/${encodeURIComponent(contact.id)}`, { subscribed: !contact.subscribed });
    onChanged(saved);
    return saved;
  }, (c) => (c.subscribed ? "Subscribed" : "Unsubscribed"));
  const rename = useAction(async (data) => {
    const saved = await patch(`/contacts/${encodeURIComponent(contact.id)}`, { email: data.get("email") });
    onChanged(saved);
    return saved;
  }, "Email changed");
  return html`
    <section class="card">
      <dl class="props">
        <dt>Subscription</dt>
        <dd>
          ${contact.subscribed ? html`<${Badge} kind="ok">subscribed<//>` : html`<${Badge}>unsubscribed<//>`}
          ${" "}<${ActionButton} action=${toggle}>${contact.subscribed ? "Unsubscribe" : "Subscribe"}<//>
          <${ErrorBox} error=${toggle.error} />
        </dd>
        ${contact.suppression && html`
          <dt>Suppressed</dt>
          <dd id="suppression"><${Badge} kind="bad">${contact.suppression.reason === "complaint" ? "complained" : "hard bounce"}<//>
            <span class="meta"> since ${date(contact.suppression.since)}: no marketing mail reaches this contact, even subscribed.</span>
            ${contact.suppression.detail && html`<div class="meta">${contact.suppression.detail}</div>`}</dd>`}
        <dt>Created</dt><dd>${date(contact.createdAt)}</dd>
        <dt>Updated</dt><dd>${date(contact.updatedAt)}</dd>
        <dt>Id</dt><dd><code>${contact.id}</code></dd>
      </dl>
      <details>
        <summary>Change the email address</summary>
        <${Form} class="inline" action=${rename} submit="Change email">
          <${Field} label="New email"><input name="email" type="email" required value=${contact.email} /><//>
        <//>
      </details>
    </section>`;
}

function History({ title, path, params = {}, empty, columns, row }) {
  const pager = useCursor();
  const key = `${path}?${JSON.stringify(params)}`;
  const list = useLoad(() => get(path, { ...params, limit: 20, cursor: pager.cursor }), [key, pager.cursor]);
  return html`
    <section class="card">
      <h2>${title}</h2>
      <${Loaded} result=${list}>${(page) => page.data.length === 0 ? html`<p class="meta">${empty}</p>` : html`
        <${Table} label=${title}>
          <thead><tr>${columns.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
          <tbody>${page.data.map(row)}</tbody>
        <//>
        <${CursorPager} pager=${pager} list=${page} label=${title} />`}<//>
    </section>`;
}

export function Contact({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const id = params.id;
  const result = useLoad(() => get(`/contacts/${encodeURIComponent(id)}`), [id]);
  const remove = useAction(async () => {
    await del(`/contacts/${encodeURIComponent(id)}`);
    toast("Contact deleted");
    navigate(`${base}/contacts`);
  });
  const contact = result.data;
  return html`
    <${Page} title=${contact ? contact.email : "Contact"} back=${{ href: `${base}/contacts`, label: "Contacts" }}
      actions=${contact && html`<${ActionButton} class="danger" action=${remove} confirm=${`Delete ${contact.email} and its events? This cannot be undone.`}>Delete contact<//>`}>
      <${ErrorBox} error=${remove.error} />
      <${Loaded} result=${result}>${(c) => html`
        <${Details} contact=${c} onChanged=${result.setData} />
        <${ContactTopics} contact=${c} onChanged=${result.setData} />
        <${ContactConsent} contact=${c} />
        <${DataEditor} key=${c.updatedAt} contact=${c} onSaved=${result.setData} />
        <div>
          <${History} title="Events" path=${`/events/contact/${encodeURIComponent(c.id)}`} empty="No events yet."
            columns=${["When", "Event", "Data"]}
            row=${(e) => html`<tr key=${e.id}><td>${date(e.createdAt)}</td><td>${e.name}</td><td><${Json} value=${e.data} /></td></tr>`} />
          <${History} title="Emails" path=${`/contacts/${encodeURIComponent(c.id)}/emails`} empty="No emails sent to this contact yet."
            columns=${["When", "Subject", "Status"]}
            row=${(m) => html`<tr key=${m.id}><td>${date(m.createdAt)}</td><td>${m.subject}</td>
              <td><${Badge} kind=${m.status === "FAILED" ? "bad" : m.status === "QUEUED" ? "warn" : "ok"}>${m.status.toLowerCase()}<//>${m.error && html`<div class="meta">${m.error}</div>`}</td></tr>`} />
          <${History} title="Mail received" path="/inbound" params=${{ contactId: c.id }} empty="No mail received from this contact."
            columns=${["When", "Subject", "Authentication"]}
            row=${(m) => html`<tr key=${m.id} data-received=${m.subject}><td>${date(m.receivedAt)}</td>
              <td><a href=${`/app/p/${encodeURIComponent(project.id)}/inbound/${m.id}`}>${m.subject || "(no subject)"}</a>${m.replyToEmailId && html` <${Badge} kind="ok">reply<//>`}</td>
              <td><${Verdicts} m=${m} /></td></tr>`} />
        </div>`}<//>
    <//>`;
}
