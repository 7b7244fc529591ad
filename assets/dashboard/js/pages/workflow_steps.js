// A workflow's steps as the editor shows them: their types and what each does in a line, the
// inputs of each type's config, and the editor of the selected step.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, patch } from "../api.js";
import { ConditionBuilder, emptyCondition } from "../conditions.js";
import { ActionButton, Badge, ErrorBox, Field, Form, useAction } from "../ui.js";

export const STEP_TYPES = [
  ["SEND_EMAIL", "Send email"],
  ["DELAY", "Delay"],
  ["WAIT_FOR_EVENT", "Wait for event"],
  ["CONDITION", "Condition"],
  ["WEBHOOK", "Webhook"],
  ["UPDATE_CONTACT", "Update contact"],
  ["EXIT", "Exit"],
];
export const BRANCHES = { CONDITION: ["yes", "no"], WAIT_FOR_EVENT: ["event", "timeout"] };
export const STATUS_KIND = { RUNNING: "ok", WAITING: "", COMPLETED: "ok", EXITED: "", FAILED: "danger", CANCELLED: "" };

export const label = (type) => (STEP_TYPES.find(([t]) => t === type) || [type, type === "TRIGGER" ? "Trigger" : type])[1];

/** One line saying what a step does. */
export function summary(step, templates) {
  const c = step.config || {};
  switch (step.type) {
    case "TRIGGER": return c.eventName ? `on ${c.eventName}` : "no event yet";
    case "SEND_EMAIL": {
      const t = templates.find((x) => x.id === c.templateId);
      const to = c.recipient && c.recipient.type === "CUSTOM" ? ` to ${c.recipient.email}` : "";
      return `${t ? t.name : "a template"}${to}`;
    }
    case "DELAY": return `${c.amount} ${c.unit}`;
    case "WAIT_FOR_EVENT": return `${c.eventName}${c.timeoutSeconds ? `, ${c.timeoutSeconds} s at most` : ""}`;
    case "CONDITION": return `${(c.condition && c.condition.groups || []).length} group(s)`;
    case "WEBHOOK": return `${c.method || "POST"} ${c.url || ""}`;
    case "UPDATE_CONTACT": return Object.keys(c.data || {}).join(", ") + (c.subscribed === undefined ? "" : ` subscribed=${c.subscribed}`);
    case "EXIT": return c.reason || "";
    default: return "";
  }
}

/** JSON typed in a textarea: the value, or an error to show. */
export function parseJson(text, what) {
  if (!text.trim()) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
}

/** The inputs for one step type's config; `onChange` gets the whole new config. */
function ConfigInputs({ type, config, setConfig, vocabulary }) {
  const set = (key, value) => setConfig({ ...config, [key]: value });
  switch (type) {
    case "TRIGGER":
      return html`<p class="meta">What starts the workflow is set in its settings, above the graph.</p>`;
    case "SEND_EMAIL": {
      const recipient = config.recipient || { type: "CONTACT" };
      return html`
        <${Field} label="Template">
          <select required value=${config.templateId || ""} onChange=${(e) => set("templateId", e.currentTarget.value)}>
            <option value="">Choose a template</option>
            ${vocabulary.templates.map((t) => html`<option value=${t.id} key=${t.id}>${t.name} (${t.type.toLowerCase()})</option>`)}
          </select><//>
        <${Field} label="Recipient">
          <select value=${recipient.type} onChange=${(e) => set("recipient", e.currentTarget.value === "CUSTOM" ? { type: "CUSTOM", email: "" } : { type: "CONTACT" })}>
            <option value="CONTACT">The contact</option><option value="CUSTOM">Another address</option>
          </select><//>
        ${recipient.type === "CUSTOM" && html`<${Field} label="Address"><input type="email" required value=${recipient.email || ""}
          onInput=${(e) => set("recipient", { type: "CUSTOM", email: e.currentTarget.value })} /><//>`}`;
    }
    case "DELAY":
      return html`
        <fieldset class="field duration-set"><legend class="label">Wait for</legend>
          <div class="duration">
            <input type="number" min="1" step="1" required aria-label="Delay amount" value=${config.amount ?? 1}
              onInput=${(e) => set("amount", Number(e.currentTarget.value))} />
            <select aria-label="Delay unit" value=${config.unit || "days"} onChange=${(e) => set("unit", e.currentTarget.value)}>
              ${["seconds", "minutes", "hours", "days"].map((u) => html`<option value=${u}>${u}</option>`)}
            </select>
          </div>
        </fieldset>`;
    case "WAIT_FOR_EVENT":
      return html`
        <${Field} label="Event"><input list="workflow-events" required value=${config.eventName || ""} onInput=${(e) => set("eventName", e.currentTarget.value)} /><//>
        <${Field} label="Time out after (seconds)" hint="Empty: wait as long as it takes. The timeout branch runs after it.">
          <input type="number" min="1" step="1" value=${config.timeoutSeconds ?? ""}
            onInput=${(e) => setConfig(e.currentTarget.value === "" ? { eventName: config.eventName } : { ...config, timeoutSeconds: Number(e.currentTarget.value) })} /><//>`;
    case "CONDITION":
      return html`
        <p class="meta">Fields may also be <code>event.&lt;key&gt;</code> (the event's data) and <code>workflow.&lt;key&gt;</code> (the execution's context).</p>
        <${ConditionBuilder} value=${config.condition || emptyCondition()} catalogue=${vocabulary.catalogue} events=${vocabulary.events}
          segments=${vocabulary.segments} label="Step condition" onChange=${(condition) => set("condition", condition)} />`;
    case "WEBHOOK":
      return html`
        <div class="grid2">
          <${Field} label="URL" hint="Variables render: {{ event.orderId }}, {{ email }}."><input required value=${config.url || ""} onInput=${(e) => set("url", e.currentTarget.value)} /><//>
          <${Field} label="Method"><select value=${config.method || "POST"} onChange=${(e) => set("method", e.currentTarget.value)}>
            ${["POST", "PUT", "PATCH", "GET", "DELETE"].map((m) => html`<option value=${m}>${m}</option>`)}</select><//>
        </div>
        <${Field} label="Headers (JSON object)"><textarea rows="3" value=${config.headersText ?? (config.headers ? JSON.stringify(config.headers, null, 2) : "")}
          onInput=${(e) => set("headersText", e.currentTarget.value)}></textarea><//>
        <${Field} label="Body (JSON)" hint="Empty: the execution (contact, event, context) as JSON."><textarea rows="5" value=${config.bodyText ?? (config.body === undefined ? "" : JSON.stringify(config.body, null, 2))}
          onInput=${(e) => set("bodyText", e.currentTarget.value)}></textarea><//>`;
    case "UPDATE_CONTACT":
      return html`
        <${Field} label="Fields to set (JSON object)" hint='For example {"plan": "pro"}; null removes a field.'><textarea rows="4"
          value=${config.dataText ?? (config.data ? JSON.stringify(config.data, null, 2) : "")} onInput=${(e) => set("dataText", e.currentTarget.value)}></textarea><//>
        <${Field} label="Subscription"><select value=${config.subscribed === undefined ? "" : String(config.subscribed)}
          onChange=${(e) => { const v = e.currentTarget.value; const next = { ...config }; if (v === "") delete next.subscribed; else next.subscribed = v === "true"; setConfig(next); }}>
          <option value="">Leave as it is</option><option value="true">Subscribe</option><option value="false">Unsubscribe</option></select><//>`;
    case "EXIT":
      return html`<${Field} label="Reason"><input maxlength="500" value=${config.reason || ""} onInput=${(e) => set("reason", e.currentTarget.value)} /><//>`;
    default:
      return null;
  }
}

/** The config the API takes from what the inputs hold. */
function toConfig(type, draft) {
  const config = { ...draft };
  if (type === "WEBHOOK") {
    if ("headersText" in config) config.headers = parseJson(config.headersText, "Headers");
    if ("bodyText" in config) config.body = parseJson(config.bodyText, "Body");
    delete config.headersText;
    delete config.bodyText;
    if (config.headers === undefined) delete config.headers;
    if (config.body === undefined) delete config.body;
  }
  if (type === "UPDATE_CONTACT" && "dataText" in config) {
    config.data = parseJson(config.dataText, "Fields");
    delete config.dataText;
    if (config.data === undefined) delete config.data;
  }
  return config;
}

/** A step's name for people: its own, or its type's. */
export function stepName(workflow, id) {
  const s = workflow.steps.find((x) => x.id === id);
  return s ? s.name || label(s.type) : "a deleted step";
}

/** The selected step's editor, beside the graph: its name and config, where it leads, and its removal. */
export function StepEditor({ workflow, step, vocabulary, onChanged, onDeleted, onClose }) {
  const id = encodeURIComponent(workflow.id);
  const [draft, setDraft] = useState({ name: step.name || "", config: step.config || {} });
  const save = useAction(async () => {
    const saved = await patch(`/workflows/${id}/steps/${encodeURIComponent(step.id)}`, { name: draft.name || null, config: toConfig(step.type, draft.config) });
    onChanged();
    return saved;
  }, "Step saved");
  const [splice, setSplice] = useState(true);
  const remove = useAction(async () => {
    await del(`/workflows/${id}/steps/${encodeURIComponent(step.id)}${splice ? "?splice=true" : ""}`);
    onDeleted();
  }, "Step deleted");
  const disconnect = useAction(async (t) => {
    await del(`/workflows/${id}/transitions/${encodeURIComponent(t.id)}`);
    onChanged();
  }, "Transition deleted");
  const out = workflow.transitions.filter((t) => t.fromStepId === step.id);
  return html`
    <section class="card stack" aria-labelledby="step-heading" id="step-editor">
      <div class="card-head">
        <h2 id="step-heading">${label(step.type)} step</h2>
        <button type="button" class="ghost small" onClick=${onClose}>Close</button>
      </div>
      <${Form} action=${save} submit=${step.type === "TRIGGER" ? null : "Save step"}>
        ${step.type !== "TRIGGER" && html`<${Field} label="Name"><input maxlength="200" value=${draft.name} onInput=${(e) => setDraft({ ...draft, name: e.currentTarget.value })} /><//>`}
        <${ConfigInputs} type=${step.type} config=${draft.config} vocabulary=${vocabulary} setConfig=${(config) => setDraft({ ...draft, config })} />
      <//>
      ${out.length > 0 && html`
        <div>
          <h3 class="label">Leads to</h3>
          <ul class="plain-list" id="step-leads">${out.map((t) => html`<li key=${t.id}>
            ${t.branch && html`<${Badge}>${t.branch}<//> `}${stepName(workflow, t.toStepId)}
            <button type="button" class="ghost small" aria-label=${`Disconnect ${stepName(workflow, step.id)} from ${stepName(workflow, t.toStepId)}`} onClick=${() => disconnect.run(t)}>Disconnect</button></li>`)}</ul>
          <${ErrorBox} error=${disconnect.error} />
        </div>`}
      ${step.type !== "TRIGGER" && html`
        <div class="buttons">
          <label class="check"><input type="checkbox" checked=${splice} onChange=${(e) => setSplice(e.currentTarget.checked)} /> Reconnect the steps around it</label>
          <${ActionButton} class="danger" action=${remove} confirm="Delete this step?">Delete step<//>
        </div>
        <${ErrorBox} error=${remove.error} />`}
    </section>`;
}

/** A new step's config, valid as it is, for the type chosen. */
export function starter(type, vocabulary) {
  switch (type) {
    case "SEND_EMAIL": return { templateId: vocabulary.templates[0] ? vocabulary.templates[0].id : "" };
    case "DELAY": return { amount: 1, unit: "days" };
    case "WAIT_FOR_EVENT": return { eventName: vocabulary.events[0] ? vocabulary.events[0].name : "event.name" };
    case "CONDITION": return { condition: emptyCondition() };
    case "WEBHOOK": return { url: "https://example.com/hook", method: "POST" };
    case "UPDATE_CONTACT": return { data: {} };
    default: return {};
  }
}

