// The field catalogue: each field's type, coverage and usage, its values, and deleting a
// custom field from every contact (a job).

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get } from "../api.js";
import { Badge, Empty, ErrorBox, JobProgress, Json, Loaded, Page, percent, useAction, useLoad, Table } from "../ui.js";

function Values({ field }) {
  const result = useLoad(() => get(`/contacts/fields/${encodeURIComponent(field)}/values`, { limit: 20 }), [field]);
  return html`<${Loaded} result=${result}>${(v) => v.data.length === 0 ? html`<p class="meta">No values.</p>` : html`
    <ul class="values">${v.data.map((item, i) => html`<li key=${i}><${Json} value=${item.value} /> <span class="meta">× ${item.count}</span></li>`)}</ul>
    ${v.hasMore && html`<p class="meta">More values exist; the API lists them all.</p>`}`}<//>`;
}

function Usage({ field, base }) {
  const result = useLoad(() => get(`/contacts/fields/${encodeURIComponent(field)}/usage`), [field]);
  return html`<${Loaded} result=${result}>${(u) => u.segments.length + u.campaigns.length + u.workflows.length === 0
    ? html`<p class="meta">Not used by any segment.</p>`
    : html`<p>Used by segments: ${u.segments.map((s, i) => html`${i ? ", " : ""}<a href=${`${base}/segments/${encodeURIComponent(s.id)}`}>${s.name}</a>`)}</p>`}<//>`;
}

function FieldRow({ field, base, onDeleted }) {
  const [open, setOpen] = useState(null);
  const [job, setJob] = useState(null);
  const remove = useAction(async () => {
    const queued = await del(`/contacts/fields/${encodeURIComponent(field.field)}`);
    setJob(queued.jobId);
  });
  const name = field.field;
  return html`
    <tr data-field=${name}>
      <th scope="row"><code>${name}</code> ${!field.isCustom && html`<${Badge}>standard<//>`}</th>
      <td>${field.type}</td>
      <td class="num">${percent(field.coverage)}</td>
      <td>
        <div class="buttons">
          ${(field.isCustom || name === "subscribed") && html`<button type="button" class="secondary small" aria-expanded=${open === "values"} onClick=${() => setOpen(open === "values" ? null : "values")}>Values</button>`}
          ${field.isCustom && html`<button type="button" class="secondary small" aria-expanded=${open === "usage"} onClick=${() => setOpen(open === "usage" ? null : "usage")}>Usage</button>`}
          ${field.isCustom && !job && html`<button type="button" class="danger small" disabled=${remove.busy}
            onClick=${() => window.confirm(`Remove ${name} from every contact? Segments that use it stay but match nothing on it.`) && remove.run()}>Delete</button>`}
        </div>
        <${ErrorBox} error=${remove.error} />
        ${open === "values" && html`<${Values} field=${name} />`}
        ${open === "usage" && html`<${Usage} field=${name} base=${base} />`}
        ${job && html`<${JobProgress} title="Removing" path=${`/contacts/bulk/${encodeURIComponent(job)}`} onDone=${onDeleted} />`}
      </td>
    </tr>`;
}

export function Fields({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const result = useLoad(() => get("/contacts/fields"), []);
  return html`
    <${Page} title="Fields" back=${{ href: `${base}/contacts`, label: "Contacts" }}>
      <p class="meta">Every field contacts have: the standard ones and the custom fields under <code>data</code>, with the type fixed by the first value seen and the share of contacts that have it.</p>
      <${Loaded} result=${result}>${(f) => html`
        ${f.fields.filter((x) => x.isCustom).length === 0 && html`<${Empty}>No custom fields yet: they appear as contacts get <code>data</code>.<//>`}
        <${Table} label="Fields" id="fields-table">
          <thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col" class="num">Coverage</th><th scope="col">Details</th></tr></thead>
          <tbody>${f.fields.map((field) => html`<${FieldRow} key=${field.field} field=${field} base=${base} onDeleted=${() => setTimeout(result.reload, 1500)} />`)}</tbody>
        <//>`}<//>
    <//>`;
}
