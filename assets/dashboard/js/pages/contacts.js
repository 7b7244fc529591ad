// Contacts: search, the subscription filter, cursor pages, a new contact, and bulk actions on
// the selected contacts, or on every contact the filters match (but those unticked), with the
// job's progress.

import { html, useEffect, useState } from "../../vendor/preact-htm.js";
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

/**
 * The bulk actions: on the contacts ticked (`selected`), or, once asked, on every contact the
 * list's filters match (`all`: the filters, their count, and the contacts unticked since).
 */
function BulkBar({ selected, all, total, onSelectAll, onDone, onClear }) {
  const [job, setJob] = useState(null);
  const count = all ? all.total - all.excluded.size : selected.size;
  const start = useAction(async (kind) => {
    const [path] = BULK[kind];
    const body = all
      ? { mode: "query", filter: all.filter, excludeIds: [...all.excluded] }
      : { contactIds: [...selected] };
    const queued = await post(path, body);
    setJob({ id: queued.jobId, kind });
  });
  if (job) {
    return html`
      <div class="card">
        <${JobProgress} title=${BULK[job.kind][1]} path=${`/contacts/bulk/${encodeURIComponent(job.id)}`} onDone=${onDone} />
        <button type="button" class="secondary" onClick=${() => { setJob(null); onClear(); }}>Close</button>
      </div>`;
  }
  if (count === 0 && !all) return null;
  const run = (kind) => {
    if (kind === "delete" && !window.confirm(`Delete ${count} contacts and their events? This cannot be undone.`)) return;
    start.run(kind);
  };
  return html`
    <div class="bulkbar" role="region" aria-label="Bulk actions">
      <span id="bulk-count">${all
        ? html`All <strong>${count}</strong> contact${count === 1 ? "" : "s"} that match${all.excluded.size ? ` (${all.excluded.size} unticked)` : ""}`
        : html`<strong>${count}</strong> selected`}</span>
      ${!all && total > count && html`<button type="button" class="ghost" onClick=${onSelectAll}>Select all ${total} that match</button>`}
      <button type="button" class="secondary" disabled=${start.busy || count === 0} onClick=${() => run("subscribe")}>Subscribe</button>
      <button type="button" class="secondary" disabled=${start.busy || count === 0} onClick=${() => run("unsubscribe")}>Unsubscribe</button>
      <button type="button" class="danger" disabled=${start.busy || count === 0} onClick=${() => run("delete")}>Delete</button>
      <button type="button" class="ghost" onClick=${onClear}>Clear selection</button>
      <${ErrorBox} error=${start.error} />
    </div>`;
}

export function Contacts({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [subscribed, setSubscribed] = useState(params.get("subscribed") || "");
  const [selected, setSelected] = useState(new Set());
  const [all, setAll] = useState(null);
  const [total, setTotal] = useState(0);
  const pager = useCursor();
  const search = useSearch(params.get("search"), pager.reset);
  const applied = search.applied;
  const list = useLoad(async () => {
    setQuery({ search: applied, subscribed });
    const page = await get("/contacts", { limit: PAGE_SIZE, search: applied.trim(), subscribed, cursor: pager.cursor });
    if (!pager.cursor) setTotal(page.total);
    return page;
  }, [applied, subscribed, pager.cursor]);
  // Other filters, another selection.
  const clear = () => { setSelected(new Set()); setAll(null); };
  useEffect(clear, [applied, subscribed]);

  const ticked = (id) => (all ? !all.excluded.has(id) : selected.has(id));
  const flip = (set, ids, on) => {
    const next = new Set(set);
    for (const id of ids) (on ? next.add(id) : next.delete(id));
    return next;
  };
  // With every match selected, unticking a contact leaves it out.
  const tick = (ids, on) => (all
    ? setAll((a) => ({ ...a, excluded: flip(a.excluded, ids, !on) }))
    : setSelected((s) => flip(s, ids, on)));
  const toggle = (id) => tick([id], !ticked(id));
  const toggleAll = (rows, on) => tick(rows.map((r) => r.id), on);
  const selectAll = () => setAll({
    total,
    excluded: new Set(),
    filter: { search: applied.trim() || undefined, subscribed: subscribed === "" ? undefined : subscribed === "true" },
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
      <${BulkBar} selected=${selected} all=${all} total=${total} onSelectAll=${selectAll} onClear=${clear}
        onDone=${() => list.reload()} />
      <${Loaded} result=${list}>${(page) => page.data.length === 0
        ? html`<${Empty}>${applied || subscribed ? "No contacts match." : "No contacts yet. Create one above, import a CSV, or send and track through the API."}<//>`
        : html`
          ${pager.page === 1 && html`<p class="meta" data-total>${page.total} contact${page.total === 1 ? "" : "s"}</p>`}
          <${Table} label="Contacts" id="contacts-table">
              <thead><tr>
                <th scope="col"><input type="checkbox" aria-label="Select all on this page"
                  checked=${page.data.every((c) => ticked(c.id))} onChange=${(e) => toggleAll(page.data, e.currentTarget.checked)} /></th>
                <th scope="col">Email</th><th scope="col">Subscribed</th><th scope="col">Fields</th><th scope="col">Created</th>
              </tr></thead>
              <tbody>
                ${page.data.map((c) => html`
                  <tr key=${c.id} data-contact=${c.email}>
                    <td><input type="checkbox" aria-label=${`Select ${c.email}`} checked=${ticked(c.id)} onChange=${() => toggle(c.id)} /></td>
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
