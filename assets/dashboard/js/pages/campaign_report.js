// A sent campaign's report: opens and clicks over time since the send (people's apart from
// machines': privacy proxies, link scanners), clicks per link, the receiving providers, and the
// recipients with their status, filtered, paged and downloaded as CSV.

import { html, useEffect, useRef, useState } from "../../vendor/preact-htm.js";
import { download, get } from "../api.js";
import {
  Badge, CursorPager, ErrorBox, Field, Loaded, Table, date, fitChart, useAction, useCursor, useLoad, useSearch } from "../ui.js";

const SERIES = [
  ["opens", "Opens", "#7a4d00", false],
  ["clicks", "Clicks", "#6b3fa0", false],
  ["machineOpens", "Machine opens", "#8a6d3b", true],
  ["machineClicks", "Machine clicks", "#8c7aa8", true],
];
const STATUSES = ["sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed", "failed", "queued"];
const KIND = { clicked: "ok", opened: "ok", delivered: "ok", bounced: "bad", complained: "bad", failed: "bad", unsubscribed: "warn" };

function Timeline({ report }) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current || typeof window.uPlot !== "function" || report.timeline.length === 0) return undefined;
    const points = report.timeline;
    const xs = points.map((p) => new Date(p.at).getTime() / 1000);
    const total = (key) => points.reduce((sum, p) => sum + p[key], 0);
    const when = (v) => new Date(v * 1000).toLocaleString(undefined, report.bucket === "day"
      ? { month: "short", day: "numeric" } : { month: "short", day: "numeric", hour: "numeric" });
    const chart = new window.uPlot({
      width: Math.max(240, box.current.clientWidth), height: 220,
      series: [
        { label: report.bucket === "day" ? "Day" : "Hour", value: (u, v) => (v == null ? "Since the send" : when(v)) },
        ...SERIES.map(([key, label, stroke, dashed]) => ({
          label, stroke, width: 2, dash: dashed ? [6, 4] : undefined, value: (u, v) => (v == null ? String(total(key)) : String(v)),
        })),
      ],
      // The whole span since the send, however few buckets (uPlot would widen one to years).
      scales: { x: { time: true, range: () => [xs[0], xs[xs.length - 1] + (report.bucket === "day" ? 86400 : 3600)] } },
      axes: [{}, { size: 40 }],
    }, [xs, ...SERIES.map(([key]) => points.map((p) => p[key]))], box.current);
    return fitChart(chart, box.current, 220);
  }, [JSON.stringify(report.timeline)]);
  return html`<div ref=${box} class="chart" id="report-chart" role="img"
    aria-label=${`Opens and clicks per ${report.bucket} since the send, people's and machines'`}></div>`;
}

/** The report of a campaign that went out. */
export function CampaignReport({ campaign }) {
  const id = encodeURIComponent(campaign.id);
  const report = useLoad(() => get(`/campaigns/${id}/report`), [campaign.id, campaign.status, campaign.updatedAt]);
  return html`
    <${Loaded} result=${report}>${(r) => html`
      <section class="card stack" aria-labelledby="report-heading" id="campaign-report">
        <h2 id="report-heading">Report</h2>
        <p id="report-people">${`Opened by ${r.opened.people} ${r.opened.people === 1 ? "person" : "people"} and clicked by ${r.clicked.people}`}${
          r.opened.machinesOnly + r.clicked.machinesOnly > 0
            ? `; besides, ${r.opened.machinesOnly} opened and ${r.clicked.machinesOnly} clicked only by machines (privacy proxies that load every image, link scanners, crawlers), counted apart`
            : ""}.</p>
        <${Timeline} report=${r} />
        <h3>Links</h3>
        ${r.links.length === 0 ? html`<p class="meta">No link was clicked yet.</p>` : html`
          <${Table} label="Clicks per link" id="report-links" class="table cards">
            <thead><tr><th scope="col">Link</th><th scope="col" class="num">Clicks</th><th scope="col" class="num">People</th><th scope="col" class="num">By machines</th></tr></thead>
            <tbody>${r.links.map((l) => html`<tr key=${l.url} data-link=${l.url}>
              <td class="url" data-label="Link">${l.url}</td><td class="num" data-col="clicks" data-label="Clicks">${l.clicks}</td>
              <td class="num" data-label="People">${l.uniqueClicks}</td><td class="num" data-label="By machines">${l.machineClicks}</td></tr>`)}</tbody>
          <//>`}
        <h3>Receiving providers</h3>
        <${Table} label="Results per receiving provider" id="report-providers" class="table cards">
          <thead><tr><th scope="col">Provider</th><th scope="col" class="num">Recipients</th><th scope="col" class="num">Opened</th>
            <th scope="col" class="num">Clicked</th><th scope="col" class="num">Bounced</th><th scope="col" class="num">Complaints</th></tr></thead>
          <tbody>${r.providers.map((p) => html`<tr key=${p.name} data-provider=${p.name}>
            <td data-label="Provider">${p.name}${p.domains.length > 1 && html`<div class="meta">${p.domains.slice(0, 4).join(", ")}${p.domains.length > 4 ? "…" : ""}</div>`}</td>
            <td class="num" data-label="Recipients">${p.recipients}</td><td class="num" data-label="Opened">${p.opened}</td><td class="num" data-label="Clicked">${p.clicked}</td>
            <td class="num" data-label="Bounced">${p.bounced}</td><td class="num" data-label="Complaints">${p.complained}</td></tr>`)}</tbody>
        <//>
        ${!r.captured && r.queues.length > 0 && html`<${Queues} queues=${r.queues} />`}
      </section>
      <${Recipients} campaign=${campaign} />`}<//>`;
}

/** The campaign's mail per receiving provider's queue: sent, waiting, and why it waits. */
function Queues({ queues }) {
  const held = (q) => [
    q.heldRate > 0 && `${q.heldRate} for the provider's hourly rate`,
    q.heldBackoff > 0 && `${q.heldBackoff} while the provider rests${q.restingUntil ? ` (until ${date(q.restingUntil)})` : ""}`,
    q.heldWarmup > 0 && `${q.heldWarmup} for tomorrow's warm-up volume`,
  ].filter(Boolean).join("; ");
  return html`
    <h3>Delivery queues</h3>
    <p class="meta">Mail waits in one queue per receiving provider, each at its own pace: a provider that defers mail
      rests alone, and the others go on.</p>
    <${Table} label="The campaign's mail per receiving provider's queue" id="report-queues" class="table cards">
      <thead><tr><th scope="col">Queue</th><th scope="col" class="num">Sent</th><th scope="col" class="num">Waiting</th><th scope="col">Why it waits</th></tr></thead>
      <tbody>${queues.map((q) => html`<tr key=${q.provider} data-queue=${q.provider || "unsorted"}>
        <td data-label="Queue">${q.label}</td><td class="num" data-label="Sent">${q.sent}</td>
        <td class="num" data-label="Waiting">${q.queued}</td><td data-label="Why it waits">${held(q) || "—"}</td></tr>`)}</tbody>
    <//>`;
}

function Recipients({ campaign }) {
  const id = encodeURIComponent(campaign.id);
  const base = location.pathname.split("/campaigns/")[0];
  const [status, setStatus] = useState("");
  const pager = useCursor();
  const search = useSearch("", pager.reset);
  const list = useLoad(() => get(`/campaigns/${id}/recipients`, { status, search: search.applied.trim(), cursor: pager.cursor || "", limit: 25 }),
    [status, search.applied, pager.cursor]);
  const exportCsv = useAction(() => download(`/campaigns/${id}/recipients/export?${new URLSearchParams({ status, search: search.applied.trim() })}`,
    `campaign-${campaign.id}-recipients.csv`), "Recipients downloaded");
  return html`
    <section class="card" aria-labelledby="recipients-heading" id="campaign-recipients">
      <div class="page-head"><h2 id="recipients-heading">Recipients</h2>
        <button type="button" class="secondary" id="recipients-export" disabled=${exportCsv.busy} onClick=${() => exportCsv.run()}>Download CSV</button></div>
      <div class="toolbar" role="search">
        <${Field} label="Search recipients"><input type="search" value=${search.text} placeholder="email" onInput=${(e) => search.setText(e.currentTarget.value)} /><//>
        <${Field} label="Status">
          <select id="recipient-status" value=${status} onChange=${(e) => { setStatus(e.currentTarget.value); pager.reset(); }}>
            <option value="">Every status</option>
            ${STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
          </select>
        <//>
      </div>
      <${ErrorBox} error=${exportCsv.error} />
      <${Loaded} result=${list}>${(page) => html`
        ${pager.page === 1 && html`<p class="meta" id="recipients-total">${page.total} ${page.total === 1 ? "recipient" : "recipients"}</p>`}
        ${page.data.length === 0 ? html`<p class="meta">No recipient matches.</p>` : html`
          <${Table} label="Recipients" id="recipients-table" class="table cards">
            <thead><tr><th scope="col">Email</th><th scope="col">Status</th><th scope="col">Sent</th><th scope="col">Opened</th><th scope="col">Clicked</th></tr></thead>
            <tbody>${page.data.map((r) => html`<tr key=${r.emailId} data-recipient=${r.email}>
              <td data-label="Email">${r.contactId ? html`<a href=${`${base}/contacts/${encodeURIComponent(r.contactId)}`}>${r.email}</a>` : r.email}
                ${r.error && html`<div class="meta">${r.error}</div>`}</td>
              <td data-label="Status"><${Badge} kind=${KIND[r.status] || ""}>${r.status}${r.bounceType ? ` (${r.bounceType})` : ""}<//></td>
              <td data-label="Sent">${r.sentAt ? date(r.sentAt) : "—"}</td>
              <td data-label="Opened">${r.openedAt ? date(r.openedAt) : "—"}</td>
              <td data-label="Clicked">${r.clickedAt ? date(r.clickedAt) : "—"}</td></tr>`)}</tbody>
          <//>`}
        <${CursorPager} pager=${pager} list=${page} label="Recipients" />`}<//>
    </section>`;
}
