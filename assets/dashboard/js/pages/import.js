// CSV import: pick a file, see what its first rows become (the server's own reading of it),
// import, and follow the job to its counts and row errors.

import { html, useState } from "../../vendor/preact-htm.js";
import { api } from "../api.js";
import { ErrorBox, Field, JobProgress, Page, toast, useAction, Table } from "../ui.js";

function cell(value) {
  if (value === null || value === undefined) return html`<span class="meta">—</span>`;
  return typeof value === "string" ? value : html`<code>${JSON.stringify(value)}</code>`;
}

export function Import({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const [file, setFile] = useState(null);
  const [preview, setPreview] = useState(null);
  const [job, setJob] = useState(null);
  const upload = (path) => {
    const form = new FormData();
    form.append("file", file, file.name);
    return api("POST", path, form);
  };
  const inspect = useAction(async (chosen) => {
    setPreview(null);
    setJob(null);
    if (!chosen) return;
    const form = new FormData();
    form.append("file", chosen, chosen.name);
    setPreview(await api("POST", "/contacts/import/preview", form));
  });
  const start = useAction(async () => {
    const queued = await upload("/contacts/import");
    setJob(queued.jobId);
  });
  const onFile = (event) => {
    const chosen = event.currentTarget.files[0] || null;
    setFile(chosen);
    inspect.run(chosen);
  };
  return html`
    <${Page} title="Import contacts" back=${{ href: `${base}/contacts`, label: "Contacts" }}>
      <section class="card">
        <p>A CSV file with a header row and an <code>email</code> column (up to 5 MB). Every other column becomes a custom field;
          <code>id</code>, <code>subscribed</code>, <code>createdAt</code> and <code>updatedAt</code> are dropped. Rows whose email
          is already a contact update it; new contacts are subscribed.</p>
        <${Field} label="CSV file"><input type="file" id="csv-file" accept=".csv,text/csv" onChange=${onFile} /><//>
        <${ErrorBox} error=${inspect.error} />
      </section>
      ${preview && html`
        <section class="card" id="import-preview">
          <h2>Preview</h2>
          <p><strong>${preview.totalRows}</strong> rows. The first ${preview.rows.length}, as they will be stored:</p>
          <${Table} label="Rows of the file">
            <thead><tr>${preview.columns.map((c) => html`<th scope="col">${c.name}<div class="meta">${c.becomes ? `→ ${c.becomes}` : "dropped"}</div></th>`)}</tr></thead>
            <tbody>${preview.rows.map((row, i) => html`<tr key=${i}>${row.map((v, j) => html`<td key=${j}>${cell(v)}</td>`)}</tr>`)}</tbody>
          <//>
          ${!job && html`<div class="buttons" style="margin-top:.75rem">
            <button type="button" id="start-import" disabled=${start.busy} onClick=${() => start.run()}>Import ${preview.totalRows} rows</button>
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
