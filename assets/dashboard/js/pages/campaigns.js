// Campaigns: the list with a status filter; the editor (content with the live preview, the
// audience with its live recipient count); sending now or at a time in the user's time zone;
// progress while sending, stats with rates, cancel, duplicate and test sends.

import { html, useEffect, useState } from "../../vendor/preact-htm.js";
import { api, del, get, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { ConditionBuilder, emptyCondition } from "../conditions.js";
import { Preview, TemplateError } from "./templates.js";
import { BodyEditor, StarterPicker, TestSend, emptyBody } from "../editor/body.js";
import { ArchivePanel } from "./campaign_archive.js";
import { CampaignReport } from "./campaign_report.js";
import { AbTestPanel } from "./campaign_ab_test.js";
import { FollowUpPanel } from "./campaign_follow_up.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Loaded, Page, PagePager, Table, date, percent, toast,
  useAction, useDebouncedLoad, useLoad, useSearch,
} from "../ui.js";

const STATUSES = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"];
const TYPES = ["MARKETING", "TRANSACTIONAL", "HEADLESS"];
const BADGE = { DRAFT: "", SCHEDULED: "warn", SENDING: "warn", SENT: "ok", CANCELLED: "bad" };

function StatusBadge({ status }) {
  return html`<${Badge} kind=${BADGE[status] || ""}>${status.toLowerCase()}<//>`;
}

export function Campaigns({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [status, setStatus] = useState(params.get("status") || "");
  const [page, setPage] = useState(1);
  const search = useSearch(params.get("search"), () => setPage(1));
  const list = useLoad(() => {
    setQuery({ search: search.applied, status });
    return get("/campaigns", { page, pageSize: 20, status, search: search.applied.trim() });
  }, [search.applied, status, page]);
  return html`
    <${Page} title="Campaigns" actions=${html`<a class="button-link primary" href=${`${base}/campaigns/new`}>New campaign</a>`}>
      <div class="toolbar" role="search">
        <${Field} label="Search"><input type="search" value=${search.text} placeholder="name, subject or sender" onInput=${(e) => search.setText(e.currentTarget.value)} /><//>
        <div class="field narrow-field">
          <label class="label" for="status-filter">Status</label>
          <select id="status-filter" value=${status} onChange=${(e) => { setStatus(e.currentTarget.value); setPage(1); }}>
            <option value="">All</option>
            ${STATUSES.map((s) => html`<option value=${s}>${s.toLowerCase()}</option>`)}
          </select>
        </div>
      </div>
      <${Loaded} result=${list}>${(p) => p.data.length === 0
        ? html`<${Empty}>${search.applied || status ? "No campaigns match." : "No campaigns yet. A campaign sends one email to an audience: everyone, a segment, or contacts matching a condition."}<//>`
        : html`
          <${Table} label="Campaigns" id="campaigns-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col" class="num">Recipients</th>
              <th scope="col" class="num">Sent</th><th scope="col" class="num">Opened</th><th scope="col">When</th></tr></thead>
            <tbody>${p.data.map((c) => html`
              <tr key=${c.id} data-campaign=${c.name}>
                <td><a href=${`${base}/campaigns/${encodeURIComponent(c.id)}`}>${c.name}</a><div class="meta" title=${c.subject}>${readable(c.subject)}</div></td>
                <td><${StatusBadge} status=${c.status} /></td>
                <td class="num">${c.totalRecipients}</td><td class="num">${c.sentCount}</td>
                <td class="num">${c.sentCount ? percent(c.openedCount / c.sentCount) : "—"}</td>
                <td>${c.status === "SCHEDULED" ? `Scheduled for ${date(c.scheduledFor)}` : c.sentAt ? `Sent ${date(c.sentAt)}` : `Created ${date(c.createdAt)}`}</td>
              </tr>`)}</tbody>
          <//>
          <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Campaigns" />`}<//>
    <//>`;
}

/** The audience picker and its live count, counted by the server as the sender will. */
function Audience({ draft, setDraft, vocabulary }) {
  const [count, setCount] = useState({ value: null, error: null });
  const audience = { type: draft.type, audienceType: draft.audienceType, segmentId: draft.segmentId || null,
    audienceCondition: draft.audienceType === "FILTERED" ? draft.audienceCondition : null,
    topicId: draft.type === "MARKETING" ? draft.topicId || null : null };
  useDebouncedLoad(async () => {
    if (draft.audienceType === "SEGMENT" && !draft.segmentId) return null;
    return (await post("/campaigns/count", audience)).count;
  }, (value, error) => setCount({ value: error ? null : value, error }), [JSON.stringify(audience)], 400);
  const choose = (audienceType) => setDraft({ ...draft, audienceType });
  return html`
    <fieldset>
      <legend>Audience</legend>
      <div class="inline" role="radiogroup" aria-label="Who receives it">
        ${[["ALL", "Every contact"], ["SEGMENT", "A segment"], ["FILTERED", "Contacts matching a condition"]].map(([value, label]) => html`
          <label class="field check" key=${value}><input type="radio" name="audienceType" value=${value} checked=${draft.audienceType === value} onChange=${() => choose(value)} /> ${label}</label>`)}
      </div>
      ${draft.audienceType === "SEGMENT" && html`
        <${Field} label="Segment">
          <select required value=${draft.segmentId || ""} onChange=${(e) => setDraft({ ...draft, segmentId: e.currentTarget.value })}>
            <option value="">Choose a segment</option>
            ${vocabulary.segments.map((s) => html`<option value=${s.id} key=${s.id}>${s.name} (${s.memberCount})</option>`)}
          </select>
        <//>`}
      ${draft.audienceType === "FILTERED" && html`
        <${ConditionBuilder} value=${draft.audienceCondition} catalogue=${vocabulary.catalogue} events=${vocabulary.events} segments=${vocabulary.segments}
          onChange=${(audienceCondition) => setDraft({ ...draft, audienceCondition })} />`}
      ${draft.type === "MARKETING" && vocabulary.topics.length > 0 && html`
        <${Field} label="Topic" hint="Only contacts subscribed to this topic receive it; their unsubscribe link offers leaving just the topic.">
          <select id="campaign-topic" value=${draft.topicId || ""} onChange=${(e) => setDraft({ ...draft, topicId: e.currentTarget.value || null })}>
            <option value="">No topic: every subscribed contact of the audience</option>
            ${vocabulary.topics.map((t) => html`<option value=${t.id} key=${t.id}>${t.name}</option>`)}
          </select>
        <//>`}
      <div class="count-live" aria-live="polite">
        ${count.error
          ? html`<${ErrorBox} error=${count.error} />`
          : html`<p>Goes to <strong id="recipient-count">${count.value === null ? "…" : count.value}</strong> contacts now${draft.type === "MARKETING" ? " (subscribed contacts only: this is marketing mail)" : ""}.</p>`}
      </div>
    </fieldset>`;
}

/**
 * A subject as a reader would see it with no contact in mind: a merge tag with a default shows
 * the default, another its name in brackets (`Hi [firstName]`), a tag nothing at all.
 */
function readable(subject) {
  return subject
    .replace(/\{\{([^}]*)\}\}/g, (whole, inner) => {
      const fallback = inner.match(/\?\?\s*["']([^"']*)["']/) || inner.match(/default:\s*["']([^"']*)["']/);
      if (fallback) return fallback[1];
      const name = inner.split(/[|?]/)[0].trim().replace(/^data\./, "");
      return name ? `[${name}]` : "";
    })
    .replace(/\{%[^%]*%\}/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

const EMPTY = {
  name: "", description: "", subject: "", body: emptyBody("blocks"), format: "blocks",
  from: "", fromName: "", replyTo: "", type: "MARKETING", audienceType: "ALL", segmentId: "", audienceCondition: null, templateId: null,
  topicId: null,
};

function bodyOf(draft) {
  const body = {
    name: draft.name, description: draft.description, subject: draft.subject, body: draft.body, format: draft.format, from: draft.from,
    fromName: draft.fromName, replyTo: draft.replyTo, type: draft.type, audienceType: draft.audienceType,
  };
  if (draft.audienceType === "SEGMENT") body.segmentId = draft.segmentId;
  if (draft.audienceType === "FILTERED") body.audienceCondition = draft.audienceCondition || emptyCondition();
  if (draft.templateId) body.templateId = draft.templateId;
  body.topicId = draft.type === "MARKETING" ? draft.topicId || null : null;
  body.trackLinks = draft.trackLinks !== false;
  return body;
}

function Editor({ campaign, isNew, base, vocabulary, onSaved }) {
  const [draft, setDraft] = useState({
    ...EMPTY, ...campaign, description: campaign.description || "", fromName: campaign.fromName || "", replyTo: campaign.replyTo || "",
    segmentId: campaign.segmentId || "", audienceCondition: campaign.audienceCondition || (campaign.audienceType === "FILTERED" ? emptyCondition() : null),
  });
  const set = (key) => (event) => setDraft({ ...draft, [key]: event.currentTarget.value });
  const useTemplate = (event) => {
    const template = vocabulary.templates.find((t) => t.id === event.currentTarget.value);
    if (!template) return setDraft({ ...draft, templateId: null });
    setDraft({ ...draft, templateId: template.id, subject: template.subject, body: template.body, format: template.format || "html", from: template.from,
      fromName: template.fromName || "", replyTo: template.replyTo || "", type: template.type });
  };
  const save = useAction(async () => {
    const body = bodyOf({ ...draft, audienceCondition: draft.audienceType === "FILTERED" ? draft.audienceCondition || emptyCondition() : null });
    const saved = isNew
      ? (await post("/campaigns", body)).data
      : await api("PUT", `/campaigns/${encodeURIComponent(campaign.id)}`, body);
    if (isNew) navigate(`${base}/campaigns/${encodeURIComponent(saved.id)}`, { replace: true });
    else onSaved(saved);
    return saved;
  }, "Campaign saved");
  const onSubmit = (event) => {
    event.preventDefault();
    save.run();
  };
  return html`
    ${isNew && html`<${StarterPicker} onPick=${(s) => setDraft((d) => ({ ...d, format: s.format, body: s.body, subject: d.subject || s.subject, name: d.name || s.name }))} />`}
    <div class="split">
      <form class="card stack" id="campaign-form" onSubmit=${onSubmit}>
        <div class="grid2">
          <${Field} label="Name"><input required maxlength="200" value=${draft.name} onInput=${set("name")} /><//>
          <${Field} label="Type">
            <select value=${draft.type} onChange=${set("type")}>${TYPES.map((t) => html`<option value=${t}>${t.toLowerCase()}</option>`)}</select>
          <//>
        </div>
        ${vocabulary.templates.length > 0 && html`
          <${Field} label="Start from a template" hint="Copies its subject, body and sender; the campaign keeps its own copy.">
            <select value=${draft.templateId || ""} onChange=${useTemplate}>
              <option value="">No template</option>
              ${vocabulary.templates.map((t) => html`<option value=${t.id} key=${t.id}>${t.name}</option>`)}
            </select>
          <//>`}
        <div class="grid2">
          <${Field} label="From address" hint="On a verified domain of this project."><input type="email" required value=${draft.from} onInput=${set("from")} /><//>
          <${Field} label="From name"><input value=${draft.fromName} onInput=${set("fromName")} /><//>
        </div>
        <${Field} label="Reply-to"><input type="email" value=${draft.replyTo} onInput=${set("replyTo")} /><//>
        <${Field} label="Subject"><input required value=${draft.subject} onInput=${set("subject")} /><//>
        <${BodyEditor} format=${draft.format} body=${draft.body} error=${save.error}
          onChange=${({ format, body }) => setDraft((d) => ({ ...d, format, body }))} />
        <p class="hint">Each recipient's own fields: {{ firstName }}, {{ plan ?? "free" }}. Marketing mail carries an unsubscribe header;
          {{ unsubscribeUrl }} links to the page, {{ viewInBrowserUrl }} to the web version.</p>
        <${Field} label="Description" hint="For your team; never sent."><input value=${draft.description} onInput=${set("description")} /><//>
        <label class="field check"><input type="checkbox" id="campaign-track-links" checked=${draft.trackLinks !== false}
          onChange=${(e) => setDraft({ ...draft, trackLinks: e.currentTarget.checked })} />
          <span>Track clicks on its links (a single link stays as written with <code>data-notrack</code>)</span></label>
      </form>
      <${Preview} subject=${draft.subject} body=${draft.body} format=${draft.format} />
    </div>

    <section class="card">
      <${Audience} draft=${draft} setDraft=${setDraft} vocabulary=${vocabulary} />
    </section>
    <${TemplateError} error=${save.error} base=${base} />
    <div class="buttons"><button type="submit" form="campaign-form" disabled=${save.busy}>${save.busy ? "Saving…" : isNew ? "Create campaign" : "Save campaign"}</button></div>`;
}

/** Send now, schedule, and test send, for a saved DRAFT or SCHEDULED campaign. */
function SendPanel({ campaign, onChanged }) {
  const id = encodeURIComponent(campaign.id);
  const [when, setWhen] = useState("");
  // The time as each contact's own wall-clock time, in their zone, rather than one instant.
  const [local, setLocal] = useState(false);
  const recipients = useLoad(() => post("/campaigns/count", {
    type: campaign.type, audienceType: campaign.audienceType, segmentId: campaign.segmentId, audienceCondition: campaign.audienceCondition,
    topicId: campaign.topicId,
  }), [campaign.updatedAt]);
  const sendNow = useAction(async () => {
    const answer = await post(`/campaigns/${id}/send`, {});
    onChanged();
    return answer;
  }, (a) => a.message);
  const schedule = useAction(async () => {
    const at = new Date(when);
    if (Number.isNaN(at.getTime())) throw new Error("Choose a date and time");
    const answer = await post(`/campaigns/${id}/send`, local ? { localTime: when } : { scheduledFor: at.toISOString() });
    onChanged();
    return answer;
  }, (a) => a.message);
  const count = recipients.data ? recipients.data.count : null;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return html`
    <section class="card stack" aria-labelledby="send-heading" id="send-panel">
      <h2 id="send-heading">Send</h2>
      ${campaign.status === "SCHEDULED" && html`<p class="notice warn" role="status">Scheduled for <strong>${campaign.localTime
        ? `${campaign.localTime.slice(0, 16).replace("T", " ")} in each contact's time zone` : date(campaign.scheduledFor)}</strong>. Sending now, scheduling again or cancelling changes that.</p>`}
      <div class="buttons">
        <button type="button" id="send-now" disabled=${sendNow.busy || count === null}
          onClick=${() => window.confirm(`Send "${campaign.name}" now to ${count} contacts? This cannot be undone.`) && sendNow.run()}>
          Send now to ${count === null ? "…" : count} contacts</button>
      </div>
      <${ErrorBox} error=${sendNow.error || recipients.error} />
      <form class="inline" onSubmit=${(e) => { e.preventDefault(); schedule.run(); }}>
        <${Field} label=${local ? "Send at, in each contact's time zone" : `Send at (${zone})`}><input type="datetime-local" id="schedule-at" required value=${when} onInput=${(e) => setWhen(e.currentTarget.value)} /><//>
        <button type="submit" class="secondary" disabled=${schedule.busy}>Schedule</button>
      </form>
      <label class="check"><input type="checkbox" id="schedule-local" checked=${local} onChange=${(e) => setLocal(e.currentTarget.checked)} />
        <span>At this time where each contact lives (their <code>timezone</code>, else the project's, in Settings)</span></label>
      <${ErrorBox} error=${schedule.error} />
    </section>
    <${TestSend} path=${`/campaigns/${id}/test`} />`;
}

/** Progress while sending and the results after, refreshed every second until it is over. */
function Results({ campaign, onChanged }) {
  const id = encodeURIComponent(campaign.id);
  const stats = useLoad(() => get(`/campaigns/${id}/stats`), [campaign.id]);
  const config = useLoad(() => get("/config"), []);
  const captured = config.data && config.data.features.captured;
  useEffect(() => {
    if (campaign.status !== "SENDING") return undefined;
    const timer = setInterval(async () => {
      const fresh = await get(`/campaigns/${id}/stats`).catch(() => null);
      if (!fresh) return;
      stats.setData(fresh);
      if (fresh.status !== "SENDING") onChanged();
    }, 1000);
    return () => clearInterval(timer);
  }, [campaign.status]);
  return html`<${Loaded} result=${stats}>${(s) => {
    const done = s.sent + s.failed;
    return html`
      <section class="card" aria-labelledby="results-heading" id="results" data-status=${s.status}>
        <h2 id="results-heading">${s.status === "SENDING" ? "Sending" : "Results"}</h2>
        ${captured && html`<p class="notice warn" role="status" id="captured-notice">No relay is configured: these messages stayed on this
          machine, in the Outbox. Nobody received them, so no opens, clicks or bounces will come.</p>`}
        ${s.status === "SENDING" && html`
          <p>${done} of ${s.expanded ? s.totalRecipients : `${s.totalRecipients}+`} handed to the relay</p>
          <progress max=${Math.max(s.totalRecipients, 1)} value=${done} aria-label="Sending progress"></progress>`}
        <dl class="counts" id="campaign-stats">
          <dt>Recipients</dt><dd data-stat="recipients">${s.totalRecipients}</dd>
          <dt>Sent</dt><dd data-stat="sent">${s.sent}</dd>
          <dt>Opened by people</dt><dd data-stat="opened">${s.openedByPeople} (${percent(s.rates.peopleOpen)})
            <span class="meta" title="A privacy proxy (Apple Mail) fetches every image on delivery">· ${s.opened} with machines</span></dd>
          <dt>Clicked by people</dt><dd data-stat="clicked">${s.clickedByPeople} (${percent(s.rates.peopleClick)})
            <span class="meta" title="Link scanners follow every link before a person sees the mail">· ${s.clicked} with scanners</span></dd>
          <dt>Bounced</dt><dd>${s.bounced} (${percent(s.rates.bounce)})</dd>
          <dt>Complaints</dt><dd>${s.complained}</dd>
          <dt>Unsubscribed</dt><dd>${s.unsubscribed} (${percent(s.rates.unsubscribe)})</dd>
          <dt>Not sent</dt><dd>${s.failed}</dd>
        </dl>
        <p class="meta">Started ${date(s.sentAt)}${s.finishedAt ? ` · finished ${date(s.finishedAt)}` : ""}</p>
      </section>`;
  }}<//>`;
}

export function CampaignPage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const isNew = params.id === "new";
  const id = encodeURIComponent(params.id);
  const campaign = useLoad(() => (isNew ? Promise.resolve(EMPTY) : get(`/campaigns/${id}`)), [params.id]);
  const vocabulary = useLoad(async () => {
    const [fields, events, segments, templates, topics] = await Promise.all([
      get("/contacts/fields"), get("/events/names"), get("/segments"), get("/templates", { pageSize: 100, sort: "name", dir: "asc" }),
      get("/topics"),
    ]);
    return { catalogue: fields.fields, events, segments, templates: templates.data, topics };
  }, []);
  const cancel = useAction(async () => {
    const c = await post(`/campaigns/${id}/cancel`);
    campaign.setData(c);
    return c;
  }, "Campaign cancelled: nothing more is sent");
  const duplicate = useAction(async () => {
    const copy = await post(`/campaigns/${id}/duplicate`);
    navigate(`${base}/campaigns/${encodeURIComponent(copy.id)}`);
    return copy;
  }, (c) => `Created ${c.name}`);
  const remove = useAction(async () => {
    await del(`/campaigns/${id}`);
    toast("Campaign deleted");
    navigate(`${base}/campaigns`);
  });
  const c = campaign.data;
  const editable = c && (isNew || c.status === "DRAFT" || c.status === "SCHEDULED");
  return html`
    <${Page} title=${isNew ? "New campaign" : c ? c.name : "Campaign"} back=${{ href: `${base}/campaigns`, label: "Campaigns" }}
      actions=${!isNew && c && html`
        <${StatusBadge} status=${c.status} />
        ${(c.status === "SCHEDULED" || c.status === "SENDING") && html`<${ActionButton} class="danger" action=${cancel} confirm="Cancel this campaign? Mail not yet handed to the relay is not sent.">Cancel<//>`}
        <${ActionButton} action=${duplicate}>Duplicate<//>
        ${c.status !== "SENDING" && html`<${ActionButton} class="danger" action=${remove} confirm=${`Delete the campaign ${c.name}?`}>Delete<//>`}`}>
      <${ErrorBox} error=${cancel.error || duplicate.error || remove.error} />
      <${Loaded} result=${campaign}>${(loaded) => html`<${Loaded} result=${vocabulary}>${(v) => html`
        ${!isNew && (loaded.status === "DRAFT" || loaded.status === "SCHEDULED") && html`<${SendPanel} campaign=${loaded} onChanged=${campaign.reload} />`}
        ${!isNew && !editable && html`<${Results} campaign=${loaded} onChanged=${campaign.reload} />`}
        ${!isNew && html`<${AbTestPanel} campaign=${loaded} editable=${editable} templates=${v.templates} />`}
        ${!isNew && !editable && loaded.sentAt && html`<${CampaignReport} campaign=${loaded} />`}
        ${!isNew && !editable && loaded.sentAt && loaded.status !== "CANCELLED" && html`<${FollowUpPanel} campaign=${loaded} base=${base} />`}
        ${editable
          ? html`<${Editor} key=${loaded.updatedAt || "new"} campaign=${loaded} isNew=${isNew} base=${base} vocabulary=${v} onSaved=${campaign.setData} />`
          : html`
            <section class="card">
              <h2>Content</h2>
              <dl class="props">
                <dt>Subject</dt><dd>${loaded.subject}</dd>
                <dt>From</dt><dd>${loaded.fromName ? `${loaded.fromName} <${loaded.from}>` : loaded.from}</dd>
                <dt>Audience</dt><dd>${loaded.audienceType.toLowerCase()}${loaded.segmentId ? ` (${(v.segments.find((s) => s.id === loaded.segmentId) || {}).name || "a deleted segment"})` : ""}</dd>
                <dt>Type</dt><dd>${loaded.type.toLowerCase()}</dd>
              </dl>
              <${Preview} subject=${loaded.subject} body=${loaded.body} format=${loaded.format} />
            </section>`}
        ${!isNew && html`<${ArchivePanel} key=${loaded.updatedAt} campaign=${loaded} onSaved=${campaign.setData} />`}`}<//>`}<//>
    <//>`;
}
