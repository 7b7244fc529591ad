// The condition builder: the whole condition tree of appliance.md §11 (groups joined by AND or
// OR, filters ANDed inside a group, nested conditions) with the right input for each operator.
// It edits the same JSON the API takes, so a saved segment comes back as it was built.

import { html } from "../vendor/preact-htm.js";
import { get } from "./api.js";
import { Field, useLoad } from "./ui.js";

const FIELD_OPERATORS = [
  ["equals", "equals"],
  ["notEquals", "does not equal"],
  ["contains", "contains"],
  ["notContains", "does not contain"],
  ["greaterThan", "is greater than"],
  ["greaterThanOrEqual", "is at least"],
  ["lessThan", "is less than"],
  ["lessThanOrEqual", "is at most"],
  ["gt", "gt (greater than)"],
  ["lt", "lt (less than)"],
  ["exists", "is set"],
  ["notExists", "is not set"],
  ["within", "is within the last"],
  ["olderThan", "is older than"],
];
const EVENT_OPERATORS = [
  ["triggered", "has happened"],
  ["notTriggered", "has never happened"],
  ["triggeredWithin", "happened within the last"],
  ["notTriggeredWithin", "did not happen within the last"],
  ["triggeredOlderThan", "happened before the last"],
];
const SEGMENT_OPERATORS = [
  ["memberOfSegment", "is in segment"],
  ["notMemberOfSegment", "is not in segment"],
];
const CAMPAIGN_OPERATORS = [
  ["received", "was sent"],
  ["notReceived", "was not sent"],
  ["opened", "was sent and opened"],
  ["notOpened", "was sent and not opened"],
  ["clicked", "was sent and clicked"],
  ["notClicked", "was sent and not clicked"],
];
// Operators the API takes as other names of the ones above: offered only to a filter that already
// uses one, so the list does not show the same test twice.
const ALIASES = new Set(["gt", "lt"]);
/** The events a machine may make (a privacy proxy's open, a scanner's click): their filters
 * count people's only unless `includeMachine` is set. */
const MACHINE_EVENTS = /^(event\.)?email\.(opened|clicked)$/;
const DURATION = new Set(["within", "olderThan", "triggeredWithin", "notTriggeredWithin", "triggeredOlderThan"]);
const NO_VALUE = new Set(["exists", "notExists", "triggered", "notTriggered", ...CAMPAIGN_OPERATORS.map(([op]) => op)]);
const STANDARD_FIELDS = [["email", "string"], ["subscribed", "boolean"], ["snoozed", "boolean"], ["createdAt", "date"], ["updatedAt", "date"]];

/** A contact field's type: a topic's (`topic.<id>`) and `snoozed` are booleans, others the catalogue's. */
function typeOfField(field, catalogue) {
  if (field === "snoozed" || (field || "").startsWith("topic.")) return "boolean";
  return (catalogue.find((f) => f.field === field) || {}).type;
}

/** What a filter tests: a contact field, an event, a segment, or a campaign's email. */
export function kindOf(filter) {
  if (SEGMENT_OPERATORS.some(([op]) => op === filter.operator)) return "segment";
  if (CAMPAIGN_OPERATORS.some(([op]) => op === filter.operator)) return "campaign";
  if (EVENT_OPERATORS.some(([op]) => op === filter.operator)) return "event";
  return "field";
}

export function emptyFilter() {
  return { field: "subscribed", operator: "equals", value: true };
}

export function emptyCondition() {
  return { logic: "AND", groups: [{ filters: [emptyFilter()] }] };
}

/** A copy of `value` with the node at `path` (a list of keys) replaced by `f(node)`. */
function update(value, path, f) {
  if (path.length === 0) return f(value);
  const [head, ...rest] = path;
  const copy = Array.isArray(value) ? [...value] : { ...value };
  copy[head] = update(value[head], rest, f);
  return copy;
}

function ValueInput({ filter, type, segments, onChange, label }) {
  const op = filter.operator;
  if (NO_VALUE.has(op)) return html`<div class="field"><span class="label">Value</span><span class="meta">—</span></div>`;
  if (DURATION.has(op)) {
    return html`
      <fieldset class="field duration-set">
        <legend class="label">Amount</legend>
        <div class="duration">
          <input type="number" min="1" step="1" required aria-label=${`${label} amount`} value=${filter.value ?? ""}
            onInput=${(e) => onChange({ ...filter, value: e.currentTarget.value === "" ? "" : Number(e.currentTarget.value) })} />
          <select aria-label=${`${label} unit`} value=${filter.unit || "days"} onChange=${(e) => onChange({ ...filter, unit: e.currentTarget.value })}>
            <option value="minutes">minutes</option><option value="hours">hours</option><option value="days">days</option>
          </select>
        </div>
      </fieldset>`;
  }
  if (op === "memberOfSegment" || op === "notMemberOfSegment") {
    return html`<${Field} label="Segment">
      <select required value=${filter.value || ""} onChange=${(e) => onChange({ ...filter, value: e.currentTarget.value })}>
        <option value="">Choose a segment</option>
        ${segments.map((s) => html`<option value=${s.id} key=${s.id}>${s.name}</option>`)}
      </select><//>`;
  }
  if (type === "boolean" && (op === "equals" || op === "notEquals")) {
    return html`<${Field} label="Value">
      <select value=${String(filter.value)} onChange=${(e) => onChange({ ...filter, value: e.currentTarget.value === "true" })}>
        <option value="true">true</option><option value="false">false</option>
      </select><//>`;
  }
  const numeric = type === "number" || (["greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual", "gt", "lt"].includes(op) && type !== "date");
  if (numeric) {
    return html`<${Field} label="Value"><input type="number" step="any" required value=${filter.value ?? ""}
      onInput=${(e) => onChange({ ...filter, value: e.currentTarget.value === "" ? "" : Number(e.currentTarget.value) })} /><//>`;
  }
  return html`<${Field} label="Value"><input value=${filter.value ?? ""} placeholder=${type === "date" ? "2025-01-31" : ""}
    onInput=${(e) => onChange({ ...filter, value: e.currentTarget.value })} /><//>`;
}

/** "Count machines' too" for a filter on what machines also do (a privacy proxy's open, a
 * scanner's click): left out, only people's count. */
function MachineCheck({ filter, onChange }) {
  return html`<label class="field check machine-check"
      title="A privacy proxy fetches every image on delivery; a link scanner follows every link. Left out unless ticked.">
    <input type="checkbox" checked=${!!filter.includeMachine} onChange=${(e) => {
      const next = { ...filter };
      if (e.currentTarget.checked) next.includeMachine = true; else delete next.includeMachine;
      onChange(next);
    }} />
    <span>Count machines' too</span>
  </label>`;
}

function FilterRow({ filter, catalogue, events, segments, campaigns, onChange, onRemove, label }) {
  const kind = kindOf(filter);
  const type = kind === "field" ? typeOfField(filter.field, catalogue) : null;
  const setKind = (next) => {
    if (next === "field") onChange(emptyFilter());
    else if (next === "event") onChange({ field: events[0] ? events[0].name : "", operator: "triggered" });
    else if (next === "campaign") onChange({ field: campaigns[0] ? `campaign.${campaigns[0].id}` : "", operator: "notOpened" });
    else onChange({ operator: "memberOfSegment", value: segments[0] ? segments[0].id : "" });
  };
  const operators = ({ field: FIELD_OPERATORS, event: EVENT_OPERATORS, campaign: CAMPAIGN_OPERATORS }[kind] || SEGMENT_OPERATORS)
    .filter(([op]) => !ALIASES.has(op) || op === filter.operator);
  // A new field of another type starts from an empty value (a boolean's `true` is no plan name).
  const setField = (field) => {
    const next = { ...filter, field };
    if (kind === "field" && typeOfField(field, catalogue) !== type && "value" in filter) {
      next.value = typeOfField(field, catalogue) === "boolean" ? true : "";
    }
    onChange(next);
  };
  return html`
    <div class="filter" role="group" aria-label=${label}>
      <${Field} label="Test">
        <select value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
          <option value="field">A field</option><option value="event">An event</option><option value="segment">A segment</option>
          <option value="campaign">A campaign</option>
        </select>
      <//>
      ${kind === "field" && html`<${Field} label="Field">
        <input list="condition-fields" required value=${filter.field} onInput=${(e) => setField(e.currentTarget.value)} /><//>`}
      ${kind === "event" && html`<div class="event-cell">
        <${Field} label="Event">
          <input list="condition-events" required value=${filter.field} onInput=${(e) => onChange({ ...filter, field: e.currentTarget.value })} /><//>
        ${MACHINE_EVENTS.test(filter.field) && html`<${MachineCheck} filter=${filter} onChange=${onChange} />`}
      </div>`}
      ${kind === "campaign" && html`<div class="event-cell">
        <${Field} label="Campaign">
          <select required value=${filter.field || ""} onChange=${(e) => onChange({ ...filter, field: e.currentTarget.value })}>
            <option value="">Choose a sent campaign</option>
            ${filter.field && !campaigns.some((c) => `campaign.${c.id}` === filter.field) && html`<option value=${filter.field}>${filter.field}</option>`}
            ${campaigns.map((c) => html`<option value=${`campaign.${c.id}`} key=${c.id}>${c.name}</option>`)}
          </select><//>
        ${filter.operator !== "received" && filter.operator !== "notReceived" && html`<${MachineCheck} filter=${filter} onChange=${onChange} />`}
      </div>`}
      ${kind === "segment" && html`<div></div>`}
      <${Field} label="Operator">
        <select value=${filter.operator} onChange=${(e) => {
          const operator = e.currentTarget.value;
          const next = { ...filter, operator };
          if (NO_VALUE.has(operator)) delete next.value;
          if (DURATION.has(operator)) { next.value = typeof filter.value === "number" ? filter.value : 7; next.unit = filter.unit || "days"; } else delete next.unit;
          onChange(next);
        }}>
          ${operators.map(([value, text]) => html`<option value=${value}>${text}</option>`)}
        </select>
      <//>
      <${ValueInput} filter=${filter} type=${type} segments=${segments} onChange=${onChange} label=${label} />
      <button type="button" class="danger small" aria-label=${`Remove ${label}`} onClick=${onRemove}>Remove</button>
    </div>`;
}

/** Edits `value` (a condition) and reports every change through `onChange`. */
export function ConditionBuilder({ value, onChange, catalogue, events, segments, topics: given, campaigns: sent, depth = 0, label = "Condition" }) {
  // The project's topics, offered as fields `topic.<id>`, and its sent campaigns, for the
  // campaign filters: read once, by the outermost builder.
  const loaded = useLoad(() => (given ? Promise.resolve(given) : get("/topics")), []);
  const topics = given || loaded.data || [];
  const loadedCampaigns = useLoad(() => (sent ? Promise.resolve(sent) : get("/campaigns?status=SENT&pageSize=100").then((p) => p.data)), []);
  const campaigns = sent || loadedCampaigns.data || [];
  const condition = value || emptyCondition();
  const groups = condition.groups || [];
  const set = (path, f) => onChange(update(condition, path, f));
  return html`
    <div class="condition" data-depth=${depth}>
      ${depth === 0 && html`
        <datalist id="condition-fields">${[...STANDARD_FIELDS.map(([f]) => f), ...catalogue.filter((f) => f.isCustom).map((f) => f.field)].map((f) => html`<option value=${f} />`)}
          ${topics.map((t) => html`<option value=${`topic.${t.id}`} label=${`Topic: ${t.name}`} />`)}</datalist>
        <datalist id="condition-events">${events.map((e) => html`<option value=${e.name} />`)}</datalist>`}
      <${Field} label=${depth === 0 ? "Contacts must match" : "Nested condition must match"}>
        <select value=${(condition.logic || "AND").toUpperCase()} onChange=${(e) => set(["logic"], () => e.currentTarget.value)}>
          <option value="AND">all of these groups (AND)</option>
          <option value="OR">any of these groups (OR)</option>
        </select>
      <//>
      ${groups.map((group, g) => {
        const groupLabel = `${label}, group ${g + 1}`;
        return html`
        <fieldset class="group" key=${g}>
          <legend>Group ${g + 1}</legend>
          <p class="meta">Every filter of the group must hold.</p>
          ${(group.filters || []).map((filter, f) => html`
            <${FilterRow} key=${f} filter=${filter} catalogue=${catalogue} events=${events} segments=${segments} campaigns=${campaigns} label=${`${groupLabel}, filter ${f + 1}`}
              onChange=${(next) => set(["groups", g, "filters", f], () => next)}
              onRemove=${() => set(["groups", g, "filters"], (list) => list.filter((_, i) => i !== f))} />`)}
          ${group.conditions && html`
            <div class="nested">
              <${ConditionBuilder} value=${group.conditions} catalogue=${catalogue} events=${events} segments=${segments} topics=${topics} campaigns=${campaigns} depth=${depth + 1} label=${`${groupLabel}, nested`}
                onChange=${(next) => set(["groups", g, "conditions"], () => next)} />
            </div>`}
          <div class="buttons">
            <button type="button" class="secondary small" onClick=${() => set(["groups", g, "filters"], (list) => [...(list || []), emptyFilter()])}>Add filter</button>
            ${!group.conditions && depth < 4 && html`<button type="button" class="secondary small" onClick=${() => set(["groups", g, "conditions"], () => emptyCondition())}>Add nested condition</button>`}
            ${group.conditions && html`<button type="button" class="secondary small" onClick=${() => set(["groups", g], (gr) => { const copy = { ...gr }; delete copy.conditions; return copy; })}>Remove nested condition</button>`}
            <button type="button" class="danger small" onClick=${() => set(["groups"], (list) => list.filter((_, i) => i !== g))}>Remove group</button>
          </div>
        </fieldset>`;
      })}
      <div><button type="button" class="secondary" onClick=${() => set(["groups"], (list) => [...(list || []), { filters: [emptyFilter()] }])}>Add group</button></div>
    </div>`;
}
