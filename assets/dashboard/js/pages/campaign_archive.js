// A campaign's place in the public archive: listed or not (in any state: it changes nothing that
// is sent), the fill-ins its archived copy reads in place of a contact's fields, and the links to
// the copy and to the archive.

import { html, useState } from "../../vendor/preact-htm.js";
import { api, get } from "../api.js";
import { Form, useAction, useLoad } from "../ui.js";

/** `{name: value}` as rows to edit, always with an empty row to fill. */
function rowsOf(data) {
  const rows = Object.entries(data || {}).map(([name, value]) => ({
    name, value: typeof value === "string" ? value : JSON.stringify(value),
  }));
  return [...rows, { name: "", value: "" }];
}

export function ArchivePanel({ campaign, onSaved }) {
  const [listed, setListed] = useState(campaign.public);
  const [rows, setRows] = useState(rowsOf(campaign.archiveData));
  const branding = useLoad(() => get("/branding"), []);
  const setRow = (i, part) => (e) => {
    const next = rows.map((r, j) => (j === i ? { ...r, [part]: e.currentTarget.value } : r));
    setRows(next[next.length - 1].name ? [...next, { name: "", value: "" }] : next);
  };
  const save = useAction(async () => {
    const filled = rows.filter((r) => r.name.trim());
    const archiveData = filled.length ? Object.fromEntries(filled.map((r) => [r.name.trim(), r.value])) : null;
    const saved = await api("PUT", `/campaigns/${encodeURIComponent(campaign.id)}`, { public: listed, archiveData });
    onSaved(saved);
    return saved;
  }, (c) => (c.public ? "Listed in the archive" : "Not in the archive"));
  const wentOut = campaign.status === "SENDING" || campaign.status === "SENT";
  const archiveUrl = branding.data && branding.data.archiveUrl;
  return html`
    <section class="card stack" aria-labelledby="archive-heading" id="campaign-archive">
      <h2 id="archive-heading">Archive</h2>
      <p class="meta">A public campaign is listed in the project's archive and its feed once it has gone out. The copy there is
        made for no one: no address, no personal links, and the fill-ins below in place of a contact's fields. Every recipient can
        also open their own copy from <code>{{ viewInBrowserUrl }}</code>.</p>
      <${Form} action=${save} submit="Save" id="archive-form">
        <label class="field check"><input type="checkbox" id="campaign-public" checked=${listed}
          onChange=${(e) => setListed(e.currentTarget.checked)} /> List it in the public archive</label>
        <fieldset class="fill-ins">
          <legend>Fill-ins for the archived copy</legend>
          ${rows.map((r, i) => html`
            <div class="grid2" key=${i}>
              <label class="field"><span class="label">Field ${i + 1}</span>
                <input data-fill-name=${i} value=${r.name} placeholder=${i === 0 ? "firstName" : ""} onInput=${setRow(i, "name")} /></label>
              <label class="field"><span class="label">Reads as</span>
                <input data-fill-value=${i} value=${r.value} placeholder=${i === 0 ? "reader" : ""} onInput=${setRow(i, "value")} /></label>
            </div>`)}
        </fieldset>
      <//>
      ${campaign.public && wentOut && archiveUrl && html`
        <p><a id="campaign-archive-link" href=${`${archiveUrl}/${encodeURIComponent(campaign.id)}`} target="_blank" rel="noopener">Read it in the archive</a></p>`}
      ${campaign.public && !wentOut && html`<p class="meta">It appears in the archive once it has gone out.</p>`}
      ${archiveUrl && html`<p class="meta">The archive: <a href=${archiveUrl} target="_blank" rel="noopener">${archiveUrl}</a>${" "}(its
        address is set on Public pages).</p>`}
    </section>`;
}
