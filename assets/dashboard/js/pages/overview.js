// The overview: headline figures for a chosen period, each against the period before; sends,
// deliveries, opens, clicks and bounces per day (a uPlot chart, vendored) whose legend shows the
// values under the cursor and the period's totals otherwise; and the activity feed as sentences
// linking to the contact, campaign or workflow, refreshed every 10 seconds.

import { html, useEffect, useRef, useState } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { setQuery, useLocation } from "../router.js";
import { Badge, Loaded, Page, date, fitChart, percent, useLoad } from "../ui.js";

const SERIES = [
  ["sent", "Sent", "#24527f"],
  ["delivered", "Delivered", "#1f6b3f"],
  ["opened", "Opened", "#7a4d00"],
  ["clicked", "Clicked", "#6b3fa0"],
  ["bounced", "Bounced", "#9b2c1f"],
];

const PERIODS = [[7, "7 days"], [30, "30 days"], [90, "90 days"]];
const DAY = 86_400_000;

function Chart({ series, days }) {
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
        { label: "Day", value: (u, v) => (v == null ? `All ${days} days` : day(v)) },
        ...SERIES.map(([key, label, stroke]) => ({
          label, stroke, width: 2, value: (u, v) => (v == null ? String(total(key)) : String(v)),
        })),
      ],
      axes: [{}, { size: 50 }],
    }, data, box.current);
    return fitChart(chart, box.current, 260);
  }, [JSON.stringify(series)]);
  return html`<div ref=${box} class="chart" id="overview-chart" role="img" aria-label=${`Sent, delivered, opened, clicked and bounced mail per day, the last ${days} days`}></div>`;
}

/** The change from `before` to `now`: relative for counts, in points for rates. */
function change(now, before, rate) {
  if (rate) {
    const points = Math.round((now - before) * 1000) / 10;
    return { text: `${points > 0 ? "+" : ""}${points} pt`, dir: Math.sign(points) };
  }
  if (before === 0) return now === 0 ? { text: "no change", dir: 0 } : { text: "new", dir: 1 };
  const share = Math.round(((now - before) / before) * 100);
  return { text: `${share > 0 ? "+" : ""}${share} %`, dir: Math.sign(share) };
}

/** One headline figure; `good` says which way of change is good news (bounces: down). */
function Figure({ id, label, now, before, rate, good = 1, days }) {
  const c = change(now, before, rate);
  const tone = c.dir === 0 ? "" : c.dir === good ? "up-good" : "up-bad";
  return html`
    <div class="figure" id=${id}>
      <div class="figure-label">${label}</div>
      <div class="figure-value">${rate ? percent(now) : now.toLocaleString()}</div>
      <div class=${`figure-change ${tone}`}>${c.dir > 0 ? "▲ " : c.dir < 0 ? "▼ " : ""}${c.text}
        <span class="meta"> vs the ${days} days before (${rate ? percent(before) : before.toLocaleString()})</span></div>
    </div>`;
}

function Headlines({ days, to }) {
  const from = to - days * DAY;
  const range = (a, b) => ({ from: new Date(a).toISOString(), to: new Date(b).toISOString() });
  const figures = useLoad(async () => {
    const [now, before, audience, audienceBefore] = await Promise.all([
      get("/activity/stats", range(from, to)),
      get("/activity/stats", range(from - days * DAY, from)),
      get("/analytics/audience", range(from, to)),
      get("/analytics/audience", range(from - days * DAY, from)),
    ]);
    const sum = (a, key) => a.days.reduce((s, d) => s + d[key], 0);
    return {
      now, before,
      contacts: [sum(audience, "created"), sum(audienceBefore, "created")],
      unsubscribed: [sum(audience, "unsubscribed"), sum(audienceBefore, "unsubscribed")],
      total: audience.total,
    };
  }, [days, to]);
  return html`<${Loaded} result=${figures}>${(f) => html`
    <div class="figures" id="overview-figures">
      <${Figure} id="figure-sent" label="Emails sent" now=${f.now.counts.send} before=${f.before.counts.send} days=${days} />
      <${Figure} id="figure-open" label="Open rate" now=${f.now.rates.open} before=${f.before.rates.open} rate days=${days} />
      <${Figure} id="figure-click" label="Click rate" now=${f.now.rates.click} before=${f.before.rates.click} rate days=${days} />
      <${Figure} id="figure-bounce" label="Bounce rate" now=${f.now.rates.bounce} before=${f.before.rates.bounce} rate good=${-1} days=${days} />
      <${Figure} id="figure-contacts" label="New contacts" now=${f.contacts[0]} before=${f.contacts[1]} days=${days} />
      <${Figure} id="figure-unsubscribed" label="Unsubscribed" now=${f.unsubscribed[0]} before=${f.unsubscribed[1]} good=${-1} days=${days} />
    </div>
    <p class="meta" id="overview-rates">${f.now.counts.send} sent · opened ${percent(f.now.rates.open)} · clicked ${percent(f.now.rates.click)} ·
      bounced ${percent(f.now.rates.bounce)} · complaints ${percent(f.now.rates.complaint)} · ${f.total.toLocaleString()} contacts in all</p>`}<//>`;
}

/** An activity as a sentence: who did what, linked to the contact, campaign or workflow. */
function Sentence({ e, base }) {
  const d = e.data || {};
  const who = e.contact
    ? html`<a href=${`${base}/contacts/${encodeURIComponent(e.contact.id)}`}>${e.contact.email || "a deleted contact"}</a>`
    : "someone";
  const subject = d.subject ? html`<q>${d.subject}</q>` : "an email";
  const from = d.campaignId
    ? html` from <a href=${`${base}/campaigns/${encodeURIComponent(d.campaignId)}`}>a campaign</a>`
    : d.workflowId ? html` from <a href=${`${base}/workflows/${encodeURIComponent(d.workflowId)}`}>a workflow</a>` : "";
  switch (e.type) {
    case "send": return html`Sent ${subject} to ${who}${from}.`;
    case "delivery": return html`${subject} was delivered to ${who}${from}.`;
    case "open": return html`${who} opened ${subject}${from}.`;
    case "click": return html`${who} clicked ${d.link ? html`<code>${d.link.length > 60 ? `${d.link.slice(0, 59)}…` : d.link}</code>` : "a link"} in ${subject}${from}.`;
    case "bounce": return html`${subject} bounced at ${who}${from}.`;
    case "complaint": return html`${who} marked ${subject} as spam${from}.`;
    case "failure": return html`${subject} could not be sent to ${who}${from}.`;
    case "inbound": return html`${who} wrote to you${d.subject ? html`: <q>${d.subject}</q>` : ""}.`;
    case "subscribe": return html`${who} subscribed${d.source ? ` (${d.source})` : ""}.`;
    case "unsubscribe": return html`${who} unsubscribed${d.source ? ` (${d.source})` : ""}.`;
    case "event": {
      const keys = Object.keys(d);
      return html`${who} did <strong>${e.name}</strong>${keys.length ? html` <span class="meta">(${keys.slice(0, 3).map((k) => `${k}: ${typeof d[k] === "object" ? JSON.stringify(d[k]) : d[k]}`).join(", ")}${keys.length > 3 ? ", …" : ""})</span>` : ""}.`;
    }
    default: return html`<strong>${e.name}</strong>${e.contact ? html` for ${who}` : ""}.`;
  }
}

function Feed({ base }) {
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
        <ol class="feed" id="activity-feed">
          ${f.data.map((e) => html`<li key=${e.id} data-activity=${e.type}>
            <${Badge} kind=${e.type === "bounce" || e.type === "complaint" || e.type === "failure" ? "bad" : ""}>${e.type}<//>
            <span class="feed-text"><${Sentence} e=${e} base=${base} /></span>
            <time datetime=${e.createdAt} class="meta">${date(e.createdAt)}</time>
          </li>`)}
        </ol>`}<//>
    </section>`;
}

export function Overview({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [days, setDays] = useState(PERIODS.some(([d]) => d === Number(params.get("days"))) ? Number(params.get("days")) : 30);
  // The period ends now, as of when it was chosen (a rerender keeps it).
  const [to, setTo] = useState(Date.now());
  const choose = (d) => { setDays(d); setTo(Date.now()); setQuery({ days: d === 30 ? "" : d }); };
  const series = useLoad(() => get("/analytics/timeseries", {
    interval: "day", from: new Date(to - days * DAY).toISOString(), to: new Date(to).toISOString() }), [days, to]);
  return html`
    <${Page} title="Overview">
      <section class="card" aria-labelledby="mail-heading">
        <div class="card-head">
          <h2 id="mail-heading">The last ${days} days</h2>
          <div class="field narrow-field">
            <label class="label" for="overview-period">Period</label>
            <select id="overview-period" value=${days} onChange=${(e) => choose(Number(e.currentTarget.value))}>
              ${PERIODS.map(([d, label]) => html`<option value=${d}>${label}</option>`)}
            </select>
          </div>
        </div>
        <${Headlines} days=${days} to=${to} />
        <${Loaded} result=${series}>${(s) => html`<${Chart} series=${s.series} days=${days} />`}<//>
      </section>
      <${Feed} base=${base} />
    <//>`;
}
