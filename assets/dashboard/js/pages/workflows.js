// Workflows: the list with enabled switches, a search and a filter on whether each is on; a
// workflow's page: its state switch and a copy at the top, its settings, the canvas (the graph
// with counts, "+" to add steps, the selected step's editor beside it), connections between any
// two steps, and its executions with their step history.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import { navigate, setQuery, useLocation } from "../router.js";
import { BRANCHES, STATUS_KIND, StepEditor, label, parseJson, stepName } from "./workflow_steps.js";
import { Graph, StepChooser } from "./workflow_canvas.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Form, Json, Loaded, Page, PagePager, Table, date, toast,
  useAction, useLoad, useSearch } from "../ui.js";

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

function Connections({ workflow, onChanged }) {
  const id = encodeURIComponent(workflow.id);
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
  const name = (sid) => stepName(workflow, sid);
  const [connectFrom, setConnectFrom] = useState(workflow.steps[0] ? workflow.steps[0].id : "");
  const connectBranches = BRANCHES[(workflow.steps.find((s) => s.id === connectFrom) || {}).type];
  return html`
    <details class="card" id="connections">
      <summary>Connect two steps (loops, merges) and every transition</summary>
      <div class="stack">
        <${Form} action=${connect} submit="Connect" id="add-transition">
          <div class="grid3">
            <${Field} label="From"><select name="from" value=${connectFrom} onChange=${(e) => setConnectFrom(e.currentTarget.value)}>
              ${workflow.steps.filter((s) => s.type !== "EXIT").map((s) => html`<option value=${s.id}>${name(s.id)}</option>`)}</select><//>
            <${Field} label="To"><select name="to">${workflow.steps.filter((s) => s.type !== "TRIGGER").map((s) => html`<option value=${s.id}>${name(s.id)}</option>`)}</select><//>
            ${connectBranches ? html`<${Field} label="Branch"><select name="branch">${connectBranches.map((b) => html`<option value=${b}>${b}</option>`)}</select><//>` : html`<div></div>`}
          </div>
        <//>
        <${ErrorBox} error=${disconnect.error} />
        ${workflow.transitions.length > 0 && html`<${Table} label="Transitions" id="transitions-table" class="table cards">
          <thead><tr><th scope="col">From</th><th scope="col">Branch</th><th scope="col">To</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${workflow.transitions.map((t) => html`<tr key=${t.id}><td data-label="From">${name(t.fromStepId)}</td><td data-label="Branch">${t.branch || "—"}</td><td data-label="To">${name(t.toStepId)}</td>
            <td><button type="button" class="danger small" aria-label=${`Delete the transition from ${name(t.fromStepId)} to ${name(t.toStepId)}`} onClick=${() => disconnect.run(t)}>Delete</button></td></tr>`)}</tbody>
        <//>`}
      </div>
    </details>`;
}

function Executions({ workflow, onRefresh }) {
  const id = encodeURIComponent(workflow.id);
  const [status, setStatus] = useState("");
  const [page, setPage] = useState(1);
  const [open, setOpen] = useState(null);
  const list = useLoad(() => get(`/workflows/${id}/executions`, { page, pageSize: 20, status: status || undefined }), [page, status]);
  const name = (sid) => stepName(workflow, sid);
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
    onRefresh();
    return e;
  }, "Execution started");
  return html`
    <section class="card stack" aria-labelledby="executions-heading">
      <h2 id="executions-heading">Executions</h2>
      <div class="buttons">
        <${Field} label="Status"><select value=${status} onChange=${(e) => { setStatus(e.currentTarget.value); setPage(1); }}>
          <option value="">All</option>${["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"].map((s) => html`<option value=${s}>${s.toLowerCase()}</option>`)}
        </select><//>
        <button type="button" class="secondary" onClick=${() => { list.reload(); onRefresh(); }}>Refresh</button>
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

/** The workflow's state at the top: a switch that takes effect at once, what starts it, and a copy. */
function StateBar({ workflow, onSaved, base }) {
  const id = encodeURIComponent(workflow.id);
  const toggle = useAction(async () => {
    const saved = await patch(`/workflows/${id}`, { enabled: !workflow.enabled });
    onSaved(saved);
    return saved;
  }, (w) => `${w.name} ${w.enabled ? "enabled" : "disabled"}`);
  const duplicate = useAction(async () => {
    const copy = await post(`/workflows/${id}/duplicate`);
    navigate(`${base}/workflows/${encodeURIComponent(copy.id)}`);
    return copy;
  }, (c) => `Copied as ${c.name}`);
  const starts = workflow.triggerType === "MANUAL"
    ? "Started by hand (the API or below)."
    : workflow.triggerConfig.eventName ? html`Starts when <code>${workflow.triggerConfig.eventName}</code> happens.` : "Names no event yet: set one in the settings.";
  return html`
    <div class="card state-bar" id="workflow-state">
      <button type="button" role="switch" class=${`switch${workflow.enabled ? " on" : ""}`} aria-checked=${workflow.enabled}
        disabled=${toggle.busy} onClick=${() => toggle.run()} id="workflow-enabled">
        <span class="switch-track" aria-hidden="true"><span class="switch-thumb"></span></span>
        <span>${workflow.enabled ? "Enabled" : "Disabled"}</span>
      </button>
      <span class="meta">${starts}${workflow.enabled ? "" : " Nothing runs while it is disabled."}</span>
      <span class="spacer"></span>
      <${ActionButton} action=${duplicate}>Duplicate<//>
      <${ErrorBox} error=${toggle.error || duplicate.error} />
    </div>`;
}

function Settings({ workflow, onSaved }) {
  const save = useAction(async (data) => {
    const event = String(data.get("event") || "").trim();
    const body = {
      name: data.get("name"), description: data.get("description") || "", triggerType: data.get("triggerType"),
      allowReentry: data.get("allowReentry") === "on",
    };
    if (body.triggerType === "EVENT" || event) body.triggerConfig = event ? { eventName: event } : {};
    const saved = await patch(`/workflows/${encodeURIComponent(workflow.id)}`, body);
    onSaved(saved);
    return saved;
  }, "Workflow saved");
  return html`
    <details class="card" id="workflow-settings">
      <summary>Settings: name, what starts it, re-entry</summary>
      <${Form} action=${save} submit="Save settings" class="stack" id="workflow-form" key=${workflow.updatedAt}>
        <div class="grid2">
          <${Field} label="Name"><input name="name" required maxlength="200" value=${workflow.name} /><//>
          <${Field} label="Description"><input name="description" maxlength="500" value=${workflow.description || ""} /><//>
          <${Field} label="Started by"><select name="triggerType" value=${workflow.triggerType}>
            <option value="EVENT">an event</option><option value="MANUAL">hand (API or below)</option></select><//>
          <${Field} label="Trigger event"><input name="event" list="workflow-events" value=${workflow.triggerConfig.eventName || ""} /><//>
        </div>
        <label class="check"><input type="checkbox" name="allowReentry" checked=${workflow.allowReentry} /> A contact may go through it more than once</label>
      <//>
    </details>`;
}

export function WorkflowPage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const id = encodeURIComponent(params.id);
  const workflow = useLoad(() => get(`/workflows/${id}`), [params.id]);
  const [tick, setTick] = useState(0);
  const counts = useLoad(() => get(`/workflows/${id}/step-counts`), [params.id, workflow.data && workflow.data.updatedAt, tick]);
  const vocabulary = useLoad(async () => {
    const [fields, events, segments, templates] = await Promise.all([
      get("/workflows/fields"), get("/events/names"), get("/segments"), get("/templates", { pageSize: 100, sort: "name", dir: "asc" }),
    ]);
    const eventFields = fields.events.flatMap((e) => e.fields.map((f) => ({ field: f.field, type: f.type, isCustom: true })));
    return { catalogue: [...fields.contact, ...eventFields], events, segments, templates: templates.data };
  }, []);
  const [selected, setSelected] = useState(null);
  const [adding, setAdding] = useState(null);
  const select = (stepId) => { setAdding(null); setSelected(stepId); };
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
          <${StateBar} workflow=${wf} onSaved=${workflow.setData} base=${base} />
          <${Settings} workflow=${wf} onSaved=${workflow.setData} />
          <div class="canvas-layout">
            <section class="card canvas" aria-labelledby="graph-heading">
              <div class="card-head">
                <h2 id="graph-heading">Graph</h2>
                <button type="button" class="ghost small" onClick=${() => setTick(tick + 1)}>Refresh counts</button>
              </div>
              <p class="meta">Press + on an arrow to put a step between two, or under a step to add one after it; select a step to edit it.
                Each step shows how many executions are there now and how many went through it.</p>
              <${Graph} workflow=${wf} templates=${v.templates} counts=${counts.data && counts.data.steps} selected=${selected}
                onSelect=${select} onAdd=${(where) => { setSelected(null); setAdding(where); }} />
            </section>
            <aside class="canvas-side" aria-label="Step">
              ${adding
                ? html`<${StepChooser} key=${adding.transition ? adding.transition.id : `${adding.from.id}-${adding.branch}`} workflow=${wf} adding=${adding} vocabulary=${v}
                    onCancel=${() => setAdding(null)} onAdded=${(s) => { setAdding(null); setSelected(s.id); workflow.reload(); }} />`
                : step
                  ? html`<${StepEditor} key=${`${step.id}-${step.updatedAt}`} workflow=${wf} step=${step} vocabulary=${v}
                      onChanged=${workflow.reload} onClose=${() => setSelected(null)} onDeleted=${() => { setSelected(null); workflow.reload(); }} />`
                  : html`<div class="card meta" id="canvas-hint">Select a step to edit it, or press + to add one.</div>`}
            </aside>
          </div>
          <${Connections} workflow=${wf} onChanged=${workflow.reload} />
          <${Executions} workflow=${wf} onRefresh=${() => setTick(tick + 1)} />`;
      }}<//>`}<//>
    <//>`;
}
