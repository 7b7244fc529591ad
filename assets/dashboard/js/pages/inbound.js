// Inbound: mail received for this project's domains. Domains (the MX and ownership records to
// publish, verify now), routes (what becomes of mail to an address: a webhook, a forward, kept
// here), and the messages received, each with its authentication results and, when kept, its
// HTML in a sandboxed frame, its text, headers and attachments.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, post } from "../api.js";
import { RecordStatus } from "./domains.js";
import {
  ActionButton, Badge, Copy, CursorPager, Empty, ErrorBox, Field, Form, Loaded, Page, Table, Tabs, date, toast,
  useAction, useCursor, useLoad } from "../ui.js";

/** A result of SPF, DKIM or DMARC as a badge. */
function Verdict({ name, value }) {
  const kind = value === "pass" ? "ok" : value === "fail" || value === "permerror" ? "bad" : value === "none" ? "" : "warn";
  return html`<${Badge} kind=${kind}>${name} ${value}<//>`;
}

export function Verdicts({ m }) {
  return html`<span class="badges"><${Verdict} name="SPF" value=${m.spf} /> <${Verdict} name="DKIM" value=${m.dkim} /> <${Verdict} name="DMARC" value=${m.dmarc} /></span>`;
}

function DomainCard({ domain, onChanged, onDeleted }) {
  const id = encodeURIComponent(domain.id);
  const verify = useAction(async () => {
    const checked = await get(`/inbound-domains/${id}/verify`);
    onChanged(checked);
    return checked;
  }, (d) => (d.status === "verified" ? `${d.domain} receives mail here` : `${d.domain} is still pending`));
  const remove = useAction(async () => {
    await del(`/inbound-domains/${id}`);
    toast(`${domain.domain} removed`);
    onDeleted();
  });
  return html`
    <article class="card" data-inbound-domain=${domain.domain}>
      <header class="page-head">
        <h3>${domain.domain} ${domain.status === "verified" ? html`<${Badge} kind="ok">verified<//>` : html`<${Badge} kind="warn">pending<//>`}</h3>
        <div class="actions">
          <${ActionButton} action=${verify}>${verify.busy ? "Checking…" : "Verify now"}<//>
          <${ActionButton} class="danger" action=${remove} confirm=${`Remove ${domain.domain} and its routes? Its mail will be refused.`}>Delete<//>
        </div>
      </header>
      <${ErrorBox} error=${verify.error || remove.error} />
      ${domain.problem && html`<p class="meta" role="status">${domain.problem}</p>`}
      <${Table} label=${`DNS records of ${domain.domain}`} class="table records">
        <thead><tr><th scope="col">Record</th><th scope="col">Name and value</th></tr></thead>
        <tbody>${domain.records.map((r) => html`
          <tr key=${r.purpose} data-purpose=${r.purpose}>
            <td class="record-kind"><strong>${r.type}</strong> · ${r.purpose}<div><${RecordStatus} record=${r} /></div></td>
            <td>
              <div class="record-value"><span class="meta">Name</span><code>${r.name}</code><${Copy} text=${r.name} label="Copy name" /></div>
              <div class="record-value"><span class="meta">Value</span><code class="record">${r.priority ? `${r.priority} ` : ""}${r.value}</code><${Copy} text=${r.value} label="Copy value" /></div>
            </td>
          </tr>`)}</tbody>
      <//>
    </article>`;
}

function actionText(a) {
  if (a.type === "webhook") return `POST to ${a.url}`;
  if (a.type === "forward") return `forward to ${a.to}`;
  return "keep here";
}

function Routes({ domains }) {
  const list = useLoad(() => get("/inbound-routes"), []);
  const add = useAction(async (data, form) => {
    const actions = [];
    if (data.get("url")) actions.push({ type: "webhook", url: data.get("url") });
    if (data.get("forward")) actions.push({ type: "forward", to: data.get("forward") });
    if (data.get("store")) actions.push({ type: "store" });
    const local = String(data.get("local") || "").trim() || "*";
    const route = await post("/inbound-routes", { match: `${local}@${data.get("domain")}`, actions });
    form.reset();
    list.reload();
    return route;
  }, (r) => `Mail to ${r.match} is routed`);
  const remove = useAction(async (r) => {
    await del(`/inbound-routes/${encodeURIComponent(r.id)}`);
    list.reload();
  }, "Route deleted");
  return html`
    <section class="card stack" aria-labelledby="routes-title">
      <h2 id="routes-title">Routes</h2>
      <p class="meta">A route says what becomes of mail to one address, or to every address of a domain (<code>*</code>).
        <code>support+anything@</code> takes <code>support@</code>'s route. Mail to an address no route takes is refused.</p>
      <${ErrorBox} error=${remove.error} />
      <${Loaded} result=${list}>${(routes) => routes.length === 0
        ? html`<p class="meta">No routes yet.</p>`
        : html`<${Table} label="Routes" id="routes-table">
            <thead><tr><th scope="col">Address</th><th scope="col">Actions</th><th scope="col"><span class="visually-hidden">Delete</span></th></tr></thead>
            <tbody>${routes.map((r) => html`<tr key=${r.id} data-route=${r.match}>
              <td><code>${r.match}</code></td>
              <td>${r.actions.map((a, i) => html`<div key=${i}>${actionText(a)}</div>`)}</td>
              <td class="buttons"><button type="button" class="danger small" aria-label=${`Delete the route of ${r.match}`}
                onClick=${() => window.confirm(`Delete the route of ${r.match}?`) && remove.run(r)}>Delete</button></td>
            </tr>`)}</tbody>
          <//>`}<//>
      ${domains.length > 0 && html`
        <${Form} action=${add} submit="Add route" id="route-form">
          <div class="grid2">
            <${Field} label="Address" hint="The part before @; empty or * for every address."><input name="local" placeholder="support" /><//>
            <${Field} label="Domain"><select name="domain">${domains.map((d) => html`<option key=${d.id} value=${d.domain}>${d.domain}</option>`)}</select><//>
            <${Field} label="Webhook URL" hint="Receives each message as JSON, signed like every webhook."><input name="url" type="url" placeholder="https://app.example.com/inbound" /><//>
            <${Field} label="Forward to" hint="Resent from the address it came to; the domain must be a verified sender domain."><input name="forward" type="email" placeholder="team@example.com" /><//>
          </div>
          <label class="field check"><input type="checkbox" name="store" checked /> Keep messages here (headers, text, HTML, attachments)</label>
        <//>`}
    </section>`;
}

export function Inbound({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const config = useLoad(() => get("/config"), []);
  const domains = useLoad(() => get("/inbound-domains"), []);
  const pager = useCursor();
  const messages = useLoad(() => get("/inbound", { limit: 20, cursor: pager.cursor }), [pager.cursor]);
  const add = useAction(async (data, form) => {
    const created = await post("/inbound-domains", { domain: data.get("domain") });
    form.reset();
    domains.setData([...(domains.data || []), created]);
    return created;
  }, (d) => `${d.domain} added: publish its MX and ownership records, then verify`);
  const replace = (next) => domains.setData(domains.data.map((d) => (d.id === next.id ? next : d)));
  return html`
    <${Page} title="Inbound">
      <p class="meta">Mail sent to this project's domains arrives here: the sender becomes a contact with an
        <code>email.received</code> event (webhooks fire, workflows start), and a reply to mail you sent counts on that email and its campaign.</p>
      <${Loaded} result=${config}>${(c) => !c.inbound && html`<section class="card" id="inbound-off"><p>The inbound listener is off on this
        server; its operator turns it on with <code>[inbound] listen</code> (port 25). Domains and routes made here work as soon as it is on.</p></section>`}<//>
      <section class="card stack" aria-labelledby="received-title">
        <h2 id="received-title">Received</h2>
        <${Loaded} result=${messages}>${(page) => page.data.length === 0
          ? html`<${Empty}>No mail received yet.<//>`
          : html`<${Table} label="Mail received" id="inbound-table">
              <thead><tr><th scope="col">When</th><th scope="col">From</th><th scope="col">Subject</th><th scope="col">To</th><th scope="col">Authentication</th></tr></thead>
              <tbody>${page.data.map((m) => html`<tr key=${m.id} data-inbound=${m.subject}>
                <td>${date(m.receivedAt)}</td><td>${m.from.name ? `${m.from.name} <${m.from.email}>` : m.from.email}</td>
                <td><a href=${`${base}/inbound/${m.id}`}>${m.subject || "(no subject)"}</a>${m.replyToEmailId && html` <${Badge} kind="ok">reply<//>`}</td>
                <td>${m.to.join(", ")}</td><td><${Verdicts} m=${m} /></td></tr>`)}</tbody>
            <//>
            <${CursorPager} pager=${pager} list=${page} label="Mail received" />`}<//>
      </section>
      <${Loaded} result=${domains}>${(list) => html`<${Routes} domains=${list} />`}<//>
      <section class="card stack" aria-labelledby="inbound-domains-title">
        <h2 id="inbound-domains-title">Domains</h2>
        <p class="meta">A domain receives mail here once its MX record names this server and its ownership record is published.</p>
        <${Form} class="inline" id="inbound-domain-form" action=${add} submit="Add domain">
          <${Field} label="Domain"><input name="domain" required placeholder="in.example.com" /><//>
        <//>
        <${Loaded} result=${domains}>${(list) => list.length === 0
          ? html`<p class="meta">No inbound domains yet.</p>`
          : list.map((d) => html`<${DomainCard} key=${d.id} domain=${d} onChanged=${replace} onDeleted=${() => domains.setData(domains.data.filter((x) => x.id !== d.id))} />`)}<//>
      </section>
    <//>`;
}

export function InboundMessage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const [tab, setTab] = useState("html");
  const message = useLoad(() => get(`/inbound/${encodeURIComponent(params.id)}`), [params.id]);
  const m = message.data;
  const tabs = [["html", "HTML"], ["text", "Text"], ["headers", "Headers"], ["attachments", "Attachments"]];
  const path = (url) => new URL(url, location.href).pathname;
  return html`
    <${Page} title=${m ? m.subject || "(no subject)" : "Message"} back=${{ href: `${base}/inbound`, label: "Inbound" }}>
      <${Loaded} result=${message}>${(msg) => html`
        <section class="card">
          <dl class="props">
            <dt>From</dt><dd>${msg.from.name ? `${msg.from.name} <${msg.from.email}>` : msg.from.email}
              ${msg.contactId && html` · <a id="inbound-contact" href=${`${base}/contacts/${msg.contactId}`}>the contact</a>`}</dd>
            <dt>To</dt><dd>${msg.to.join(", ")}</dd>
            <dt>Received</dt><dd>${date(msg.receivedAt)} from <code>${msg.remoteAddress}</code> (${msg.helo || "no greeting"})</dd>
            <dt>Authentication</dt><dd><${Verdicts} m=${msg} />${msg.dmarcFailed && html`<div class="meta" role="note">The sender's domain says this server may not send for it: the sender may be forged.</div>`}</dd>
            <dt>Kept until</dt><dd>${date(msg.expiresAt)}</dd>
          </dl>
          ${!msg.content ? html`<p class="meta">Its content is not kept: add "Keep messages here" to its route.</p>` : html`
          <${Tabs} label="Message parts" tabs=${tabs} current=${tab} onChange=${setTab}>
            ${tab === "html" && (msg.content.html
              ? html`<iframe class="preview-frame" id="inbound-frame" title="The message as HTML" sandbox="" srcdoc=${msg.content.html}></iframe>`
              : html`<p class="meta">This message has no HTML part.</p>`)}
            ${tab === "text" && html`<pre>${msg.content.text || ""}</pre>`}
            ${tab === "headers" && html`<${Table} label="Headers">
                <thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>
                <tbody>${msg.content.headers.map((h, i) => html`<tr key=${i}><th scope="row">${h.name}</th><td><code>${h.value}</code></td></tr>`)}</tbody>
              <//>`}
            ${tab === "attachments" && (msg.content.attachments.length === 0 ? html`<p class="meta">No attachments.</p>` : html`<ul>
              ${msg.content.attachments.map((a, i) => html`<li key=${i}><a href=${path(a.url)} download=${a.filename || ""}>${a.filename || `attachment ${i + 1}`}</a>
                <span class="meta"> ${a.contentType}, ${(a.size / 1024).toFixed(1)} KB</span></li>`)}</ul>`)}
          <//>`}
        </section>`}<//>
    <//>`;
}
