// A contact's custom fields: typed rows to edit (on the contact's page and when creating one),
// and the read view. Values keep their JSON type; a date is an ISO date or date-time.

import { html } from "../../vendor/preact-htm.js";
import { Field } from "../ui.js";

const TYPES = [
  ["string", "Text"],
  ["number", "Number"],
  ["boolean", "True/false"],
  ["date", "Date"],
  ["json", "List or object (JSON)"],
];

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z)?$/;

export function typeOf(value) {
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  if (value !== null && typeof value === "object") return "json";
  if (typeof value === "string" && ISO.test(value)) return "date";
  return "string";
}

function textOf(value, type) {
  if (type === "json") return JSON.stringify(value, null, 0);
  return value === null || value === undefined ? "" : String(value);
}

/** The typed value of an edited row, or throws with a message naming the field. */
export function valueOf(row) {
  const text = row.text.trim();
  switch (row.type) {
    case "number": {
      const n = Number(text);
      if (text === "" || !Number.isFinite(n)) throw new Error(`${row.key} must be a number`);
      return n;
    }
    case "boolean":
      return row.text === "true";
    case "date":
      if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?Z?)?$/.test(text)) throw new Error(`${row.key} must be a date like 2025-01-31 or 2025-01-31T09:30:00Z`);
      return text.length === 16 ? `${text}:00Z` : text.length === 19 ? `${text}Z` : text;
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`${row.key} must be valid JSON`);
      }
    default:
      return row.text;
  }
}

export function rowsOf(data) {
  return Object.entries(data || {}).map(([key, value], i) => {
    const type = typeOf(value);
    return { id: i, key, type, text: textOf(value, type), original: key };
  });
}

/** The rows as a `data` object (keys trimmed, empty keys skipped); throws on a repeated key or a bad value. */
export function dataOf(rows) {
  const data = {};
  for (const row of rows) {
    const key = row.key.trim();
    if (!key) continue;
    if (key in data) throw new Error(`The key ${key} is listed twice`);
    data[key] = valueOf({ ...row, key });
  }
  return data;
}

/** Editable rows of key, type and value; `rows` and `setRows` are the caller's state. */
export function FieldRows({ rows, setRows }) {
  const set = (id, changes) => setRows((list) => list.map((r) => (r.id === id ? { ...r, ...changes } : r)));
  const add = () => setRows((list) => [...list, { id: Math.max(-1, ...list.map((r) => r.id)) + 1, key: "", type: "string", text: "" }]);
  return html`
    ${rows.map((row) => html`
      <div class="inline data-row" key=${row.id}>
        <${Field} label="Key"><input value=${row.key} required onInput=${(e) => set(row.id, { key: e.currentTarget.value })} /><//>
        <${Field} label="Type">
          <select value=${row.type} onChange=${(e) => set(row.id, { type: e.currentTarget.value, text: e.currentTarget.value === "boolean" ? "true" : row.text })}>
            ${TYPES.map(([value, label]) => html`<option value=${value}>${label}</option>`)}
          </select>
        <//>
        <${Field} label="Value">
          ${row.type === "boolean"
            ? html`<select value=${row.text} onChange=${(e) => set(row.id, { text: e.currentTarget.value })}><option value="true">true</option><option value="false">false</option></select>`
            : html`<input value=${row.text} inputmode=${row.type === "number" ? "decimal" : undefined} onInput=${(e) => set(row.id, { text: e.currentTarget.value })} />`}
        <//>
        <button type="button" class="danger" aria-label=${`Remove ${row.key || "this field"}`} onClick=${() => setRows((list) => list.filter((r) => r.id !== row.id))}>Remove</button>
      </div>`)}
    <div><button type="button" class="secondary" onClick=${add}>Add field</button></div>`;
}

/** A value as read: text as it is, a list joined, an object as short JSON, a date localised. */
export function shown(value) {
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value) && value.every((v) => typeof v !== "object" || v === null)) return value.join(", ");
  if (typeof value === "object") return JSON.stringify(value);
  if (typeof value === "string" && ISO.test(value) && value.includes("T")) {
    const d = new Date(value);
    return Number.isNaN(d.getTime()) ? value : d.toLocaleString();
  }
  return String(value);
}

/** Keys and values as a definition list (fields, event data). */
export function KeyValues({ data, class: cls = "props kv" }) {
  const entries = Object.entries(data || {});
  if (entries.length === 0) return null;
  return html`<dl class=${cls}>${entries.map(([key, value]) => html`<dt key=${`k${key}`}><code>${key}</code></dt><dd key=${`v${key}`}>${shown(value)}</dd>`)}</dl>`;
}
