// CSV import: pick a file, see what its first rows become (the server's own reading of it),
// map the columns (skip, rename, type), choose what happens to subscriptions and which topics
// the contacts join, import, and follow the job to its counts and row errors.

import { html, useState } from "../../vendor/preact-htm.js";
import { api, get } from "../api.js";
import { ErrorBox, Field, JobProgress, Page, toast, useAction, useLoad, Table } from "../ui.js";

const TYPES = [["", "As the rules read it"], ["string", "Text"], ["number", "Number"], ["boolean", "Yes/no"], ["date", "Date"]];
const SUBSCRIPTIONS = [
  ["subscribe", "New contacts subscribed; existing ones as they are"],
  ["keep", "Existing contacts as they are; new ones not subscribed"],
  ["unsubscribe", "Every contact in the file unsubscribed"],
  ["from_column", "As the file's subscribed column says"],
];

function cell(value) {
  if (value === null || value === undefined) return html`<span class="meta">—</span>`;
  return typeof value === "string" ? value : html`<code>${JSON.stringify(value)}</code>`;
}

/** The parts of an upload: the file and the choices made. */
function parts(file, choices) {
  const form = new FormData();
  form.append("file", file, file.name);
  const mapping = Object.fromEntries(Object.entries(choices.mapping).filter(([, m]) => m.skip || m.rename || m.type)
    .map(([name, m]) => [name, { ...(m.skip ? { skip: true } : {}), ...(m.rename ? { rename: m.rename } : {}), ...(m.type ? { type: m.type } : {}) }]));
  if (Object.keys(mapping).length) form.append("mapping", JSON.stringify(mapping));
  if (choices.subscription !== "subscribe") form.append("subscription", choices.subscription);
  if (choices.topics.length) form.append("topics", JSON.stringify(choices.topics));
  return form;
}

/** Each column: skipped, renamed or typed. */
function Mapping({ columns, mapping, onChange }) {
  const set = (name, change) => onChange({ ...mapping, [name]: { ...(mapping[name] || {}), ...change } });
  return html`
    <${Table} label="Columns" id="import-mapping">
      <thead><tr><th scope="col">Column</th><th scope="col">Import</th><th scope="col">As the field</th><th scope="col">Type</th></tr></thead>
      <tbody>${columns.filter((c) => c.name.toLowerCase() !== "email").map((c) => {
        const m = mapping[c.name] || {};
        return html`<tr key=${c.name} data-column=${c.name}>
          <th scope="row">${c.name}</th>
          <td><label class="check"><input type="checkbox" checked=${!m.skip} aria-label=${`Import the column ${c.name}`}
            onChange=${(e) => set(c.name, { skip: !e.currentTarget.checked })} /> import</label></td>
          <td><input aria-label=${`Field name for ${c.name}`} value=${m.rename || ""} placeholder=${c.name} disabled=${m.skip}
            onChange=${(e) => set(c.name, { rename: e.currentTarget.value.trim() })} /></td>
          <td><select aria-label=${`Type of ${c.name}`} value=${m.type || ""} disabled=${m.skip}
            onChange=${(e) => set(c.name, { type: e.currentTarget.value })}>${TYPES.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select></td>
        </tr>`;
      })}</tbody>
    <//>`;
}

export function Import({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const topics = useLoad(() => get("/topics"), []);
  const [file, setFile] = useState(null);
  const [preview, setPreview] = useState(null);
  const [choices, setChoices] = useState({ mapping: {}, subscription: "subscribe", topics: [] });
  const [job, setJob] = useState(null);
  const inspect = useAction(async (chosen, next) => {
    setJob(null);
    if (!chosen) return setPreview(null);
    setPreview(await api("POST", "/contacts/import/preview", parts(chosen, next)));
  });
  const choose = (next) => {
    setChoices(next);
    inspect.run(file, next);
  };
  const start = useAction(async () => {
    const queued = await api("POST", "/contacts/import", parts(file, choices));
    setJob(queued.jobId);
  });
  const onFile = (event) => {
    const chosen = event.currentTarget.files[0] || null;
    const fresh = { mapping: {}, subscription: "subscribe", topics: [] };
    setFile(chosen);
    setChoices(fresh);
    inspect.run(chosen, fresh);
  };
  return html`
    <${Page} title="Import contacts" back=${{ href: `${base}/contacts`, label: "Contacts" }}>
      <section class="card">
        <p>A CSV file with a header row and an <code>email</code> column (up to 5 MB). Every other column becomes a custom field unless
          you map it otherwise below; <code>id</code>, <code>subscribed</code>, <code>createdAt</code> and <code>updatedAt</code> are
          dropped. Rows whose email is already a contact update it.</p>
        <${Field} label="CSV file"><input type="file" id="csv-file" accept=".csv,text/csv" onChange=${onFile} /><//>
        <${ErrorBox} error=${inspect.error} />
      </section>
      ${preview && html`
        <section class="card" id="import-choices">
          <h2>Columns and consent</h2>
          <${Mapping} columns=${preview.columns} mapping=${choices.mapping} onChange=${(mapping) => choose({ ...choices, mapping })} />
          <${Field} label="Subscriptions">
            <select id="import-subscription" value=${choices.subscription} onChange=${(e) => choose({ ...choices, subscription: e.currentTarget.value })}>
              ${SUBSCRIPTIONS.map(([v, l]) => html`<option value=${v}>${l}</option>`)}
            </select><//>
          ${(topics.data || []).length > 0 && html`<fieldset class="plain-fieldset"><legend>Topics the contacts join</legend>
            ${topics.data.map((t) => html`<label class="check" key=${t.id}><input type="checkbox" data-import-topic=${t.name} checked=${choices.topics.includes(t.id)}
              onChange=${(e) => choose({ ...choices, topics: e.currentTarget.checked ? [...choices.topics, t.id] : choices.topics.filter((x) => x !== t.id) })} /> ${t.name}</label>`)}
          </fieldset>`}
          <p class="meta">When you choose the subscriptions or topics, what the import grants is kept in each contact's consent record.</p>
        </section>
        <section class="card" id="import-preview">
          <h2>Preview</h2>
          <p><strong>${preview.totalRows}</strong> rows. The first ${preview.rows.length}, as they will be stored:</p>
          <${Table} label="Rows of the file">
            <thead><tr>${preview.columns.map((c) => html`<th scope="col">${c.name}<div class="meta">${c.becomes ? `→ ${c.becomes}` : "dropped"}</div></th>`)}</tr></thead>
            <tbody>${preview.rows.map((row, i) => html`<tr key=${i}>${row.map((v, j) => html`<td key=${j}>${cell(v)}</td>`)}</tr>`)}</tbody>
          <//>
          ${!job && html`<div class="buttons" style="margin-top:.75rem">
            <button type="button" id="start-import" disabled=${start.busy || inspect.busy} onClick=${() => start.run()}>Import ${preview.totalRows} rows</button>
          </div>`}
          <${ErrorBox} error=${start.error} />
        </section>`}
      ${job && html`
        <section class="card" id="import-job">
          <${JobProgress} title="Import" path=${`/contacts/import/${encodeURIComponent(job)}`}
            onDone=${(j) => toast(j.status === "completed" ? `Import finished: ${j.imported} new, ${j.updated} updated` : "The import failed", j.status === "completed" ? "ok" : "warn")} />
          <p><a href=${`${base}/contacts`}>See the contacts</a></p>
        </section>`}
    <//>`;
}
