// The workflow canvas: the graph is where a workflow is built. Steps are drawn by their
// distance from the trigger, each with how many executions are there now and went through it;
// transitions are arrows with their branch; a "+" on an arrow puts a step between two, and a
// "+" under a step's free way adds one after it. Choosing what to add happens beside the graph.

import { html } from "../../vendor/preact-htm.js";
import { del, post } from "../api.js";
import { ErrorBox, useAction } from "../ui.js";
import { BRANCHES, STEP_TYPES, label, starter, stepName, summary } from "./workflow_steps.js";

const NODE_W = 200;
const NODE_H = 74;
const COLUMN = 250;
const ROW = 140;

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
    const row = depth.get(s.id);
    const column = rows.get(row) || 0;
    rows.set(row, column + 1);
    place.set(s.id, { x: 20 + column * COLUMN, y: 20 + row * ROW });
  }
  const width = 40 + Math.max(1, ...rows.values()) * COLUMN;
  const height = 60 + (Math.max(0, ...depth.values()) + 1) * ROW;
  return { place, width, height };
}

/** Where a step's way out on `branch` leaves it: a branching step's ways side by side. */
function exitX(step, branch) {
  const ways = BRANCHES[step.type];
  if (!ways) return NODE_W / 2;
  return (NODE_W * (ways.indexOf(branch) + 1)) / (ways.length + 1);
}

/** The ways out of a step that lead nowhere yet: `[null]` for one way, free branches otherwise. */
export function freeWays(workflow, step) {
  if (step.type === "EXIT") return [];
  const used = workflow.transitions.filter((t) => t.fromStepId === step.id).map((t) => t.branch || null);
  return (BRANCHES[step.type] || [null]).filter((b) => !used.includes(b));
}

function PlusButton({ x, y, name, onPress, data }) {
  return html`
    <g class="plus" role="button" tabindex="0" aria-label=${name} ...${data}
      onClick=${onPress} onKeyDown=${(e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onPress(); } }}>
      <circle cx=${x} cy=${y} r="11" />
      <text x=${x} y=${y + 5} aria-hidden="true">+</text>
    </g>`;
}

function countsLine(count) {
  if (!count) return "";
  const parts = [`${count.active} here`, `${count.completed} done`];
  if (count.failed) parts.push(`${count.failed} failed`);
  return parts.join(" · ");
}

export function Graph({ workflow, templates, counts, selected, onSelect, onAdd }) {
  const { place, width, height } = layout(workflow);
  const byId = new Map(workflow.steps.map((s) => [s.id, s]));
  const countOf = new Map((counts || []).map((c) => [c.stepId, c]));
  return html`
    <div class="graph-wrap">
      <svg class="graph" id="workflow-graph" width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="group" aria-label="Workflow graph">
        <defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" class="arrowhead" /></marker></defs>
        ${workflow.transitions.map((t) => {
          const a = place.get(t.fromStepId);
          const b = place.get(t.toStepId);
          const from = byId.get(t.fromStepId);
          if (!a || !b || !from) return null;
          const back = b.y <= a.y;
          // Down from the bottom of one step to the top of the next; a way back goes round the side.
          const [x1, y1] = back ? [a.x + NODE_W, a.y + NODE_H / 2] : [a.x + exitX(from, t.branch), a.y + NODE_H];
          const [x2, y2] = back ? [b.x + NODE_W, b.y + NODE_H / 2] : [b.x + NODE_W / 2, b.y];
          const d = back
            ? `M ${x1} ${y1} C ${x1 + 50} ${y1}, ${x2 + 50} ${y2}, ${x2} ${y2}`
            : `M ${x1} ${y1} C ${x1} ${(y1 + y2) / 2}, ${x2} ${(y1 + y2) / 2}, ${x2} ${y2}`;
          const [mx, my] = back ? [Math.max(x1, x2) + 38, (y1 + y2) / 2] : [(x1 + x2) / 2, (y1 + y2) / 2];
          const between = `${stepName(workflow, t.fromStepId)} and ${stepName(workflow, t.toStepId)}`;
          return html`<g key=${t.id} class="edge" data-branch=${t.branch || ""}>
            <path d=${d} marker-end="url(#arrow)" />
            ${t.branch && html`<text x=${back ? mx : x1 + 6} y=${back ? my - 16 : y1 + 16} class="edge-label" text-anchor="start">${t.branch}</text>`}
            <${PlusButton} x=${mx} y=${my} name=${`Add a step between ${between}${t.branch ? ` (${t.branch})` : ""}`} data=${{ "data-transition": t.id }}
              onPress=${() => onAdd({ transition: t, between })} />
          </g>`;
        })}
        ${workflow.steps.map((s) => {
          const p = place.get(s.id);
          const title = s.name || label(s.type);
          const text = summary(s, templates);
          const shown = text.length > 28 ? `${text.slice(0, 27)}…` : text;
          const count = countOf.get(s.id);
          const line = countsLine(count);
          return html`<g key=${s.id}>
            <g class=${`node ${s.type.toLowerCase()}${selected === s.id ? " selected" : ""}`} tabindex="0" role="button"
              aria-pressed=${selected === s.id} aria-label=${`${title} ${shown} ${line}`.replace(/\s+/g, " ").trim()} data-step=${s.id} data-type=${s.type}
              onClick=${() => onSelect(s.id)} onKeyDown=${(e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); onSelect(s.id); } }}>
              <rect x=${p.x} y=${p.y} width=${NODE_W} height=${NODE_H} rx="8" />
              <text x=${p.x + 10} y=${p.y + 21} class="node-type">${`${title} `}</text>
              <text x=${p.x + 10} y=${p.y + 41} class="node-text">${`${shown} `}</text>
              <text x=${p.x + 10} y=${p.y + 61} class="node-count" data-counts=${count ? `${count.active}/${count.completed}/${count.failed}` : ""}>${line}</text>
            </g>
            ${freeWays(workflow, s).map((branch) => {
              const x = p.x + exitX(s, branch);
              const y = p.y + NODE_H + 34;
              const after = `${title}${branch ? ` on ${branch}` : ""}`;
              return html`<g key=${`${s.id}-${branch}`} class="open-end">
                <line x1=${x} y1=${p.y + NODE_H} x2=${x} y2=${y - 11} />
                ${branch && html`<text x=${x + 6} y=${p.y + NODE_H + 14} class="edge-label" text-anchor="start">${branch}</text>`}
                <${PlusButton} x=${x} y=${y} name=${`Add a step after ${after}`} data=${{ "data-after": s.id, "data-branch": branch || "" }}
                  onPress=${() => onAdd({ from: s, branch, after })} />
              </g>`;
            })}
          </g>`;
        })}
      </svg>
    </div>`;
}

const DOES = {
  SEND_EMAIL: "Send a template to the contact (or another address).",
  DELAY: "Wait minutes, hours or days before going on.",
  WAIT_FOR_EVENT: "Wait until the contact does something, or a timeout.",
  CONDITION: "Go one way or the other by the contact's fields or events.",
  WEBHOOK: "Call a URL with the contact and the event.",
  UPDATE_CONTACT: "Set fields, or subscribe or unsubscribe.",
  EXIT: "End here.",
};

/**
 * What to add where a "+" was pressed, beside the graph: between two steps (`adding.transition`)
 * or after one on a free way (`adding.from`, `adding.branch`). Resolves with the new step.
 */
export function StepChooser({ workflow, adding, vocabulary, onAdded, onCancel }) {
  const id = encodeURIComponent(workflow.id);
  const add = useAction(async (type) => {
    const body = { type, config: starter(type, vocabulary) };
    if (adding.transition) {
      return post(`/workflows/${id}/transitions/${encodeURIComponent(adding.transition.id)}/insert-step`, body);
    }
    const step = await post(`/workflows/${id}/steps`, { ...body, autoConnect: false });
    try {
      await post(`/workflows/${id}/transitions`, { fromStepId: adding.from.id, toStepId: step.id, branch: adding.branch || undefined });
    } catch (e) {
      // The step without its way in would float loose: take it back.
      await del(`/workflows/${id}/steps/${encodeURIComponent(step.id)}`).catch(() => {});
      throw e;
    }
    return step;
  }, (s) => `${label(s.type)} step added`);
  const types = STEP_TYPES.filter(([t]) => !(adding.transition && t === "EXIT"));
  return html`
    <section class="card stack" aria-labelledby="chooser-heading" id="step-chooser">
      <div class="card-head">
        <h2 id="chooser-heading">Add a step</h2>
        <button type="button" class="ghost small" onClick=${onCancel}>Cancel</button>
      </div>
      <p class="meta">${adding.transition ? `Between ${adding.between}.` : `After ${adding.after}.`}</p>
      <div class="choices">
        ${types.map(([type, name]) => html`
          <button type="button" key=${type} class="choice" disabled=${add.busy} data-type=${type}
            onClick=${async () => { const step = await add.run(type); if (step) onAdded(step); }}>
            <strong>${name}</strong><span class="meta">${DOES[type]}</span>
          </button>`)}
      </div>
      <${ErrorBox} error=${add.error} />
    </section>`;
}
