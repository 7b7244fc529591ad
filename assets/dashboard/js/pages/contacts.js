// Contacts: search, the subscription filter, cursor pages, a new contact, and bulk actions on
// the selected contacts with the job's progress.

import { html, useState } from "../../vendor/preact-htm.js";
import { get, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { Checklist } from "./onboarding.js";
import {
  Badge, CursorPager, Empty, ErrorBox, Field, Form, JobProgress, Loaded, Page, date, useAction, useCursor,
  useLoad, useSearch, Table } from "../ui.js";

const PAGE_SIZE = 25;

const BULK = {
  subscribe: ["/contacts/bulk-subscribe", "Subscribe"],
  unsubscribe: ["/contacts/bulk-unsubscribe", "Unsubscribe"],
  delete: ["/contacts/bulk-delete", "Delete"],
};

function NewContact({ base }) {
  const create = useAction(async (data) => {
    const contact = await post("/contacts", { email: data.get("email"), subscribed: data.get("subscribed") === "on" });
    navigate(`${base}/contacts/${encodeURIComponent(contact.id)}`);
    return contact;
  }, (c) => (c._meta && c._meta.isNew ? `Contact ${c.email} created` : `${c.email} already existed; opened it`));
  return html`
    <details class="card" id="new-contact">
      <summary>New contact</summary>
      <${Form} class="inline" action=${create} submit="Create contact">
        <${Field} label="Email"><input name="email" type="email" required /><//>
        <label class="field check"><input type="checkbox" name="subscribed" checked /> Subscribed</label>
      <//>
    </details>`;
}

function BulkBar({ selected, onDone, onClear }) {
  const [job, setJob] = useState(null);
  const start = useAction(async (kind) => {
    const [path] = BULK[kind];
    const queued = await post(path, { contactIds: [...selected] });
    setJob({ id: queued.jobId, kind });
  });
  if (job) {
    return html`
      <div class="card">
        <${JobProgress} title=${BULK[job.kind][1]} path=${`/contacts/bulk/${encodeURIComponent(job.id)}`} onDone=${onDone} />
        <button type="button" class="secondary" onClick=${() => { setJob(null); onClear(); }}>Close</button>
      </div>`;
  }
  if (selected.size === 0) return null;
  const run = (kind) => {
    if (kind === "delete" && !window.confirm(`Delete ${selected.size} contacts and their events? This cannot be undone.`)) return;
    start.run(kind);
  };
  return html`
    <div class="bulkbar" role="region" aria-label="Bulk actions">
      <span><strong>${selected.size}</strong> selected</span>
      <button type="button" class="secondary" disabled=${start.busy} onClick=${() => run("subscribe")}>Subscribe</button>
      <button type="button" class="secondary" disabled=${start.busy} onClick=${() => run("unsubscribe")}>Unsubscribe</button>
      <button type="button" class="danger" disabled=${start.busy} onClick=${() => run("delete")}>Delete</button>
      <button type="button" class="ghost" onClick=${onClear}>Clear selection</button>
      <${ErrorBox} error=${start.error} />
    </div>`;
}

export function Contacts({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [subscribed, setSubscribed] = useState(params.get("subscribed") || "");
  const [selected, setSelected] = useState(new Set());
  const pager = useCursor();
  const search = useSearch(params.get("search"), pager.reset);
  const applied = search.applied;
  const list = useLoad(() => {
    setQuery({ search: applied, subscribed });
    return get("/contacts", { limit: PAGE_SIZE, search: applied.trim(), subscribed, cursor: pager.cursor });
  }, [applied, subscribed, pager.cursor]);

  const toggle = (id) => setSelected((s) => {
    const next = new Set(s);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    return next;
  });
  const toggleAll = (rows, on) => setSelected((s) => {
    const next = new Set(s);
    for (const row of rows) (on ? next.add(row.id) : next.delete(row.id));
    return next;
  });

  return html`
    <${Page} title="Contacts" actions=${html`
      <a class="button-link" href=${`${base}/contacts/import`}>Import CSV</a>
      <a class="button-link" href=${`${base}/fields`}>Fields</a>`}>
      <${Checklist} project=${project} />
      <${NewContact} base=${base} />
      <div class="toolbar" role="search">
        <${Field} label="Search by email"><input type="search" value=${search.text} onInput=${(e) => search.setText(e.currentTarget.value)} placeholder="part of an address" /><//>
        <div class="field narrow-field">
          <label class="label" for="subscribed-filter">Subscription</label>
          <select id="subscribed-filter" value=${subscribed} onChange=${(e) => { setSubscribed(e.currentTarget.value); pager.reset(); }}>
            <option value="">All</option>
            <option value="true">Subscribed</option>
            <option value="false">Unsubscribed</option>
          </select>
        </div>
      </div>
      <${BulkBar} selected=${selected} onClear=${() => setSelected(new Set())} onDone=${() => list.reload()} />
      <${Loaded} result=${list}>${(page) => page.data.length === 0
        ? html`<${Empty}>${applied || subscribed ? "No contacts match." : "No contacts yet. Create one above, import a CSV, or send and track through the API."}<//>`
        : html`
          ${pager.page === 1 && html`<p class="meta" data-total>${page.total} contact${page.total === 1 ? "" : "s"}</p>`}
          <${Table} label="Contacts" id="contacts-table">
              <thead><tr>
                <th scope="col"><input type="checkbox" aria-label="Select all on this page"
                  checked=${page.data.every((c) => selected.has(c.id))} onChange=${(e) => toggleAll(page.data, e.currentTarget.checked)} /></th>
                <th scope="col">Email</th><th scope="col">Subscribed</th><th scope="col">Fields</th><th scope="col">Created</th>
              </tr></thead>
              <tbody>
                ${page.data.map((c) => html`
                  <tr key=${c.id} data-contact=${c.email}>
                    <td><input type="checkbox" aria-label=${`Select ${c.email}`} checked=${selected.has(c.id)} onChange=${() => toggle(c.id)} /></td>
                    <td><a href=${`${base}/contacts/${encodeURIComponent(c.id)}`}>${c.email}</a></td>
                    <td>${c.subscribed ? html`<${Badge} kind="ok">subscribed<//>` : html`<${Badge}>unsubscribed<//>`}
                      ${c.suppression && html` <${Badge} kind="bad">suppressed: ${c.suppression.reason === "complaint" ? "complaint" : "hard bounce"}<//>`}</td>
                    <td>${Object.keys(c.data || {}).length}</td>
                    <td>${date(c.createdAt)}</td>
                  </tr>`)}
              </tbody>
            <//>
          <${CursorPager} pager=${pager} list=${page} label="Contacts" />`}<//>
    <//>`;
}
