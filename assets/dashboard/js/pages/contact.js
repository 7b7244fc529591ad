// One contact: its address and subscription, its custom fields (read, or edited with the
// custom-field rules: only changed keys are sent, a removed key is sent as null), its history
// (emails, events and subscription changes as one timeline) and the mail received from it.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, download, get, patch, post } from "../api.js";
import { Verdicts } from "./inbound.js";
import { ContactConsent } from "./consent.js";
import { ContactTopics } from "./topics.js";
import { FieldRows, KeyValues, dataOf, rowsOf } from "./contact_fields.js";
import { navigate } from "../router.js";
import {
  ActionButton, Badge, CursorPager, ErrorBox, Field, Form, Loaded, Page, date, toast, useAction,
  useCursor, useLoad, Table } from "../ui.js";

function Fields({ contact, onSaved }) {
  const [editing, setEditing] = useState(false);
  const [rows, setRows] = useState(() => rowsOf(contact.data));
  const save = useAction(async () => {
    const wanted = dataOf(rows);
    const patchData = {};
    for (const [key, value] of Object.entries(wanted)) {
      if (JSON.stringify(contact.data[key]) !== JSON.stringify(value)) patchData[key] = value;
    }
    for (const key of Object.keys(contact.data || {})) if (!(key in wanted)) patchData[key] = null;
    const saved = Object.keys(patchData).length === 0
      ? contact
      : await patch(`/contacts/${encodeURIComponent(contact.id)}`, { data: patchData });
    onSaved(saved);
    setEditing(false);
    return saved;
  }, "Fields saved");
  const count = Object.keys(contact.data || {}).length;
  return html`
    <section class="card" aria-labelledby="data-heading">
      <div class="card-head">
        <h2 id="data-heading">Custom fields</h2>
        ${!editing && html`<button type="button" class="secondary" onClick=${() => { setRows(rowsOf(contact.data)); setEditing(true); }}>Edit fields</button>`}
      </div>
      <p class="meta">Templates read a field as <code>{{ key }}</code> and segments as <code>data.key</code>.
        Fields are set here, by imports and forms, and by the API: <strong>data sent with a tracked event or a send is saved
        to the contact's fields too</strong>, unless sent as <code>{"value": …, "persistent": false}</code>.</p>
      ${!editing && (count === 0
        ? html`<p class="meta">No custom fields yet.</p>`
        : html`<${KeyValues} data=${contact.data} />`)}
      ${editing && html`
        <${Form} action=${save} submit="Save fields">
          <p class="meta">A field's type is fixed by the first value the project saw. Only changed keys are saved; Remove deletes a key;
            reserved keys (<code>id</code>, <code>email</code>, the link variables) are dropped.</p>
          ${rows.length === 0 && html`<p class="meta">No custom fields yet.</p>`}
          <${FieldRows} rows=${rows} setRows=${setRows} />
          <div><button type="button" class="ghost" onClick=${() => setEditing(false)}>Cancel</button></div>
        <//>`}
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

const STATUS_KIND = { FAILED: "bad", BOUNCED: "bad", COMPLAINED: "bad", QUEUED: "warn" };

const SOURCES = {
  api: "through the API",
  bulk: "by a bulk action",
  import: "by an import",
  form: "by a form",
  link: "with a link in an email or the preference page",
  inbound: "by replying",
  smtp: "through SMTP",
  workflow: "by a workflow",
  bounce: "after a hard bounce",
  complaint: "after a complaint",
};

/** One entry of the history, as a sentence with what it links to. */
function Entry({ entry, base }) {
  if (entry.kind === "email") {
    const from = entry.campaignId
      ? html` from <a href=${`${base}/campaigns/${encodeURIComponent(entry.campaignId)}`}>a campaign</a>`
      : entry.workflowId
        ? html` from <a href=${`${base}/workflows/${encodeURIComponent(entry.workflowId)}`}>a workflow</a>`
        : entry.sourceType === "TEST" ? " as a test" : " through the API";
    return html`
      <div><${Badge}>email<//> Sent <strong>${entry.subject || "(no subject)"}</strong>${from}
        ${" "}<${Badge} kind=${STATUS_KIND[entry.status] || "ok"}>${entry.status.toLowerCase()}<//></div>
      ${entry.error && html`<div class="meta">${entry.error}</div>`}`;
  }
  if (entry.kind === "subscription") {
    const what = entry.topic ? html`the topic <strong>${entry.topic}</strong>` : "marketing mail";
    return html`
      <div><${Badge} kind=${entry.subscribed ? "ok" : ""}>${entry.subscribed ? "subscribed" : "unsubscribed"}<//>
        ${" "}${entry.subscribed ? "Subscribed to " : "Unsubscribed from "}${what}${entry.source ? ` ${SOURCES[entry.source] || `(${entry.source})`}` : ""}</div>`;
  }
  const data = entry.data && typeof entry.data === "object" && !Array.isArray(entry.data) ? entry.data : null;
  if (entry.name === "contact.snoozed" || entry.name === "contact.unsnoozed") {
    const until = data && data.until ? ` until ${date(data.until)}` : "";
    return html`<div><${Badge}>${entry.name === "contact.snoozed" ? "paused" : "resumed"}<//>
      ${" "}${entry.name === "contact.snoozed" ? `Marketing mail paused${until}` : "Marketing mail resumed"}${data && data.source ? ` ${SOURCES[data.source] || `(${data.source})`}` : ""}</div>`;
  }
  return html`
    <div><${Badge} kind="info">event<//> <strong>${entry.name}</strong></div>
    ${data && Object.keys(data).length > 0 && html`<${KeyValues} data=${data} />`}`;
}

function Timeline({ contact, base }) {
  const pager = useCursor();
  const list = useLoad(() => get(`/contacts/${encodeURIComponent(contact.id)}/timeline`, { limit: 20, cursor: pager.cursor }),
    [contact.id, contact.updatedAt, pager.cursor]);
  return html`
    <section class="card" aria-labelledby="timeline-heading">
      <h2 id="timeline-heading">History</h2>
      <p class="meta">Emails with how far each went, events and subscription changes, newest first.</p>
      <${Loaded} result=${list}>${(page) => page.data.length === 0 ? html`<p class="meta">Nothing has happened yet.</p>` : html`
        <ol class="timeline" id="timeline">
          ${page.data.map((e) => html`
            <li key=${`${e.kind}${e.id}`} data-kind=${e.kind}>
              <time datetime=${e.at}>${date(e.at)}</time>
              <div class="timeline-body"><${Entry} entry=${e} base=${base} /></div>
            </li>`)}
        </ol>
        <${CursorPager} pager=${pager} list=${page} label="History" />`}<//>
    </section>`;
}

function Received({ contact, project }) {
  const pager = useCursor();
  const list = useLoad(() => get("/inbound", { contactId: contact.id, limit: 20, cursor: pager.cursor }), [contact.id, pager.cursor]);
  return html`
    <section class="card">
      <h2>Mail received</h2>
      <${Loaded} result=${list}>${(page) => page.data.length === 0 ? html`<p class="meta">No mail received from this contact.</p>` : html`
        <${Table} label="Mail received" class="table cards">
          <thead><tr><th scope="col">When</th><th scope="col">Subject</th><th scope="col">Authentication</th></tr></thead>
          <tbody>${page.data.map((m) => html`
            <tr key=${m.id} data-received=${m.subject}><td data-label="When">${date(m.receivedAt)}</td>
              <td data-label="Subject"><a href=${`/app/p/${encodeURIComponent(project.id)}/inbound/${m.id}`}>${m.subject || "(no subject)"}</a>${m.replyToEmailId && html` <${Badge} kind="ok">reply<//>`}</td>
              <td data-label="Authentication"><${Verdicts} m=${m} /></td></tr>`)}</tbody>
        <//>
        <${CursorPager} pager=${pager} list=${page} label="Mail received" />`}<//>
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
  // A data subject's requests: everything held about them, and its erasure.
  const exportData = useAction(async () => {
    await download(`/contacts/${encodeURIComponent(id)}/export`, `contact-${id}.json`);
  }, "Contact data downloaded");
  const erase = useAction(async () => {
    const erased = await post(`/contacts/${encodeURIComponent(id)}/erase`, {});
    toast(erased.status === "done" ? "Contact erased" : "Erasing the contact; it finishes in the background");
    navigate(`${base}/contacts`);
  });
  const contact = result.data;
  return html`
    <${Page} title=${contact ? contact.email : "Contact"} back=${{ href: `${base}/contacts`, label: "Contacts" }}
      actions=${contact && html`
        <${ActionButton} action=${exportData}>Export data<//>
        <${ActionButton} class="danger" action=${erase}
          confirm=${`Erase ${contact.email}? Its data goes for good and the address is kept out of mail and imports until you lift it on the Suppressions page.`}>Erase (GDPR)<//>
        <${ActionButton} class="danger" action=${remove} confirm=${`Delete ${contact.email} and its events? This cannot be undone.`}>Delete contact<//>`}>
      <${ErrorBox} error=${remove.error || erase.error || exportData.error} />
      <${Loaded} result=${result}>${(c) => html`
        <${Details} contact=${c} onChanged=${result.setData} />
        <${ContactTopics} contact=${c} onChanged=${result.setData} />
        <${ContactConsent} contact=${c} />
        <${Fields} key=${c.updatedAt} contact=${c} onSaved=${result.setData} />
        <${Timeline} contact=${c} base=${base} />
        <${Received} contact=${c} project=${project} />`}<//>
    <//>`;
}
