// Contacts: search across the address and the custom fields, filters on subscription, segment
// and topic, numbered pages with the total, columns of one's choosing (kept per project in this
// browser), a new contact with its fields, and bulk actions on the selected contacts, or on
// every contact the filters match (but those unticked).

import { html, useEffect, useState } from "../../vendor/preact-htm.js";
import { get, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { Checklist } from "./onboarding.js";
import { FieldRows, dataOf, shown } from "./contact_fields.js";
import {
  Badge, Empty, ErrorBox, Field, Form, JobProgress, Loaded, Page, PagePager, date, useAction,
  useLoad, useSearch, Table } from "../ui.js";

const PAGE_SIZE = 25;

const BULK = {
  subscribe: ["/contacts/bulk-subscribe", "Subscribe"],
  unsubscribe: ["/contacts/bulk-unsubscribe", "Unsubscribe"],
  delete: ["/contacts/bulk-delete", "Delete"],
};

/** A contact's name, from the fields a name is usually kept in. */
function nameOf(data) {
  const d = data || {};
  const parts = [d.firstName || d.first_name, d.lastName || d.last_name].filter((v) => typeof v === "string" && v);
  if (parts.length) return parts.join(" ");
  return typeof d.name === "string" && d.name ? d.name : "";
}

/** The value at a field's path (`address.city`), a key holding dots read whole first. */
function valueAt(data, path) {
  if (!data) return undefined;
  if (path in data) return data[path];
  return path.split(".").reduce((at, key) => (at && typeof at === "object" ? at[key] : undefined), data);
}

/** The columns one may show, besides the address: built-in ones, then each custom field. */
const BUILT_IN = [
  ["name", "Name", (c) => nameOf(c.data) || "—"],
  ["subscribed", "Subscribed", (c) => html`${c.subscribed ? html`<${Badge} kind="ok">subscribed<//>` : html`<${Badge}>unsubscribed<//>`}
    ${c.suppression && html` <${Badge} kind="bad">suppressed: ${c.suppression.reason === "complaint" ? "complaint" : "hard bounce"}<//>`}`],
  ["fields", "Fields", (c) => Object.keys(c.data || {}).length],
  ["created", "Created", (c) => date(c.createdAt)],
  ["updated", "Updated", (c) => date(c.updatedAt)],
];
const DEFAULT_COLUMNS = ["name", "subscribed", "created"];

function useColumns(project) {
  const key = `tidings.columns.${project.id}`;
  const [chosen, setChosen] = useState(() => {
    try {
      const saved = JSON.parse(localStorage.getItem(key));
      return Array.isArray(saved) ? saved : DEFAULT_COLUMNS;
    } catch {
      return DEFAULT_COLUMNS;
    }
  });
  const toggle = (column, on) => {
    const next = on ? [...chosen.filter((c) => c !== column), column] : chosen.filter((c) => c !== column);
    setChosen(next);
    try { localStorage.setItem(key, JSON.stringify(next)); } catch { /* private mode: this page only */ }
  };
  return [chosen, toggle];
}

function ColumnChooser({ chosen, toggle, custom }) {
  return html`
    <details class="column-chooser">
      <summary>Columns</summary>
      <fieldset>
        <legend class="label">Show</legend>
        ${BUILT_IN.map(([key, label]) => html`
          <label class="check" key=${key}><input type="checkbox" checked=${chosen.includes(key)} onChange=${(e) => toggle(key, e.currentTarget.checked)} /> ${label}</label>`)}
        ${custom.map((field) => html`
          <label class="check" key=${field}><input type="checkbox" checked=${chosen.includes(field)} onChange=${(e) => toggle(field, e.currentTarget.checked)} /> <code>${field.slice(5)}</code></label>`)}
      </fieldset>
    </details>`;
}

function NewContact({ base }) {
  const [rows, setRows] = useState([]);
  const create = useAction(async (data) => {
    const fields = dataOf(rows);
    const body = { email: data.get("email"), subscribed: data.get("subscribed") === "on" };
    if (Object.keys(fields).length) body.data = fields;
    const contact = await post("/contacts", body);
    navigate(`${base}/contacts/${encodeURIComponent(contact.id)}`);
    return contact;
  }, (c) => (c._meta && c._meta.isNew ? `Contact ${c.email} created` : `${c.email} already existed; opened it`));
  return html`
    <details class="card" id="new-contact">
      <summary>New contact</summary>
      <${Form} action=${create} submit="Create contact">
        <div class="inline">
          <${Field} label="Email"><input name="email" type="email" required /><//>
          <label class="field check"><input type="checkbox" name="subscribed" checked /> Subscribed</label>
        </div>
        <fieldset class="plain">
          <legend class="label">Custom fields</legend>
          <${FieldRows} rows=${rows} setRows=${setRows} />
        </fieldset>
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
  const [segment, setSegment] = useState(params.get("segment") || "");
  const [topic, setTopic] = useState(params.get("topic") || "");
  const [page, setPage] = useState(Number(params.get("page")) || 1);
  const [selected, setSelected] = useState(new Set());
  const [all, setAll] = useState(null);
  const [chosen, toggleColumn] = useColumns(project);
  const search = useSearch(params.get("q"), () => setPage(1));
  const applied = search.applied.trim();
  const choices = useLoad(async () => {
    const [segments, topics, fields] = await Promise.all([get("/segments"), get("/topics"), get("/contacts/fields")]);
    return { segments, topics, custom: fields.fields.filter((f) => f.isCustom).map((f) => f.field) };
  }, []);
  const list = useLoad(async () => {
    setQuery({ q: applied, subscribed, segment, topic, page: page > 1 ? page : "" });
    return get("/contacts", { limit: PAGE_SIZE, page, q: applied, subscribed, segmentId: segment, topicId: topic });
  }, [applied, subscribed, segment, topic, page]);
  // Other filters, another selection.
  const clear = () => { setSelected(new Set()); setAll(null); };
  useEffect(clear, [applied, subscribed, segment, topic]);
  const filter = (set) => (e) => { set(e.currentTarget.value); setPage(1); };
  const total = list.data ? list.data.total : 0;

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
    filter: {
      q: applied || undefined,
      subscribed: subscribed === "" ? undefined : subscribed === "true",
      segmentId: segment || undefined,
      topicId: topic || undefined,
    },
  });
  const custom = choices.data ? choices.data.custom : [];
  const columns = [
    ...BUILT_IN.filter(([key]) => chosen.includes(key)),
    ...custom.filter((f) => chosen.includes(f)).map((f) => [f, f.slice(5), (c) => shown(valueAt(c.data, f.slice(5))), true]),
  ];
  const filtered = applied || subscribed || segment || topic;

  return html`
    <${Page} title="Contacts" actions=${html`
      <a class="button-link" href=${`${base}/contacts/import`}>Import CSV</a>
      <a class="button-link" href=${`${base}/fields`}>Fields</a>`}>
      <${Checklist} project=${project} />
      <${NewContact} base=${base} />
      <div class="toolbar" role="search">
        <${Field} label="Search"><input type="search" value=${search.text} onInput=${(e) => search.setText(e.currentTarget.value)} placeholder="address or any field's value" /><//>
        <div class="field narrow-field">
          <label class="label" for="subscribed-filter">Subscription</label>
          <select id="subscribed-filter" value=${subscribed} onChange=${filter(setSubscribed)}>
            <option value="">All</option>
            <option value="true">Subscribed</option>
            <option value="false">Unsubscribed</option>
          </select>
        </div>
        <div class="field narrow-field">
          <label class="label" for="segment-filter">Segment</label>
          <select id="segment-filter" value=${segment} onChange=${filter(setSegment)}>
            <option value="">Any</option>
            ${(choices.data ? choices.data.segments : []).map((s) => html`<option value=${s.id} key=${s.id}>${s.name}</option>`)}
          </select>
        </div>
        <div class="field narrow-field">
          <label class="label" for="topic-filter">Topic</label>
          <select id="topic-filter" value=${topic} onChange=${filter(setTopic)}>
            <option value="">Any</option>
            ${(choices.data ? choices.data.topics : []).map((t) => html`<option value=${t.id} key=${t.id}>${t.name}</option>`)}
          </select>
        </div>
        <${ColumnChooser} chosen=${chosen} toggle=${toggleColumn} custom=${custom} />
      </div>
      <${BulkBar} selected=${selected} all=${all} total=${total} onSelectAll=${selectAll} onClear=${clear}
        onDone=${() => list.reload()} />
      <${Loaded} result=${list}>${(result) => result.data.length === 0
        ? html`<${Empty}>${filtered ? "No contacts match." : "No contacts yet. Create one above, import a CSV, or send and track through the API."}<//>`
        : html`
          <p class="meta" data-total>${result.total} contact${result.total === 1 ? "" : "s"}${filtered ? " match" : ""}</p>
          <${Table} label="Contacts" id="contacts-table" class="table cards">
              <thead><tr>
                <th scope="col"><input type="checkbox" aria-label="Select all on this page"
                  checked=${result.data.every((c) => ticked(c.id))} onChange=${(e) => toggleAll(result.data, e.currentTarget.checked)} /></th>
                <th scope="col">Email</th>
                ${columns.map(([key, label, , isKey]) => html`<th scope="col" key=${key}>${isKey ? html`<code>${label}</code>` : label}</th>`)}
              </tr></thead>
              <tbody>
                ${result.data.map((c) => html`
                  <tr key=${c.id} data-contact=${c.email}>
                    <td data-label="Select"><input type="checkbox" aria-label=${`Select ${c.email}`} checked=${ticked(c.id)} onChange=${() => toggle(c.id)} /></td>
                    <td data-label="Email"><a href=${`${base}/contacts/${encodeURIComponent(c.id)}`}>${c.email}</a></td>
                    ${columns.map(([key, label, cell]) => html`<td key=${key} data-label=${label}>${cell(c)}</td>`)}
                  </tr>`)}
              </tbody>
            <//>
          <${PagePager} page=${page} totalPages=${Math.ceil(result.total / PAGE_SIZE)} onPage=${setPage} label="Contacts" />`}<//>
    <//>`;
}
