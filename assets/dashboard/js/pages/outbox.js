// The outbox: mail the capture transport kept instead of sending (no SMTP relay configured),
// each message with its HTML in a sandboxed frame, its headers and its source.

import { html, useState } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { setQuery, useLocation } from "../router.js";
import { CursorPager, Empty, Loaded, Page, Table, Tabs, date, useCursor, useLoad } from "../ui.js";

// The server's own mail (sign-up verification, resets, invitations): shown to the instance's
// owner while mail is captured, when it reaches no one else.
const SYSTEM = "system";

export function Outbox({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const { params } = useLocation();
  const [which, setWhich] = useState(params.get("mail") === SYSTEM ? SYSTEM : "project");
  const pager = useCursor();
  // Whether this user may read the server's own mail: a first page answers it.
  const system = useLoad(() => get("/outbox/system", { limit: 1 }).then(() => true, () => false), []);
  const path = which === SYSTEM ? "/outbox/system" : "/outbox";
  const list = useLoad(() => get(path, { limit: 25, cursor: pager.cursor }), [pager.cursor, which]);
  const choose = (next) => {
    setWhich(next);
    pager.reset();
    setQuery({ mail: next === SYSTEM ? SYSTEM : "" });
  };
  const table = html`<${Loaded} result=${list}>${(page) => page.data.length === 0
        ? html`<${Empty}>${which === SYSTEM ? "The server has sent itself no mail yet." : "The outbox is empty. Messages appear here when mail is sent without a relay; with a relay, mail goes out and is not kept."}<//>`
        : html`
          <${Table} label="Captured messages" id="outbox-table">
            <thead><tr><th scope="col">When</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">From</th><th scope="col" class="num">Size</th></tr></thead>
            <tbody>${page.data.map((m) => html`
              <tr key=${m.id}><td>${date(m.createdAt)}</td><td>${m.to}</td>
                <td><a href=${`${base}/outbox/${which === SYSTEM ? "system/" : ""}${m.id}`}>${m.subject || "(no subject)"}</a></td><td>${m.from}</td>
                <td class="num">${(m.size / 1024).toFixed(1)} KB</td></tr>`)}</tbody>
          <//>
          <${CursorPager} pager=${pager} list=${page} label="Outbox" />`}<//>`;
  return html`
    <${Page} title="Outbox">
      <p class="meta">With no SMTP relay configured, Tidings keeps every message here, signed and complete, instead of sending it.</p>
      ${system.data
        ? html`<${Tabs} label="Whose mail" tabs=${[["project", "This project"], [SYSTEM, "The server's own mail"]]} current=${which} onChange=${choose}>
            ${which === SYSTEM && html`<p class="meta">Sign-up confirmations, password resets and invitations the server sent: you see them as the
              instance's owner, because with mail captured they reach no one else.</p>`}
            ${table}<//>`
        : table}
    <//>`;
}

export function OutboxMessage({ project, params, system = false }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const [tab, setTab] = useState("html");
  const message = useLoad(() => get(`/outbox/${system ? "system/" : ""}${encodeURIComponent(params.id)}`), [params.id]);
  const m = message.data;
  const tabs = [["html", "HTML"], ["text", "Text"], ["headers", "Headers"], ["raw", "Source"]];
  return html`
    <${Page} title=${m ? m.subject || "(no subject)" : "Message"} back=${{ href: `${base}/outbox${system ? "?mail=system" : ""}`, label: "Outbox" }}>
      <${Loaded} result=${message}>${(msg) => html`
        <section class="card">
          <dl class="props">
            <dt>From</dt><dd>${msg.from}</dd><dt>To</dt><dd>${msg.to}</dd>
            <dt>Captured</dt><dd>${date(msg.createdAt)}</dd><dt>Message-ID</dt><dd><code>${msg.messageId}</code></dd>
          </dl>
          <${Tabs} label="Message parts" tabs=${tabs} current=${tab} onChange=${setTab}>
          ${tab === "html" && (msg.html
            ? html`<iframe class="preview-frame" id="message-frame" title="The message as HTML" sandbox="" srcdoc=${msg.html}></iframe>`
            : html`<p class="meta">This message has no HTML part.</p>`)}
          ${tab === "text" && html`<pre>${msg.text || ""}</pre>`}
          ${tab === "headers" && html`
            <${Table} label="Headers" id="headers-table">
              <thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>
              <tbody>${msg.headers.map((h, i) => html`<tr key=${i}><th scope="row">${h.name}</th><td><code>${h.value}</code></td></tr>`)}</tbody>
            <//>`}
          ${tab === "raw" && html`<pre id="message-raw">${msg.raw}</pre>`}
          <//>
        </section>`}<//>
    <//>`;
}

/** A message the server sent itself, for the instance's owner. */
export function SystemOutboxMessage(props) {
  return html`<${OutboxMessage} ...${props} system=${true} />`;
}
