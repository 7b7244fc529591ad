// The overview: sends, deliveries, opens, clicks and bounces per day (a uPlot chart, vendored),
// the rates over the period, and the activity feed, refreshed every 10 seconds.

import { html, useEffect, useRef, useState } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { Badge, Json, Loaded, Page, Table, date, fitChart, percent, useLoad } from "../ui.js";

const SERIES = [
  ["sent", "Sent", "#24527f"],
  ["delivered", "Delivered", "#1f6b3f"],
  ["opened", "Opened", "#7a4d00"],
  ["clicked", "Clicked", "#6b3fa0"],
  ["bounced", "Bounced", "#9b2c1f"],
];

function Chart({ series }) {
  const box = useRef(null);
  useEffect(() => {
    if (!box.current || typeof window.uPlot !== "function") return undefined;
    const xs = series.map((p) => new Date(p.date).getTime() / 1000);
    const data = [xs, ...SERIES.map(([key]) => series.map((p) => p[key]))];
    // Off the chart, the legend shows the period's totals (uPlot's own would read "--").
    const total = (key) => series.reduce((sum, p) => sum + (p[key] || 0), 0);
    const day = (v) => new Date(v * 1000).toLocaleDateString(undefined, { month: "short", day: "numeric" });
    const chart = new window.uPlot({
      width: Math.max(240, box.current.clientWidth), height: 260,
      series: [
        { label: "Day", value: (u, v) => (v == null ? "All days" : day(v)) },
        ...SERIES.map(([key, label, stroke]) => ({
          label, stroke, width: 2, value: (u, v) => (v == null ? String(total(key)) : String(v)),
        })),
      ],
      axes: [{}, { size: 50 }],
    }, data, box.current);
    return fitChart(chart, box.current, 260);
  }, [JSON.stringify(series)]);
  return html`<div ref=${box} class="chart" id="overview-chart" role="img" aria-label="Sent, delivered, opened, clicked and bounced mail per day"></div>`;
}

function Feed() {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), 10_000);
    return () => clearInterval(timer);
  }, []);
  const feed = useLoad(() => get("/activity", { limit: 20 }), [tick]);
  return html`
    <section class="card" aria-labelledby="feed-heading">
      <h2 id="feed-heading">Activity <span class="meta">(refreshed every 10 s)</span></h2>
      <${Loaded} result=${feed}>${(f) => f.data.length === 0 ? html`<p class="meta">Nothing yet.</p>` : html`
        <${Table} label="Activity" id="activity-table">
          <thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Contact</th><th scope="col">Data</th></tr></thead>
          <tbody>${f.data.map((e) => html`<tr key=${e.id} data-activity=${e.type}>
            <td>${date(e.createdAt)}</td><td><${Badge}>${e.type}<//> ${e.name}</td>
            <td>${e.contact ? e.contact.email : "—"}</td><td><${Json} value=${e.data} /></td></tr>`)}</tbody>
        <//>`}<//>
    </section>`;
}

export function Overview() {
  const series = useLoad(() => get("/analytics/timeseries", { interval: "day" }), []);
  const stats = useLoad(() => get("/activity/stats"), []);
  return html`
    <${Page} title="Overview">
      <section class="card" aria-labelledby="mail-heading">
        <h2 id="mail-heading">Mail, the last 30 days</h2>
        <${Loaded} result=${stats}>${(s) => html`
          <p id="overview-rates">${s.counts.send} sent · opened ${percent(s.rates.open)} · clicked ${percent(s.rates.click)} ·
            bounced ${percent(s.rates.bounce)} · complaints ${percent(s.rates.complaint)}</p>`}<//>
        <${Loaded} result=${series}>${(s) => html`<${Chart} series=${s.series} />`}<//>
      </section>
      <${Feed} />
    <//>`;
}
