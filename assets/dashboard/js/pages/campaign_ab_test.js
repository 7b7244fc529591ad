// A campaign's A/B test (issue 34, item 1). Before the send: 2 to 5 variants (a new subject,
// sender name, body, or a template's body), the share of the audience they are tried on, the
// metric, the wait and who picks. After: each variant's results in the test share, the winner
// and, while the test waits, buttons to pick one by hand.

import { html, useState } from "../../vendor/preact-htm.js";
import { api, get, post } from "../api.js";
import { ActionButton, Badge, ErrorBox, Field, Table, date, percent, useAction, useLoad } from "../ui.js";

const LABELS = ["A", "B", "C", "D", "E"];
const METRICS = [
  ["humanClicks", "Clicks by people (link scanners left out)"],
  ["clicks", "All clicks"],
  ["humanOpens", "Opens by people (privacy proxies left out)"],
  ["opens", "All opens"],
];
const PHASES = {
  READY: "Ready: the test starts when the campaign is sent.",
  TESTING: "The test share is going out; the rest waits for the winner.",
  DECIDED: "Decided: the winner goes to the rest of the audience.",
};

/** The test of campaign `campaign`, or null when it has none. */
function loadTest(campaign) {
  return get(`/campaigns/${encodeURIComponent(campaign.id)}/ab-test`).catch((e) => {
    if (e.status === 404) return { none: true };
    throw e;
  });
}

/** A variant as the form holds it, from a saved one. */
function formVariant(v) {
  const kind = v.templateId ? "template" : v.body ? "own" : "campaign";
  return { subject: v.subject || "", fromName: v.fromName || "", kind, templateId: v.templateId || "", body: kind === "own" ? v.body : "" };
}

function VariantFields({ index, variant, templates, onChange, onRemove, canRemove }) {
  const set = (key) => (e) => onChange({ ...variant, [key]: e.currentTarget.value });
  const label = LABELS[index];
  return html`
    <fieldset class="card stack variant" data-variant=${label}>
      <legend class="label">Variant ${label}${index === 0 ? " (usually the campaign as written)" : ""}</legend>
      <${Field} label=${`Subject of ${label}`} hint="Left empty, the campaign's">
        <input class="variant-subject" maxlength="998" value=${variant.subject} onInput=${set("subject")} /><//>
      <${Field} label=${`Sender name of ${label}`} hint="Left empty, the campaign's">
        <input class="variant-from-name" maxlength="998" value=${variant.fromName} onInput=${set("fromName")} /><//>
      <${Field} label=${`Body of ${label}`}>
        <select class="variant-kind" value=${variant.kind} onChange=${set("kind")}>
          <option value="campaign">The campaign's</option>
          <option value="template">A template's</option>
          <option value="own">Its own HTML</option>
        </select><//>
      ${variant.kind === "template" && html`
        <${Field} label=${`Template of ${label}`} hint="Its body, and its subject when the variant has none, are copied when you save">
          <select class="variant-template" value=${variant.templateId} onChange=${set("templateId")}>
            <option value="">Choose a template</option>
            ${templates.map((t) => html`<option value=${t.id}>${t.name}</option>`)}
          </select><//>`}
      ${variant.kind === "own" && html`
        <${Field} label=${`HTML of ${label}`} wide=${true}>
          <textarea class="variant-body" rows="6" value=${variant.body} onInput=${set("body")}></textarea><//>`}
      ${canRemove && html`<div class="buttons"><button type="button" class="secondary" onClick=${onRemove}>Remove variant ${label}</button></div>`}
    </fieldset>`;
}

function Settings({ campaign, test, templates, onSaved }) {
  const id = encodeURIComponent(campaign.id);
  const saved = test.none ? null : test;
  const [variants, setVariants] = useState(saved ? saved.variants.map(formVariant) : [formVariant({}), formVariant({})]);
  const [share, setShare] = useState(saved ? saved.testShare : 20);
  const [metric, setMetric] = useState(saved ? saved.metric : "humanClicks");
  const [wait, setWait] = useState(saved ? saved.waitHours : 4);
  const [pick, setPick] = useState(saved ? saved.pick : "auto");
  const save = useAction(async () => {
    const body = {
      variants: variants.map((v) => {
        const out = {};
        if (v.subject.trim()) out.subject = v.subject.trim();
        if (v.fromName.trim()) out.fromName = v.fromName.trim();
        if (v.kind === "template" && v.templateId) out.templateId = v.templateId;
        if (v.kind === "own" && v.body.trim()) out.body = v.body;
        return out;
      }),
      testShare: Number(share), metric, waitHours: Number(wait), pick,
    };
    const made = await api("PUT", `/campaigns/${id}/ab-test`, body);
    onSaved(made);
    return made;
  }, "A/B test saved");
  const remove = useAction(async () => {
    await api("DELETE", `/campaigns/${id}/ab-test`);
    onSaved({ none: true });
  }, "A/B test removed");
  const change = (i) => (v) => setVariants(variants.map((old, j) => (j === i ? v : old)));
  return html`
    <form class="stack" id="ab-test-form" onSubmit=${(e) => { e.preventDefault(); save.run(); }}>
      ${variants.map((v, i) => html`<${VariantFields} key=${i} index=${i} variant=${v} templates=${templates}
        onChange=${change(i)} canRemove=${variants.length > 2} onRemove=${() => setVariants(variants.filter((_, j) => j !== i))} />`)}
      ${variants.length < 5 && html`<div class="buttons">
        <button type="button" class="secondary" id="ab-add-variant" onClick=${() => setVariants([...variants, formVariant({})])}>Add variant ${LABELS[variants.length]}</button></div>`}
      <div class="grid">
        <${Field} label="Test share (%)" hint=${`Each variant goes to about ${Math.round(Number(share) / variants.length)} % of the audience; the other ${100 - Number(share)} % get the winner`}>
          <input type="number" id="ab-share" min="1" max="100" step="1" value=${share} onInput=${(e) => setShare(e.currentTarget.value)} /><//>
        <${Field} label="Wait (hours)" hint="From when the test share is queued to the decision, 1 to 72">
          <input type="number" id="ab-wait" min="1" max="72" step="1" value=${wait} onInput=${(e) => setWait(e.currentTarget.value)} /><//>
        <${Field} label="The winner has the most">
          <select id="ab-metric" value=${metric} onChange=${(e) => setMetric(e.currentTarget.value)}>
            ${METRICS.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
          </select><//>
        <${Field} label="Who picks">
          <select id="ab-pick" value=${pick} onChange=${(e) => setPick(e.currentTarget.value)}>
            <option value="auto">Tidings, by the metric, after the wait (ties: the first)</option>
            <option value="manual">I do, on this page</option>
          </select><//>
      </div>
      <div class="buttons">
        <button type="submit" id="ab-save" disabled=${save.busy}>Save the A/B test</button>
        ${saved && html`<${ActionButton} action=${remove} confirm="Remove the A/B test? The campaign goes to everyone as written.">Remove the test<//>`}
      </div>
      <${ErrorBox} error=${save.error || remove.error} />
    </form>`;
}

function Results({ campaign, test, onSaved }) {
  const id = encodeURIComponent(campaign.id);
  const pick = useAction(async (variant) => {
    const decided = await post(`/campaigns/${id}/ab-test/winner`, { variant });
    onSaved(decided);
    return decided;
  }, (t) => `Variant ${LABELS[t.winner]} goes to the rest`);
  const metric = (METRICS.find(([value]) => value === test.metric) || [])[1];
  return html`
    <p id="ab-phase" role="status">${PHASES[test.phase]}${test.phase === "TESTING" && test.decideAt
      ? ` ${test.pick === "auto" ? "The winner is picked" : "The wait ends"} ${date(test.decideAt)}.` : ""}</p>
    <p class="meta">${test.testShare} % of the audience, split between ${test.variants.length} variants; the winner has the most ${metric ? metric.toLowerCase() : test.metric} for the emails sent.</p>
    <${Table} label="Results of each variant in the test share" id="ab-results" class="table cards">
      <thead><tr><th scope="col">Variant</th><th scope="col">Subject</th><th scope="col" class="num">Sent</th>
        <th scope="col" class="num">Opened by people</th><th scope="col" class="num">Clicked by people</th>
        <th scope="col" class="num">Clicked</th><th scope="col" class="num">Score</th><th scope="col"><span class="visually-hidden">Pick</span></th></tr></thead>
      <tbody>${test.variants.map((v) => html`<tr key=${v.index} data-variant=${v.label}>
        <td data-label="Variant">${v.label}${test.winner === v.index && html` <${Badge} kind="ok">Winner<//>`}</td>
        <td data-label="Subject">${v.subject || campaign.subject}</td>
        <td class="num" data-label="Sent">${v.results.sent}</td>
        <td class="num" data-label="Opened by people">${v.results.openedByPeople}</td>
        <td class="num" data-label="Clicked by people">${v.results.clickedByPeople}</td>
        <td class="num" data-label="Clicked">${v.results.clicked}</td>
        <td class="num" data-label="Score" data-col="score">${percent(v.results.score)}</td>
        <td data-label="Pick">${test.canPick && html`<button type="button" class="secondary" data-pick=${v.label}
          disabled=${pick.busy} onClick=${() => pick.run(v.index)}>Send ${v.label} to the rest</button>`}</td></tr>`)}</tbody>
    <//>
    ${test.decidedAt && html`<p class="meta" id="ab-decided">Variant ${LABELS[test.winner]} was picked ${test.decidedBy === "hand" ? "by hand" : "by the metric"} ${date(test.decidedAt)}.</p>`}
    <${ErrorBox} error=${pick.error} />`;
}

/** The A/B test card of a campaign: its settings while it may change, its results after. */
export function AbTestPanel({ campaign, editable, templates }) {
  const test = useLoad(() => loadTest(campaign), [campaign.id, campaign.status, campaign.updatedAt]);
  const [open, setOpen] = useState(false);
  const t = test.data;
  if (!t || (t.none && !editable)) return html`<${ErrorBox} error=${test.error} retry=${test.reload} />`;
  return html`
    <section class="card stack" aria-labelledby="ab-heading" id="ab-test">
      <h2 id="ab-heading">A/B test</h2>
      ${editable && t.none && !open
        ? html`
          <p class="meta">Try up to five subjects, sender names or bodies on part of the audience, then send the one that did best to the rest.</p>
          <div class="buttons"><button type="button" class="secondary" id="ab-start" onClick=${() => setOpen(true)}>Add an A/B test</button></div>`
        : editable
          ? html`<${Settings} campaign=${campaign} test=${t} templates=${templates} onSaved=${(saved) => { test.setData(saved); setOpen(false); }} />`
          : html`<${Results} campaign=${campaign} test=${t} onSaved=${test.setData} />`}
    </section>`;
}
