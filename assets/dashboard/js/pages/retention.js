// The project's data (issue 35): how long it keeps each kind (each period in days, or the
// server's default when left empty; a job prunes what is older every hour, analytics' counts
// stay), and the whole of it as one zip.

import { html, useState } from "../../vendor/preact-htm.js";
import { download, get, patch, post } from "../api.js";
import { ErrorBox, Field, Form, Loaded, useAction, useLoad } from "../ui.js";

const PERIODS = [
  ["emailContentDays", "Email content", "The body, one-off variables and attachments of sent mail, and captured messages. The email, its status and its events stay."],
  ["eventsDays", "Events", "Tracked events, opens and clicks. The counts the overview and analytics show stay."],
  ["inboundDays", "Received mail", "Mail received for the project's inbound domains, from when it arrives."],
  ["webhookDeliveriesDays", "Webhook log", "Deliveries to the project's endpoints, once they are over."],
];

export function Retention() {
  const retention = useLoad(() => get("/retention"), []);
  const save = useAction(async (data) => {
    const body = {};
    for (const [key] of PERIODS) {
      const value = data.get(key).trim();
      body[key] = value === "" ? null : Number(value);
    }
    const saved = await patch("/retention", body);
    retention.setData(saved);
    return saved;
  }, "Retention saved");
  return html`
    <section class="card" aria-labelledby="retention-heading" id="retention">
      <h2 id="retention-heading">Data retention</h2>
      <p class="meta">How many days the project keeps each kind of data. Leave a field empty for the server's default.
        Older data is removed every hour, and the space it took is given back.</p>
      <${Loaded} result=${retention}>${(r) => html`
        <${Form} id="retention-form" action=${save} submit="Save retention">
          ${PERIODS.map(([key, label, hint]) => html`
            <${Field} key=${key} label=${`${label} (days)`} hint=${`${hint} Default: ${r.defaults[key]} days.`}>
              <input name=${key} id=${`retention-${key}`} type="number" min="1" max="36500" inputmode="numeric"
                placeholder=${String(r.defaults[key])} value=${r.custom.includes(key) ? r[key] : ""} /><//>`)}
        <//>`}<//>
    </section>`;
}

/** The project's data as one zip (contacts, events, emails), made in the background. */
export function ProjectExport() {
  const [made, setMade] = useState(null);
  const start = useAction(async () => {
    let state = await post("/project-exports", {});
    setMade(state);
    while (state.status === "queued") {
      await new Promise((r) => setTimeout(r, 500));
      state = await get(`/project-exports/${encodeURIComponent(state.id)}`);
      setMade(state);
    }
    return state;
  }, "Export ready");
  const fetchFile = useAction(() => download(made.downloadUrl, `tidings-export-${made.id}.zip`));
  return html`
    <section class="card" aria-labelledby="export-heading" id="project-export">
      <h2 id="export-heading">Export the project</h2>
      <p class="meta">All contacts, events and emails as CSV files in one zip, made in the background. The project
        keeps its newest export only; a contact's own data is exported from its page.</p>
      <${ErrorBox} error=${start.error || fetchFile.error} />
      <div class="inline">
        <button type="button" class="secondary" id="export-start" disabled=${start.busy} onClick=${() => start.run()}>
          ${start.busy ? "Exporting…" : "Export the project"}</button>
        ${made && made.status === "done" && html`
          <button type="button" id="export-download" onClick=${() => fetchFile.run()}>Download the export (${Math.max(1, Math.round(made.bytes / 1024))} KiB)</button>`}
        ${made && made.status === "failed" && html`<span class="meta">The export failed: ${made.error}</span>`}
      </div>
    </section>`;
}
