// Sender domains: add one, publish its DNS records (copy buttons, per-record status), verify
// now, delete; why a sender is refused until its domain is verified; and a verified domain's
// warm-up.

import { html } from "../../vendor/preact-htm.js";
import { del, get, post } from "../api.js";
import { WarmupPanel } from "./domain_warmup.js";
import { TrackingDomainCard } from "./tracking_domain.js";
import { ActionButton, Badge, Copy, Empty, ErrorBox, Field, Form, Loaded, Page, date, toast, useAction, useLoad, Table } from "../ui.js";

export function RecordStatus({ record }) {
  if (record.found === true) return html`<${Badge} kind="ok">found<//>`;
  if (record.error) return html`<${Badge} kind="warn">no answer (${record.error})<//>`;
  if (record.found === false) return html`<${Badge} kind="bad">not found<//>`;
  return html`<${Badge}>not checked yet<//>`;
}

function DomainCard({ domain, onChanged, onDeleted }) {
  const id = encodeURIComponent(domain.id);
  const verify = useAction(async () => {
    const checked = await get(`/domains/${id}/verify`);
    onChanged(checked);
    return checked;
  }, (d) => (d.status === "verified" ? `${d.domain} is verified` : `${d.domain} is still pending: some records are missing`));
  const remove = useAction(async () => {
    await del(`/domains/${id}`);
    toast(`${domain.domain} removed`);
    onDeleted();
  });
  return html`
    <article class="card" data-domain=${domain.domain}>
      <header class="page-head">
        <h2>${domain.domain} ${domain.status === "verified" ? html`<${Badge} kind="ok">verified<//>` : html`<${Badge} kind="warn">pending<//>`}</h2>
        <div class="actions">
          <${ActionButton} action=${verify}>${verify.busy ? "Checking…" : "Verify now"}<//>
          <${ActionButton} class="danger" action=${remove} confirm=${`Remove ${domain.domain}? Mail can no longer be sent from it.`}>Delete<//>
        </div>
      </header>
      <${ErrorBox} error=${verify.error || remove.error} />
      <p class="meta">Added ${date(domain.createdAt)} · last checked ${date(domain.lastCheckedAt)}${domain.verifiedAt ? ` · verified ${date(domain.verifiedAt)}` : ""}</p>
      <${Table} label=${`DNS records of ${domain.domain}`} class="table records">
        <caption>DNS records to publish at your DNS provider</caption>
        <thead><tr><th scope="col">Record</th><th scope="col">Name and value</th></tr></thead>
        <tbody>${domain.records.map((r) => html`
          <tr key=${r.purpose} data-purpose=${r.purpose}>
            <td class="record-kind">
              <strong>${r.type}</strong> · ${r.purpose}${!r.required && html` <span class="meta">(optional)</span>`}
              <div><${RecordStatus} record=${r} /></div>
            </td>
            <td>
              <div class="record-value"><span class="meta">Name</span><code>${r.name}</code><${Copy} text=${r.name} label="Copy name" /></div>
              <div class="record-value"><span class="meta">Value</span><code class="record">${r.value}</code><${Copy} text=${r.value} label="Copy value" /></div>
            </td>
          </tr>`)}</tbody>
      <//>
      ${domain.status === "verified" && html`<${WarmupPanel} domain=${domain} />`}
    </article>`;
}

/** The project's sandbox sender, verified while the server captures mail: a first hour without DNS. */
function SandboxCard({ sandbox, outbox }) {
  return html`
    <section class="card" id="sandbox-domain" aria-labelledby="sandbox-heading" data-verified=${String(sandbox.verified)}>
      <h2 id="sandbox-heading">Sandbox sender ${sandbox.verified ? html`<${Badge} kind="ok">verified while mail is captured<//>` : html`<${Badge}>not for sending<//>`}</h2>
      ${sandbox.verified
        ? html`<p>No domain yet? Until a relay is configured, send from any address at
            <code id="sandbox-name">${sandbox.domain}</code> <${Copy} text=${`hello@${sandbox.domain}`} label="Copy an address" />:
            templates, test sends, campaigns and workflows all work, and every message stays in the <a href=${outbox}>Outbox</a>.</p>`
        : html`<p class="meta">${sandbox.reason}</p>`}
    </section>`;
}

export function Domains({ project }) {
  const list = useLoad(() => get(`/domains/project/${encodeURIComponent(project.id)}`), [project.id]);
  const sandbox = useLoad(() => get("/domains/sandbox"), [project.id]);
  const add = useAction(async (data, form) => {
    const created = await post("/domains", { domain: data.get("domain") });
    form.reset();
    list.setData([created, ...(list.data || [])]);
    return created;
  }, (d) => `${d.domain} added: publish its records, then verify`);
  const replace = (next) => list.setData(list.data.map((d) => (d.id === next.id ? next : d)));
  return html`
    <${Page} title="Domains">
      <section class="card">
        <p>Tidings sends mail only from domains this project has verified, or their subdomains: a template or send
          from any other address is refused. Verifying proves the domain is yours (a TXT record) and publishes the key every
          message is DKIM-signed with, so receivers can trust it. Checks repeat every few minutes; a domain whose records
          disappear goes back to pending.</p>
        <${Form} class="inline" id="domain-form" action=${add} submit="Add domain">
          <${Field} label="Domain"><input name="domain" required placeholder="mail.example.com" /><//>
        <//>
      </section>
      ${sandbox.data && html`<${SandboxCard} sandbox=${sandbox.data} outbox=${`/app/p/${encodeURIComponent(project.id)}/outbox`} />`}
      <${Loaded} result=${list}>${(domains) => domains.length === 0
        ? html`<${Empty}>No domains yet. Add the domain you send from.<//>`
        : domains.map((d) => html`<${DomainCard} key=${d.id} domain=${d} onChanged=${replace} onDeleted=${() => list.setData(list.data.filter((x) => x.id !== d.id))} />`)}<//>
      <${TrackingDomainCard} key=${project.id} />
    <//>`;
}
