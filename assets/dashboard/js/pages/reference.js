// The API reference: the server's own OpenAPI document (GET /openapi.json), read on the page.
// Every operation with its authentication, parameters, request body and answers; schemas are
// drawn from the document's components, so the page says exactly what the server serves.

import { Component, html, useEffect, useMemo, useState } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { Copy, Empty, Loaded, Page, Table, useLoad } from "../ui.js";

const METHODS = ["get", "post", "put", "patch", "delete", "options"];

/** How each security scheme is named on the page. */
const SCHEMES = {
  secretKey: "secret key",
  publicKey: "public key",
  session: "session cookie",
  projectId: "X-Project-Id",
  metricsToken: "metrics token",
};

/** The document, read once per visit of the dashboard (it changes only with the server). */
let described = null;

export function Reference({ project }) {
  const doc = useLoad(async () => {
    described = described || (await get("/openapi.json"));
    return described;
  }, []);
  return html`
    <${Page} title="API reference">
      <${Loaded} result=${doc}>${(d) => html`<${Document} doc=${d} project=${project} />`}<//>
    <//>`;
}

/** The operations of the document, in its tags' order: [{tag, description, operations}]. */
function grouped(doc) {
  const groups = new Map((doc.tags || []).map((t) => [t.name, { tag: t.name, description: t.description, operations: [] }]));
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = (op.tags && op.tags[0]) || "Other";
      if (!groups.has(tag)) groups.set(tag, { tag, description: "", operations: [] });
      groups.get(tag).operations.push({ path, method, op });
    }
  }
  return [...groups.values()].filter((g) => g.operations.length);
}

function matches({ path, method, op }, words) {
  const text = `${method} ${path} ${op.operationId || ""} ${op.summary || ""} ${(op.tags || []).join(" ")}`.toLowerCase();
  return words.every((w) => text.includes(w));
}

/** Operations written in the first paint, and in each later frame until all are. */
const CHUNK = 24;

function Document({ doc, project }) {
  const [filter, setFilter] = useState("");
  // Written a chunk a frame: the page is there and answers at once, and fills in the rest
  // without one long task holding the browser.
  const [budget, setBudget] = useState(CHUNK);
  const groups = useMemo(() => grouped(doc), [doc]);
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = groups
    .map((g) => ({ ...g, operations: g.operations.filter((o) => matches(o, words)) }))
    .filter((g) => g.operations.length);
  const count = shown.reduce((n, g) => n + g.operations.length, 0);
  useEffect(() => {
    if (budget >= count) return undefined;
    const timer = setTimeout(() => setBudget((b) => b + CHUNK), 16);
    return () => clearTimeout(timer);
  }, [budget, count]);
  let left = budget;
  const written = [];
  for (const g of shown) {
    if (left <= 0) break;
    written.push({ ...g, operations: g.operations.slice(0, left) });
    left -= g.operations.length;
  }
  return html`
    <${Intro} doc=${doc} />
    <div class="reference">
      <nav class="card reference-toc" aria-label="API sections">
        <label>Filter operations
          <input type="search" id="reference-filter" value=${filter} placeholder="send, contacts, POST…"
            onInput=${(e) => setFilter(e.currentTarget.value)} />
        </label>
        <p class="meta" role="status">${count} operation${count === 1 ? "" : "s"}</p>
        <ul>${shown.map((g) => html`<li key=${g.tag}><a href=${`#tag-${g.tag}`}>${g.tag}</a> <span class="meta">${g.operations.length}</span></li>`)}</ul>
      </nav>
      <div class="reference-body" data-complete=${budget >= count}>
        ${shown.length === 0 && html`<${Empty}>No operation matches “${filter}”.<//>`}
        ${written.map((g) => html`
          <section key=${g.tag} aria-labelledby=${`tag-${g.tag}`}>
            <h2 id=${`tag-${g.tag}`}>${g.tag}</h2>
            ${g.description && html`<p class="meta">${prose(g.description)}</p>`}
            ${g.operations.map((o) => html`<${Operation} key=${o.method + o.path} doc=${doc} project=${project} ...${o} />`)}
          </section>`)}
      </div>
    </div>`;
}

function Intro({ doc }) {
  const origin = location.origin;
  const url = `${origin}/openapi.json`;
  const schemes = Object.entries((doc.components && doc.components.securitySchemes) || {})
    .sort(([a], [b]) => order(a) - order(b));
  const generate = `npx @openapitools/openapi-generator-cli generate -i ${url} -g typescript-fetch -o tidings-client`;
  return html`
    <section class="card" id="reference-intro">
      <p>${prose(doc.info.description || "")}</p>
      <dl class="props">
        <dt>Base URL</dt><dd><code>${origin}</code></dd>
        <dt>Version</dt><dd>${doc.info.version} <span class="meta">(OpenAPI ${doc.openapi})</span></dd>
        <dt>Document</dt><dd><a href="/openapi.json" id="openapi-link" download="tidings-openapi.json">openapi.json</a>
          <span class="meta"> — the same description as this page, for client generators and tools</span></dd>
      </dl>
      <h2>Authentication</h2>
      <ul class="plain">${schemes.map(([name, s]) => html`
        <li key=${name}><strong>${SCHEMES[name] || name}</strong>: ${prose(s.description || "")}</li>`)}</ul>
      <h2>A client of your own</h2>
      <p class="meta">Any OpenAPI 3.1 generator reads the document; for example, a TypeScript client:</p>
      <div class="record-value"><code>${generate}</code><${Copy} text=${generate} /></div>
    </section>`;
}

/** Text with `code` spans, as the document's descriptions write them. */
function prose(text) {
  return text.split("`").map((part, i) => (i % 2 ? html`<code>${part}</code>` : part));
}

/** Where a scheme comes in a requirement's wording ("session cookie with X-Project-Id"). */
function order(scheme) {
  const at = Object.keys(SCHEMES).indexOf(scheme);
  return at < 0 ? Object.keys(SCHEMES).length : at;
}

/** Who may call an operation: its security requirements, each a set of schemes. */
function auth(security) {
  if (!security || security.every((req) => Object.keys(req).length === 0)) return "none";
  return security
    .map((req) => Object.keys(req).sort((a, b) => order(a) - order(b)).map((k) => SCHEMES[k] || k).join(" with "))
    .filter(Boolean)
    .join(", or ") + (security.some((req) => Object.keys(req).length === 0) ? ", or none" : "");
}

/**
 * A `<details>` whose content (`children`, a function) is written only once it is opened: the
 * page holds every operation, and every answer's schema written out would make it tens of
 * thousands of elements, slow to lay out and to leave.
 */
function LazyDetails({ summary, children, class: cls }) {
  const [opened, setOpened] = useState(false);
  return html`
    <details class=${cls} onToggle=${(e) => { if (e.currentTarget.open) setOpened(true); }}>
      <summary>${summary}</summary>
      ${opened && children()}
    </details>`;
}

/** An operation's card; written once, and again only if its operation or project changes. */
class Operation extends Component {
  shouldComponentUpdate(next) {
    return next.op !== this.props.op || next.project !== this.props.project || next.doc !== this.props.doc;
  }

  render(props) {
    return html`<${OperationCard} ...${props} />`;
  }
}

function OperationCard({ doc, path, method, op, project }) {
  const params = (op.parameters || []).map((p) => resolve(doc, p));
  const body = op.requestBody && resolve(doc, op.requestBody);
  return html`
    <article class="card operation" id=${`op-${op.operationId}`} data-operation=${op.operationId}>
      <h3><span class=${`method method-${method}`}>${method.toUpperCase()}</span> <code>${path}</code></h3>
      ${op.summary && html`<p>${prose(op.summary)}</p>`}
      ${op.description && html`<p>${prose(op.description)}</p>`}
      <p class="meta">Authentication: ${auth(op.security)} · <code>${op.operationId}</code></p>
      ${params.length > 0 && html`
        <h4>Parameters</h4>
        <${Table} label=${`Parameters of ${op.operationId}`}>
          <thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead>
          <tbody>${params.map((p) => html`
            <tr key=${p.in + p.name}><th scope="row"><code>${p.name}</code>${p.required && html` <span class="badge">required</span>`}</th>
              <td>${p.in}</td><td>${typeOf(doc, p.schema || {})}</td><td>${prose(p.description || "")}</td></tr>`)}</tbody>
        <//>`}
      ${body && html`
        <h4>Request body</h4>
        ${Object.entries(body.content || {}).map(([type, media]) => html`
          <div key=${type} class="media">
            <p class="meta"><code>${type}</code>${body.required ? " · required" : " · optional"}${body.description ? html` · ${prose(body.description)}` : ""}</p>
            <${Schema} doc=${doc} schema=${media.schema || {}} depth=${0} seen=${[]} />
            <${Example} doc=${doc} media=${media} />
          </div>`)}`}
      <${Samples} doc=${doc} path=${path} method=${method} op=${op} project=${project} body=${body} />
      <h4>Answers</h4>
      <ul class="plain answers">${Object.entries(op.responses || {}).map(([status, r]) => {
        const response = resolve(doc, r);
        const content = Object.entries(response.content || {});
        return html`
          <li key=${status}>
            <${LazyDetails} summary=${html`<strong>${status}</strong> <span class="answer">${prose(response.description || "")}</span>${content.length > 0 && html` <span class="meta">${content.map(([t]) => t).join(", ")}</span>`}`}>
              ${() => content.map(([type, media]) => html`<div key=${type} class="media"><${Schema} doc=${doc} schema=${media.schema || {}} depth=${0} seen=${[]} /></div>`)}
            <//>
          </li>`;
      })}</ul>
    </article>`;
}

function refName(ref) {
  return ref.split("/").pop();
}

/** Follows `$ref`s to what they name (schemas, parameters, request bodies, responses). */
function resolve(doc, node) {
  let seen = 0;
  while (node && node.$ref && seen++ < 20) {
    const [, , kind, name] = node.$ref.split("/");
    node = doc.components && doc.components[kind] && doc.components[kind][name];
  }
  return node || {};
}

/** A short name of a schema's type: `string (email)`, `array of Contact`, `Segment or null`. */
function typeOf(doc, schema) {
  if (!schema || typeof schema !== "object") return "any";
  if (schema.$ref) {
    // An enum by name says its values too (`MailKind: "TRANSACTIONAL", …`).
    const target = resolve(doc, schema);
    const values = target.enum ? `: ${target.enum.map((v) => JSON.stringify(v)).join(", ")}` : "";
    return refName(schema.$ref) + values;
  }
  for (const key of ["oneOf", "anyOf"]) {
    if (schema[key]) return schema[key].map((s) => typeOf(doc, s)).join(" or ");
  }
  if (schema.allOf) return schema.allOf.map((s) => typeOf(doc, s)).join(" and ");
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const names = types.map((t) => {
    if (t === "array") return `array of ${typeOf(doc, schema.items)}`;
    if (t === "object" && schema.additionalProperties && typeof schema.additionalProperties === "object") {
      return `map of ${typeOf(doc, schema.additionalProperties)}`;
    }
    return schema.format && t !== "null" ? `${t} (${schema.format})` : t;
  });
  let name = names.join(" or ") || "any";
  if (schema.enum) name += `: ${schema.enum.map((v) => JSON.stringify(v)).join(", ")}`;
  return name;
}

/** The fields of an object schema, all of an `allOf` together. */
function fieldsOf(doc, schema) {
  const s = resolve(doc, schema);
  if (s.allOf) {
    return s.allOf.reduce((acc, part) => {
      const f = fieldsOf(doc, part);
      return { properties: { ...acc.properties, ...f.properties }, required: [...acc.required, ...f.required] };
    }, { properties: {}, required: [] });
  }
  return { properties: s.properties || {}, required: s.required || [] };
}

/** The schema an array, nullable or single-variant wrapper stands for, when it is an object. */
function inner(doc, schema) {
  const s = resolve(doc, schema);
  if (s.items) return inner(doc, s.items);
  for (const key of ["oneOf", "anyOf"]) {
    const variants = (s[key] || []).filter((v) => resolve(doc, v).type !== "null");
    if (variants.length === 1) return inner(doc, variants[0]);
  }
  return schema;
}

/** A schema as a list of fields, nested objects within (to a depth, and never in a loop). */
function Schema({ doc, schema, depth, seen }) {
  const target = inner(doc, schema);
  const name = target && target.$ref ? refName(target.$ref) : null;
  const s = resolve(doc, target);
  if (name && seen.includes(name)) return html`<p class="meta">${name}, as above.</p>`;
  const mark = name ? [...seen, name] : seen;
  const variants = s.oneOf || s.anyOf;
  if (variants && variants.length > 1) {
    return html`
      <div class="schema">
        <p class="meta">One of:</p>
        <ul class="plain">${variants.map((v, i) => html`<li key=${i}><strong>${typeOf(doc, v)}</strong>
          ${depth < 4 && html`<${Schema} doc=${doc} schema=${v} depth=${depth + 1} seen=${mark} />`}</li>`)}</ul>
      </div>`;
  }
  const { properties, required } = fieldsOf(doc, target);
  const entries = Object.entries(properties);
  if (entries.length === 0) {
    return s.description && depth === 0 ? html`<p class="meta">${prose(s.description)}</p>` : null;
  }
  return html`
    <div class="schema">
      ${name && depth === 0 && html`<p class="meta"><strong>${name}</strong>${s.description ? html` — ${prose(s.description)}` : ""}</p>`}
      <ul class="fields">${entries.map(([field, fs]) => {
        const nested = inner(doc, fs);
        const nestedFields = Object.keys(fieldsOf(doc, nested).properties).length > 0 || resolve(doc, nested).oneOf;
        const described = fs.description || resolve(doc, fs).description;
        return html`
          <li key=${field}>
            <code>${field}</code> <span class="type">${typeOf(doc, fs)}</span>${required.includes(field) && html` <span class="badge">required</span>`}
            ${described && html`<div class="meta">${prose(described)}</div>`}
            ${nestedFields && depth < 4 && html`<${Schema} doc=${doc} schema=${nested} depth=${depth + 1} seen=${mark} />`}
          </li>`;
      })}</ul>
    </div>`;
}

/** The example a request body's schema carries, when it has one. */
function Example({ doc, media }) {
  const example = media.example !== undefined ? media.example : resolve(doc, media.schema || {}).example;
  if (example === undefined) return null;
  return html`<${LazyDetails} class="example" summary="Example">${() => html`<pre>${JSON.stringify(example, null, 2)}</pre>`}<//>`;
}

/**
 * The request in curl, JavaScript and Python, against this server, with the project's public key
 * where the operation takes one (the secret key is never shown again: a placeholder stands in).
 */
function Samples({ doc, path, method, op, project, body }) {
  // Written only when opened: the page holds every operation, and three samples each would
  // make it several times heavier.
  const [open, setOpen] = useState(false);
  const schemes = (op.security || []).flatMap((s) => Object.keys(s));
  if (schemes.length && !schemes.some((s) => s === "publicKey" || s === "secretKey")) return null;
  if (!open) {
    return html`<details class="samples" data-samples=${op.operationId} onToggle=${(e) => setOpen(e.currentTarget.open)}><summary>Request samples</summary></details>`;
  }
  const key = schemes.includes("publicKey") ? project.publicKey || "YOUR_PUBLIC_KEY" : "YOUR_SECRET_KEY";
  const url = `${location.origin}${path}`;
  const json = body && body.content && body.content["application/json"];
  const example = json && (json.example !== undefined ? json.example : resolve(doc, json.schema || {}).example);
  const data = example === undefined ? null : JSON.stringify(example, null, 2);
  const verb = method.toUpperCase();
  const auth = schemes.length > 0;
  const curl = [`curl -X ${verb} "${url}"`, auth && `  -H "Authorization: Bearer ${key}"`,
    data && `  -H "Content-Type: application/json"`, data && `  -d '${data.replace(/'/g, "'\\''")}'`].filter(Boolean).join(" \\\n");
  const headers = [auth && `Authorization: "Bearer ${key}"`, data && `"Content-Type": "application/json"`].filter(Boolean);
  const js = `const res = await fetch("${url}", {\n  method: "${verb}",${headers.length ? `\n  headers: { ${headers.join(", ")} },` : ""}${data ? `\n  body: JSON.stringify(${data.replace(/\n/g, "\n  ")}),` : ""}\n});\nconsole.log(res.status, await res.json());`;
  const py = `import requests\n\nres = requests.request(\n    "${verb}",\n    "${url}",${auth ? `\n    headers={"Authorization": "Bearer ${key}"},` : ""}${data ? `\n    json=${data.replace(/\btrue\b/g, "True").replace(/\bfalse\b/g, "False").replace(/\bnull\b/g, "None").replace(/\n/g, "\n    ")},` : ""}\n)\nprint(res.status_code, res.json())`;
  return html`
    <details class="samples" data-samples=${op.operationId} open onToggle=${(e) => setOpen(e.currentTarget.open)}>
      <summary>Request samples</summary>
      ${[["curl", curl], ["JavaScript", js], ["Python", py]].map(([name, text]) => html`
        <div class="sample" key=${name}><p class="meta">${name} <${Copy} text=${text} label=${`Copy the ${name} sample`} /></p><pre>${text}</pre></div>`)}
    </details>`;
}
