// The suppression list: addresses and whole domains the project's mail does not go to. Hard
// bounces and complaints land here (they keep marketing mail away); entries added here or
// imported keep all mail away. Export and import as CSV.

import { html, useState } from "../../vendor/preact-htm.js";
import { api, del, download, get, post } from "../api.js";
import {
  Badge, CursorPager, Empty, ErrorBox, Field, Form, Loaded, Page, Table, date, useAction, useCursor, useLoad, useSearch,
} from "../ui.js";

const SOURCES = { bounce: "hard bounce", complaint: "complaint", manual: "added", import: "imported" };

export function Suppressions() {
  const pager = useCursor();
  const search = useSearch("", pager.reset);
  const list = useLoad(() => get("/suppressions", { limit: 25, cursor: pager.cursor, search: search.applied }), [pager.cursor, search.applied]);
  const [imported, setImported] = useState(null);
  const add = useAction(async (data, form) => {
    const value = data.get("value").trim();
    const body = value.includes("@") ? { email: value } : { domain: value };
    const reason = data.get("reason").trim();
    if (reason) body.reason = reason;
    const entry = await post("/suppressions", body);
    form.reset();
    pager.reset();
    list.reload();
    return entry;
  }, (e) => `${e.value} is suppressed`);
  const remove = useAction(async (entry) => {
    await del(`/suppressions/${encodeURIComponent(entry.id)}`);
    list.reload();
    return entry;
  }, (e) => `${e.value} may get mail again`);
  const upload = useAction(async (data, form) => {
    const file = data.get("file");
    const body = new FormData();
    body.append("file", file, file.name);
    const done = await api("POST", "/suppressions/import", body);
    form.reset();
    setImported(done);
    pager.reset();
    list.reload();
    return done;
  }, (d) => `${d.added} added, ${d.already} listed before, ${d.skipped} skipped`);
  const exportAll = useAction(() => download("/suppressions/export", "suppressions.csv"), "Suppression list downloaded");
  return html`
    <${Page} title="Suppressions" actions=${html`<button type="button" class="secondary" id="suppressions-export" disabled=${exportAll.busy} onClick=${() => exportAll.run()}>Export CSV</button>`}>
      <p class="meta">Mail does not go to these addresses and domains (a domain covers its subdomains). Hard bounces and complaints land
        here and keep marketing mail away; what you add or import keeps all of this project's mail away.</p>
      <${ErrorBox} error=${exportAll.error || remove.error} />
      <div class="grid2">
        <section class="card" aria-labelledby="add-suppression">
          <h2 id="add-suppression">Add an address or a domain</h2>
          <${Form} action=${add} submit="Suppress" id="suppression-form">
            <${Field} label="Address or domain"><input name="value" required maxlength="320" placeholder="someone@example.com or example.com" /><//>
            <${Field} label="Reason" hint="Optional, for your records."><input name="reason" maxlength="500" /><//>
          <//>
        </section>
        <section class="card" aria-labelledby="import-suppressions">
          <h2 id="import-suppressions">Import a CSV file</h2>
          <${Form} action=${upload} submit="Import" id="suppression-import">
            <${Field} label="File" hint="A column email, address, domain or value (else the first column), and reason if you have one."><input type="file" name="file" accept=".csv,text/csv" required /><//>
          <//>
          ${imported && imported.errors.length > 0 && html`<ul class="plain" id="suppression-import-errors">${imported.errors.map((e) => html`<li key=${e.row}>Row ${e.row}: ${e.message}</li>`)}</ul>`}
        </section>
      </div>
      <${Field} label="Search"><input type="search" id="suppression-search" value=${search.text} onInput=${(e) => search.setText(e.currentTarget.value)} placeholder="Part of an address or domain" /><//>
      <${Loaded} result=${list}>${(page) => page.data.length === 0
        ? html`<${Empty}>${search.applied ? "Nothing matches." : "No suppressions. Hard bounces and complaints will appear here."}<//>`
        : html`<${Table} label="Suppressions" id="suppressions-table">
            <thead><tr><th scope="col">Address or domain</th><th scope="col">Source</th><th scope="col">Keeps away</th><th scope="col">Reason</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${page.data.map((e) => html`<tr key=${e.id} data-suppression=${e.value}>
              <th scope="row">${e.type === "erased" ? html`An erased contact's address <${Badge}>erased<//>` : e.value}${e.type === "domain" && html` <${Badge}>domain<//>`}</th>
              <td>${SOURCES[e.source] || e.source}</td>
              <td>${e.source === "bounce" || e.source === "complaint" ? "marketing mail" : "all mail"}</td>
              <td>${e.reason || "—"}</td>
              <td>${date(e.createdAt)}</td>
              <td><button type="button" class="danger small" aria-label=${`Remove ${e.type === "erased" ? "the erased address" : e.value} from the list`} onClick=${() => remove.run(e)}>Remove</button></td>
            </tr>`)}</tbody>
          <//>
          <${CursorPager} pager=${pager} list=${page} label="Suppressions" />`}<//>
    <//>`;
}
