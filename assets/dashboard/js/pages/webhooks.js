// Outbound webhooks: the endpoints with their events and state, one added (its signing secret
// shown once), enabled or disabled, deleted, a test sent, and each endpoint's delivery log.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import {
  ActionButton, Badge, Copy, Empty, ErrorBox, Field, Form, Loaded, Page, PagePager, Table, date, useAction, useLoad } from "../ui.js";

const STATUS_KIND = { succeeded: "ok", pending: "warn", failed: "bad" };

function Deliveries({ endpoint }) {
  const [page, setPage] = useState(1);
  const id = encodeURIComponent(endpoint.id);
  const log = useLoad(() => get(`/webhooks/${id}/deliveries`, { page, pageSize: 20 }), [page, endpoint.id]);
  const test = useAction(async () => {
    const r = await post(`/webhooks/${id}/test`);
    setTimeout(log.reload, 1500);
    return r;
  }, "Test delivery queued");
  return html`
    <section class="card stack" aria-labelledby=${`log-${endpoint.id}`} id="delivery-log">
      <h2 id=${`log-${endpoint.id}`}>Deliveries to ${endpoint.url}</h2>
      <div class="buttons">
        <${ActionButton} action=${test}>Send test<//>
        <button type="button" class="secondary" onClick=${() => log.reload()}>Refresh</button>
      </div>
      <${ErrorBox} error=${test.error} />
      <${Loaded} result=${log}>${(p) => p.data.length === 0 ? html`<p class="meta">Nothing delivered yet.</p>` : html`
        <${Table} label="Deliveries" id="deliveries-table">
          <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Tries</th><th scope="col">Last answer</th><th scope="col">Queued</th></tr></thead>
          <tbody>${p.data.map((d) => html`<tr key=${d.id} data-delivery=${d.eventType}>
            <td>${d.eventType}<div class="meta"><code>${d.id}</code></div></td>
            <td><${Badge} kind=${STATUS_KIND[d.status]}>${d.status}<//>${d.nextAttemptAt && html`<div class="meta">next try ${date(d.nextAttemptAt)}</div>`}</td>
            <td class="num">${d.attempts}</td>
            <td>${d.lastStatusCode ?? "—"}${d.lastError && html`<div class="meta">${d.lastError}</div>`}</td>
            <td>${date(d.createdAt)}</td></tr>`)}</tbody>
        <//>
        <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Deliveries" />`}<//>
    </section>`;
}

export function Webhooks() {
  const list = useLoad(() => get("/webhooks"), []);
  const [created, setCreated] = useState(null);
  const [open, setOpen] = useState(null);
  const add = useAction(async (data, form) => {
    const events = String(data.get("events") || "").split(/[\s,]+/).filter(Boolean);
    const e = await post("/webhooks", { url: data.get("url"), events: events.length ? events : undefined, description: data.get("description") || undefined });
    form.reset();
    setCreated(e);
    list.reload();
    return e;
  }, "Endpoint added");
  const toggle = useAction(async (e) => {
    const saved = await patch(`/webhooks/${encodeURIComponent(e.id)}`, { enabled: !e.enabled });
    list.reload();
    return saved;
  }, (e) => `Endpoint ${e.enabled ? "enabled" : "disabled"}`);
  const remove = useAction(async (e) => {
    await del(`/webhooks/${encodeURIComponent(e.id)}`);
    if (open === e.id) setOpen(null);
    list.reload();
  }, "Endpoint deleted");
  return html`
    <${Page} title="Webhooks">
      <p class="meta">Every event of this project that an endpoint names is POSTed to it, signed the Standard Webhooks way
        (<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>), and tried again for a day.</p>
      ${created && html`<div class="card" role="status" id="webhook-secret"><strong>Signing secret of ${created.url}</strong>
        <p class="meta">Shown once: keep it where the receiver can verify with it.</p>
        <code data-webhook-secret>${created.secret}</code> <${Copy} text=${created.secret} /></div>`}
      <${ErrorBox} error=${toggle.error || remove.error} />
      <${Loaded} result=${list}>${(endpoints) => endpoints.length === 0
        ? html`<${Empty}>No endpoints yet. Add one to hear about sends, bounces, tracked events and contacts as they happen.<//>`
        : html`<${Table} label="Endpoints" id="webhooks-table">
            <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${endpoints.map((e) => html`<tr key=${e.id} data-webhook=${e.url}>
              <td>${e.url}${e.description && html`<div class="meta">${e.description}</div>`}</td>
              <td>${e.events.join(", ")}</td>
              <td>${e.enabled ? html`<${Badge} kind="ok">enabled<//>` : html`<${Badge}>disabled<//>`}
                ${e.disabledReason && html`<div class="meta">${e.disabledReason}</div>`}
                ${e.failingSince && html`<div class="meta">failing since ${date(e.failingSince)}</div>`}</td>
              <td class="buttons">
                <button type="button" class="secondary small" aria-expanded=${open === e.id} onClick=${() => setOpen(open === e.id ? null : e.id)}>Deliveries</button>
                <button type="button" class="secondary small" onClick=${() => toggle.run(e)}>${e.enabled ? "Disable" : "Enable"}</button>
                <button type="button" class="danger small" aria-label=${`Delete the endpoint ${e.url}`} onClick=${() => window.confirm(`Delete the endpoint ${e.url}?`) && remove.run(e)}>Delete</button>
              </td></tr>`)}</tbody>
          <//>
          ${open && endpoints.find((e) => e.id === open) && html`<${Deliveries} key=${open} endpoint=${endpoints.find((e) => e.id === open)} />`}`}<//>
      <section class="card" aria-labelledby="new-webhook">
        <h2 id="new-webhook">Add an endpoint</h2>
        <${Form} action=${add} submit="Add endpoint" id="webhook-form">
          <div class="grid2">
            <${Field} label="URL"><input name="url" type="url" required placeholder="https://example.com/hooks/tidings" /><//>
            <${Field} label="Events" hint="Names or prefixes ending in *, separated by commas; empty for every event."><input name="events" placeholder="email.*, signup" /><//>
          </div>
          <${Field} label="Description"><input name="description" maxlength="500" /><//>
        <//>
      </section>
    <//>`;
}
