// The project's tracking domain (issue 34, item 6): its own host for tracked links and the
// open pixel, proven by a CNAME to this server and a TXT record with the project's token, then
// used by all its mail. The reverse proxy in front of Tidings must serve the host too (the
// README's recipe).

import { html } from "../../vendor/preact-htm.js";
import { api, post } from "../api.js";
import { ActionButton, Badge, Copy, ErrorBox, Field, Form, Loaded, Table, date, useAction, useLoad } from "../ui.js";

/** The tracking domain, or `{domain: null}` when none is set (404): `Loaded` reads null as
 * still loading. */
async function current() {
  try {
    return await api("GET", "/tracking-domain");
  } catch (e) {
    if (e.status === 404) return { domain: null };
    throw e;
  }
}

export function TrackingDomainCard() {
  const domain = useLoad(current, []);
  const set = useAction(async (data) => {
    const saved = await api("PUT", "/tracking-domain", { domain: data.get("domain") });
    domain.setData(saved);
    return saved;
  }, (d) => `${d.domain} set: publish its records, then verify`);
  const verify = useAction(async () => {
    const checked = await post("/tracking-domain/verify", {});
    domain.setData(checked);
    return checked;
  }, (d) => (d.verified ? `${d.domain} verified: mail tracks on it now` : `${d.domain} is not verified yet`));
  const remove = useAction(async () => {
    await api("DELETE", "/tracking-domain");
    domain.setData({ domain: null });
  }, "Tracking domain removed: mail tracks on the server's address");
  return html`
    <section class="card" aria-labelledby="tracking-heading" id="tracking-domain">
      <h2 id="tracking-heading">Tracking domain</h2>
      <p class="meta">Tracked links and the open pixel point at this server's address unless the project has a host of its own,
        such as <code>track.example.com</code>: links on your own domain look trustworthy and keep your reputation yours.
        Publish the two records, serve the host through your reverse proxy with HTTPS, then verify. Single links stay untracked
        with <code>data-notrack</code> on the <code>${"<a>"}</code>; a whole campaign with its "Track clicks" box.</p>
      <${Loaded} result=${domain}>${(d) => d.domain
        ? html`
          <p><code id="tracking-name">${d.domain}</code> ${d.verified ? html`<${Badge} kind="ok">verified<//>` : html`<${Badge} kind="warn">pending<//>`}
            <span class="meta">${d.checkedAt ? ` last checked ${date(d.checkedAt)}` : " not checked yet"}${d.lastError ? `: ${d.lastError}` : ""}</span></p>
          <div class="buttons">
            <${ActionButton} action=${verify}>${verify.busy ? "Checking…" : "Verify now"}<//>
            <${ActionButton} class="danger" action=${remove} confirm=${`Remove ${d.domain}? Mail goes back to the server's address; links already sent keep working while the host points here.`}>Remove<//>
          </div>
          <${ErrorBox} error=${verify.error || remove.error} />
          <${Table} label=${`DNS records of ${d.domain}`} class="table records">
            <caption>DNS records to publish at your DNS provider</caption>
            <thead><tr><th scope="col">Record</th><th scope="col">Name and value</th></tr></thead>
            <tbody>${d.records.map((r) => html`
              <tr key=${r.type} data-type=${r.type}>
                <td class="record-kind"><strong>${r.type}</strong></td>
                <td>
                  <div class="record-value"><span class="meta">Name</span><code>${r.name}</code><${Copy} text=${r.name} label="Copy name" /></div>
                  <div class="record-value"><span class="meta">Value</span><code class="record">${r.value}</code><${Copy} text=${r.value} label="Copy value" /></div>
                </td>
              </tr>`)}</tbody>
          <//>`
        : html`<${Form} class="inline" id="tracking-form" action=${set} submit="Set tracking domain">
            <${Field} label="Tracking host"><input name="domain" id="tracking-input" required placeholder="track.example.com" /><//>
          <//>`}<//>
    </section>`;
}
