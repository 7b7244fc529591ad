// Workflows: the list with enabled switches, a search and a filter on whether each is on; a
// workflow's page with its graph drawn (steps as
// nodes, transitions as arrows with their branch), the selected step's config with the right
// inputs, steps and transitions added and removed, and its executions with their step history.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { ConditionBuilder, emptyCondition } from "../conditions.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Form, Json, Loaded, Page, PagePager, Table, date, toast,
  useAction, useLoad, useSearch } from "../ui.js";

const STEP_TYPES = [
  ["SEND_EMAIL", "Send email"],
  ["DELAY", "Delay"],
  ["WAIT_FOR_EVENT", "Wait for event"],
  ["CONDITION", "Condition"],
  ["WEBHOOK", "Webhook"],
  ["UPDATE_CONTACT", "Update contact"],
  ["EXIT", "Exit"],
];
const BRANCHES = { CONDITION: ["yes", "no"], WAIT_FOR_EVENT: ["event", "timeout"] };
const STATUS_KIND = { RUNNING: "ok", WAITING: "", COMPLETED: "ok", EXITED: "", FAILED: "danger", CANCELLED: "" };

const label = (type) => (STEP_TYPES.find(([t]) => t === type) || [type, type === "TRIGGER" ? "Trigger" : type])[1];

/** One line saying what a step does. */
function summary(step, templates) {
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

export function Workflows({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [status, setStatus] = useState(params.get("status") || "");
  const [page, setPage] = useState(1);
  const search = useSearch(params.get("search"), () => setPage(1));
  const list = useLoad(() => {
    setQuery({ search: search.applied, status });
    return get("/workflows", { page, pageSize: 25, status, search: search.applied.trim() });
  }, [search.applied, status, page]);
  const toggle = useAction(async (w) => {
    const saved = await patch(`/workflows/${encodeURIComponent(w.id)}`, { enabled: !w.enabled });
    list.reload();
    return saved;
  }, (w) => `${w.name} ${w.enabled ? "enabled" : "disabled"}`);
  const create = useAction(async (data) => {
    const event = String(data.get("event") || "").trim();
    const created = await post("/workflows", { name: data.get("name"), triggerConfig: event ? { eventName: event } : undefined });
    navigate(`${base}/workflows/${encodeURIComponent(created.id)}`);
    return created;
  }, "Workflow created");
  return html`
    <${Page} title="Workflows">
      <${ErrorBox} error=${toggle.error} />
      <div class="toolbar" role="search">
        <${Field} label="Search"><input type="search" value=${search.text} placeholder="name or description" onInput=${(e) => search.setText(e.currentTarget.value)} /><//>
        <div class="field narrow-field">
          <label class="label" for="workflow-status">Status</label>
          <select id="workflow-status" value=${status} onChange=${(e) => { setStatus(e.currentTarget.value); setPage(1); }}>
            <option value="">All</option>
            <option value="active">Enabled</option>
            <option value="disabled">Disabled</option>
          </select>
        </div>
      </div>
      <${Loaded} result=${list}>${(p) => p.data.length === 0
        ? html`<${Empty}>${search.applied || status ? "No workflows match." : "No workflows yet. A workflow runs steps for a contact when an event happens: send an email, wait, branch, call a webhook."}<//>`
        : html`<${Table} label="Workflows" id="workflows-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Trigger</th><th scope="col" class="num">Steps</th><th scope="col">Enabled</th><th scope="col">Updated</th></tr></thead>
            <tbody>${p.data.map((w) => html`
              <tr key=${w.id} data-workflow=${w.name}>
                <td><a href=${`${base}/workflows/${encodeURIComponent(w.id)}`}>${w.name}</a>${w.description && html`<div class="meta">${w.description}</div>`}</td>
                <td>${w.triggerType === "MANUAL" ? "started by hand" : w.triggerConfig.eventName || html`<span class="meta">no event</span>`}</td>
                <td class="num">${w.steps.length}</td>
                <td><label class="check"><input type="checkbox" checked=${w.enabled} disabled=${toggle.busy}
                  aria-label=${`${w.name} enabled`} onChange=${() => toggle.run(w)} /> ${w.enabled ? "on" : "off"}</label></td>
                <td>${date(w.updatedAt)}</td>
              </tr>`)}</tbody>
          <//>
          <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Workflows" />`}<//>
      <section class="card" aria-labelledby="new-workflow">
        <h2 id="new-workflow">New workflow</h2>
        <${Form} action=${create} submit="Create workflow" id="workflow-create">
          <div class="grid2">
            <${Field} label="Name"><input name="name" required maxlength="200" /><//>
            <${Field} label="Trigger event" hint="The event that starts it, such as signup or contact.subscribed; it can wait."><input name="event" maxlength="200" /><//>
          </div>
        <//>
      </section>
    <//>`;
}

/** Rows by distance from the trigger (top to bottom), side by side in order of discovery. */
function layout(workflow) {
  const steps = workflow.steps;
  const depth = new Map();
  const trigger = steps.find((s) => s.type === "TRIGGER");
  const queue = trigger ? [trigger.id] : [];
  if (trigger) depth.set(trigger.id, 0);
  while (queue.length) {
    const at = queue.shift();
    for (const t of workflow.transitions.filter((t) => t.fromStepId === at)) {
      if (!depth.has(t.toStepId)) {
        depth.set(t.toStepId, depth.get(at) + 1);
        queue.push(t.toStepId);
      }
    }
  }
  const deepest = Math.max(0, ...depth.values());
  steps.forEach((s) => { if (!depth.has(s.id)) depth.set(s.id, deepest + 1); });
  const rows = new Map();
  const place = new Map();
  for (const s of steps) {
    const col = depth.get(s.id);
    const row = rows.get(col) || 0;
    rows.set(col, row + 1);
    place.set(s.id, { x: 20 + row * 230, y: 20 + col * 100 });
  }
  const width = 80 + Math.max(1, ...rows.values()) * 230;
  const height = 20 + (Math.max(0, ...depth.values()) + 1) * 100;
  return { place, width, height };
}

const NODE_W = 190;
const NODE_H = 56;

function Graph({ workflow, templates, selected, onSelect }) {
  const { place, width, height } = layout(workflow);
  return html`
    <div class="graph-wrap">
      <svg class="graph" id="workflow-graph" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="group" aria-label="Workflow graph">
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" /></marker></defs>
        ${workflow.transitions.map((t) => {
          const a = place.get(t.fromStepId);
          const b = place.get(t.toStepId);
          if (!a || !b) return null;
          const back = b.y <= a.y;
          // Down from the bottom of one step to the top of the next; a way back goes round the side.
          const [x1, y1] = back ? [a.x + NODE_W, a.y + NODE_H / 2] : [a.x + NODE_W / 2, a.y + NODE_H];
          const [x2, y2] = back ? [b.x + NODE_W, b.y + NODE_H / 2] : [b.x + NODE_W / 2, b.y];
          const d = back
            ? `M ${x1} ${y1} C ${x1 + 50} ${y1}, ${x2 + 50} ${y2}, ${x2} ${y2}`
            : `M ${x1} ${y1} C ${x1} ${(y1 + y2) / 2}, ${x2} ${(y1 + y2) / 2}, ${x2} ${y2}`;
          const [lx, ly] = back ? [Math.max(x1, x2) + 40, (y1 + y2) / 2] : [(x1 + x2) / 2, (y1 + y2) / 2 + 4];
          return html`<g key=${t.id} class="edge" data-branch=${t.branch || ""}>
            <path d=${d} marker-end="url(#arrow)" />
            ${t.branch && html`<text x=${lx} y=${ly} class="edge-label">${t.branch}</text>`}
          </g>`;
        })}
        ${workflow.steps.map((s) => {
          const p = place.get(s.id);
          const text = summary(s, templates);
          const title = s.name || label(s.type);
          const shown = text.length > 28 ? `${text.slice(0, 27)}…` : text;
          // The accessible name is the text shown (axe: label-content-name-mismatch).
          return html`<g key=${s.id} class=${`node ${s.type.toLowerCase()}${selected === s.id ? " selected" : ""}`} tabindex="0" role="button"
            aria-pressed=${selected === s.id} aria-label=${`${title} ${shown}`} data-step=${s.id}
            onClick=${() => onSelect(s.id)} onKeyDown=${(e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onSelect(s.id); } }}>
            <rect x=${p.x} y=${p.y} width=${NODE_W} height=${NODE_H} rx="8" />
            <text x=${p.x + 10} y=${p.y + 22} class="node-type">${`${title} `}</text>
            <text x=${p.x + 10} y=${p.y + 42} class="node-text">${shown}</text>
          </g>`;
        })}
      </svg>
    </div>`;
}

/** JSON typed in a textarea: the value, or an error to show. */
function parseJson(text, what) {
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
      return html`<p class="meta">The trigger's event is set with the workflow, above.</p>`;
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

function StepEditor({ workflow, step, vocabulary, onChanged, onDeleted }) {
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
  return html`
    <section class="card stack" aria-labelledby="step-heading" id="step-editor">
      <h2 id="step-heading">${label(step.type)} step</h2>
      <${Form} action=${save} submit=${step.type === "TRIGGER" ? null : "Save step"}>
        <${Field} label="Name"><input maxlength="200" value=${draft.name} onInput=${(e) => setDraft({ ...draft, name: e.currentTarget.value })} /><//>
        <${ConfigInputs} type=${step.type} config=${draft.config} vocabulary=${vocabulary} setConfig=${(config) => setDraft({ ...draft, config })} />
      <//>
      ${step.type !== "TRIGGER" && html`
        <div class="buttons">
          <label class="check"><input type="checkbox" checked=${splice} onChange=${(e) => setSplice(e.currentTarget.checked)} /> Reconnect the steps around it</label>
          <${ActionButton} class="danger" action=${remove} confirm="Delete this step?">Delete step<//>
        </div>
        <${ErrorBox} error=${remove.error} />`}
    </section>`;
}

/** A new step's config, valid as it is, for the type chosen. */
function starter(type, vocabulary) {
  switch (type) {
    case "SEND_EMAIL": return { templateId: vocabulary.templates[0] ? vocabulary.templates[0].id : "" };
    case "DELAY": return { amount: 1, unit: "days" };
    case "WAIT_FOR_EVENT": return { eventName: vocabulary.events[0] ? vocabulary.events[0].name : "event.name" };
    case "CONDITION": return { condition: emptyCondition() };
    case "WEBHOOK": return { url: "https://example.com/hook", method: "POST" };
    case "UPDATE_CONTACT": return { subscribed: true };
    default: return {};
  }
}

function GraphTools({ workflow, selected, vocabulary, onChanged, onSelect }) {
  const id = encodeURIComponent(workflow.id);
  const from = workflow.steps.find((s) => s.id === selected);
  const fromBranches = from ? BRANCHES[from.type] : null;
  const add = useAction(async (data) => {
    const type = String(data.get("type"));
    // After a selected step, the new one is joined on the branch chosen; else it follows the
    // last step that leads nowhere yet (the server's autoConnect).
    const after = from && from.type !== "EXIT";
    const step = await post(`/workflows/${id}/steps`, { type, config: starter(type, vocabulary), autoConnect: !after });
    if (after) {
      const branch = data.get("branch") || undefined;
      await post(`/workflows/${id}/transitions`, { fromStepId: from.id, toStepId: step.id, branch }).catch((e) => toast(e.message, "error"));
    }
    onChanged();
    onSelect(step.id);
    return step;
  }, (s) => `${label(s.type)} step added`);
  const connect = useAction(async (data) => {
    const t = await post(`/workflows/${id}/transitions`, {
      fromStepId: data.get("from"), toStepId: data.get("to"), branch: data.get("branch") || undefined });
    onChanged();
    return t;
  }, "Steps connected");
  const disconnect = useAction(async (t) => {
    await del(`/workflows/${id}/transitions/${encodeURIComponent(t.id)}`);
    onChanged();
  }, "Transition deleted");
  const name = (sid) => { const s = workflow.steps.find((x) => x.id === sid); return s ? s.name || label(s.type) : sid; };
  const [connectFrom, setConnectFrom] = useState(workflow.steps[0] ? workflow.steps[0].id : "");
  const connectBranches = BRANCHES[(workflow.steps.find((s) => s.id === connectFrom) || {}).type];
  return html`
    <section class="card stack" aria-labelledby="graph-tools">
      <h2 id="graph-tools">Steps and transitions</h2>
      <${Form} action=${add} submit="Add step" id="add-step">
        <div class="grid2">
          <${Field} label="Step type"><select name="type">${STEP_TYPES.map(([t, l]) => html`<option value=${t}>${l}</option>`)}</select><//>
          ${fromBranches && html`<${Field} label=${`Branch of ${name(from.id)}`}><select name="branch">${fromBranches.map((b) => html`<option value=${b}>${b}</option>`)}</select><//>`}
        </div>
        <p class="meta">${from && from.type !== "EXIT" ? `It will follow ${name(from.id)}.` : "It will follow the last step that leads nowhere yet; select a step in the graph to add it after that one instead."}</p>
      <//>
      <${Form} action=${connect} submit="Connect" id="add-transition">
        <div class="grid3">
          <${Field} label="From"><select name="from" value=${connectFrom} onChange=${(e) => setConnectFrom(e.currentTarget.value)}>
            ${workflow.steps.filter((s) => s.type !== "EXIT").map((s) => html`<option value=${s.id}>${name(s.id)}</option>`)}</select><//>
          <${Field} label="To"><select name="to">${workflow.steps.filter((s) => s.type !== "TRIGGER").map((s) => html`<option value=${s.id}>${name(s.id)}</option>`)}</select><//>
          ${connectBranches ? html`<${Field} label="Branch"><select name="branch">${connectBranches.map((b) => html`<option value=${b}>${b}</option>`)}</select><//>` : html`<div></div>`}
        </div>
      <//>
      <${ErrorBox} error=${disconnect.error} />
      ${workflow.transitions.length > 0 && html`<${Table} label="Transitions" id="transitions-table">
        <thead><tr><th scope="col">From</th><th scope="col">Branch</th><th scope="col">To</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>${workflow.transitions.map((t) => html`<tr key=${t.id}><td>${name(t.fromStepId)}</td><td>${t.branch || "—"}</td><td>${name(t.toStepId)}</td>
          <td><button type="button" class="danger small" aria-label=${`Delete the transition from ${name(t.fromStepId)} to ${name(t.toStepId)}`} onClick=${() => disconnect.run(t)}>Delete</button></td></tr>`)}</tbody>
      <//>`}
    </section>`;
}

function Executions({ workflow }) {
  const id = encodeURIComponent(workflow.id);
  const [status, setStatus] = useState("");
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState(null);
  const list = useLoad(() => get(`/workflows/${id}/executions`, { page, pageSize: 20, status: status || undefined }), [page, status]);
  const name = (sid) => { const s = workflow.steps.find((x) => x.id === sid); return s ? s.name || label(s.type) : "a deleted step"; };
  const cancel = useAction(async (e) => {
    await del(`/workflows/${id}/executions/${encodeURIComponent(e.id)}`);
    list.reload();
  }, "Execution cancelled");
  const cancelAll = useAction(async () => {
    const r = await post(`/workflows/${id}/executions/cancel-all`);
    list.reload();
    return r;
  }, (r) => `${r.cancelled} execution(s) cancelled`);
  const start = useAction(async (data, form) => {
    const context = parseJson(String(data.get("context") || ""), "Context");
    const e = await post(`/workflows/${id}/executions`, { email: data.get("email"), context });
    form.reset();
    list.reload();
    return e;
  }, "Execution started");
  return html`
    <section class="card stack" aria-labelledby="executions-heading">
      <h2 id="executions-heading">Executions</h2>
      <div class="buttons">
        <${Field} label="Status"><select value=${status} onChange=${(e) => { setStatus(e.currentTarget.value); setPage(1); }}>
          <option value="">All</option>${["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"].map((s) => html`<option value=${s}>${s.toLowerCase()}</option>`)}
        </select><//>
        <button type="button" class="secondary" onClick=${() => list.reload()}>Refresh</button>
        <${ActionButton} class="danger" action=${cancelAll} confirm="Cancel every running and waiting execution of this workflow?">Cancel all<//>
      </div>
      <${ErrorBox} error=${cancel.error || cancelAll.error} />
      <${Loaded} result=${list}>${(p) => p.data.length === 0 ? html`<p class="meta">No executions${status ? ` ${status.toLowerCase()}` : ""}.</p>` : html`
        <${Table} label="Executions" id="executions-table">
          <thead><tr><th scope="col">Contact</th><th scope="col">Status</th><th scope="col">At</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${p.data.map((e) => html`
            <tr key=${e.id} data-execution=${e.contactEmail}>
              <td>${e.contactEmail || e.contactId}</td>
              <td><${Badge} kind=${STATUS_KIND[e.status]}>${e.status.toLowerCase()}<//>${e.exitReason && html`<div class="meta">${e.exitReason}</div>`}</td>
              <td>${e.currentStepId ? name(e.currentStepId) : "—"}${e.waitingFor && html`<div class="meta">waits for ${e.waitingFor}</div>`}${e.dueAt && html`<div class="meta">until ${date(e.dueAt)}</div>`}</td>
              <td>${date(e.startedAt)}</td><td>${date(e.completedAt)}</td>
              <td class="buttons">
                <button type="button" class="secondary small" aria-expanded=${open === e.id} onClick=${() => setOpen(open === e.id ? null : e.id)}>Steps</button>
                ${(e.status === "RUNNING" || e.status === "WAITING") && html`<button type="button" class="danger small" aria-label=${`Cancel the execution of ${e.contactEmail}`} onClick=${() => cancel.run(e)}>Cancel</button>`}
              </td>
            </tr>
            ${open === e.id && html`<tr class="history"><td colspan="6">
              <ol class="steps-history">${e.steps.map((s, i) => html`<li key=${i}><strong>${name(s.stepId)}</strong> <${Badge} kind=${s.status === "FAILED" ? "danger" : ""}>${s.status.toLowerCase()}<//>
                <span class="meta"> ${date(s.startedAt)}</span>${s.output && html` <${Json} value=${s.output} />`}${s.error && html`<div class="error-text">${s.error}</div>`}</li>`)}</ol>
            </td></tr>`}`)}</tbody>
        <//>
        <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Executions" />`}<//>
      <${Form} action=${start} submit="Start" id="start-execution">
        <h3>Start one by hand</h3>
        <div class="grid2">
          <${Field} label="Contact email"><input type="email" name="email" required /><//>
          <${Field} label="Context (JSON object)" hint="Read by conditions as workflow.<key>."><input name="context" placeholder='{"plan": "pro"}' /><//>
        </div>
      <//>
    </section>`;
}

export function WorkflowPage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const id = encodeURIComponent(params.id);
  const workflow = useLoad(() => get(`/workflows/${id}`), [params.id]);
  const vocabulary = useLoad(async () => {
    const [fields, events, segments, templates] = await Promise.all([
      get("/workflows/fields"), get("/events/names"), get("/segments"), get("/templates", { pageSize: 100, sort: "name", dir: "asc" }),
    ]);
    const eventFields = fields.events.flatMap((e) => e.fields.map((f) => ({ field: f.field, type: f.type, isCustom: true })));
    return { catalogue: [...fields.contact, ...eventFields], events, segments, templates: templates.data };
  }, []);
  const [selected, setSelected] = useState(null);
  const save = useAction(async (data) => {
    const w = workflow.data;
    const event = String(data.get("event") || "").trim();
    const body = {
      name: data.get("name"), description: data.get("description") || "", triggerType: data.get("triggerType"),
      enabled: data.get("enabled") === "on", allowReentry: data.get("allowReentry") === "on",
    };
    if (body.triggerType === "EVENT" || event) body.triggerConfig = event ? { eventName: event } : {};
    const saved = await patch(`/workflows/${encodeURIComponent(w.id)}`, body);
    workflow.setData(saved);
    return saved;
  }, "Workflow saved");
  const remove = useAction(async () => {
    await del(`/workflows/${id}`);
    toast("Workflow deleted");
    navigate(`${base}/workflows`);
  });
  const w = workflow.data;
  return html`
    <${Page} title=${w ? w.name : "Workflow"} back=${{ href: `${base}/workflows`, label: "Workflows" }}
      actions=${w && html`<${ActionButton} class="danger" action=${remove} confirm=${`Delete the workflow ${w.name}?`}>Delete<//>`}>
      <${ErrorBox} error=${remove.error} />
      <${Loaded} result=${workflow}>${(wf) => html`<${Loaded} result=${vocabulary}>${(v) => {
        const step = wf.steps.find((s) => s.id === selected);
        return html`
          <datalist id="workflow-events">${v.events.map((e) => html`<option value=${e.name} />`)}</datalist>
          <${Form} action=${save} submit="Save workflow" class="card stack" id="workflow-form" key=${wf.updatedAt}>
            <div class="grid2">
              <${Field} label="Name"><input name="name" required maxlength="200" value=${wf.name} /><//>
              <${Field} label="Description"><input name="description" maxlength="500" value=${wf.description || ""} /><//>
              <${Field} label="Started by"><select name="triggerType" value=${wf.triggerType}>
                <option value="EVENT">an event</option><option value="MANUAL">hand (API or below)</option></select><//>
              <${Field} label="Trigger event"><input name="event" list="workflow-events" value=${wf.triggerConfig.eventName || ""} /><//>
            </div>
            <label class="check"><input type="checkbox" name="enabled" checked=${wf.enabled} /> Enabled</label>
            <label class="check"><input type="checkbox" name="allowReentry" checked=${wf.allowReentry} /> A contact may go through it more than once</label>
          <//>
          <section class="card" aria-labelledby="graph-heading">
            <h2 id="graph-heading">Graph</h2>
            <p class="meta">Select a step to edit it or to add the next one after it.</p>
            <${Graph} workflow=${wf} templates=${v.templates} selected=${selected} onSelect=${setSelected} />
          </section>
          ${step && html`<${StepEditor} key=${`${step.id}-${step.updatedAt}`} workflow=${wf} step=${step} vocabulary=${v}
            onChanged=${workflow.reload} onDeleted=${() => { setSelected(null); workflow.reload(); }} />`}
          <${GraphTools} workflow=${wf} selected=${selected} vocabulary=${v} onChanged=${workflow.reload} onSelect=${setSelected} />
          <${Executions} workflow=${wf} />`;
      }}<//>`}<//>
    <//>`;
}
