// The outbox: mail the capture transport kept instead of sending (no SMTP relay configured),
// each message with its HTML in a sandboxed frame, its headers and its source.

import { html, useState } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { CursorPager, Empty, Loaded, Page, Table, Tabs, date, useCursor, useLoad } from "../ui.js";

export function Outbox({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const pager = useCursor();
  const list = useLoad(() => get("/outbox", { limit: 25, cursor: pager.cursor }), [pager.cursor]);
  return html`
    <${Page} title="Outbox">
      <p class="meta">With no SMTP relay configured, Tidings keeps every message here, signed and complete, instead of sending it.</p>
      <${Loaded} result=${list}>${(page) => page.data.length === 0
        ? html`<${Empty}>The outbox is empty. Messages appear here when mail is sent without a relay; with a relay, mail goes out and is not kept.<//>`
        : html`
          <${Table} label="Captured messages" id="outbox-table">
            <thead><tr><th scope="col">When</th><th scope="col">To</th><th scope="col">Subject</th><th scope="col">From</th><th scope="col" class="num">Size</th></tr></thead>
            <tbody>${page.data.map((m) => html`
              <tr key=${m.id}><td>${date(m.createdAt)}</td><td>${m.to}</td>
                <td><a href=${`${base}/outbox/${m.id}`}>${m.subject || "(no subject)"}</a></td><td>${m.from}</td>
                <td class="num">${(m.size / 1024).toFixed(1)} KB</td></tr>`)}</tbody>
          <//>
          <${CursorPager} pager=${pager} list=${page} label="Outbox" />`}<//>
    <//>`;
}

export function OutboxMessage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const [tab, setTab] = useState("html");
  const message = useLoad(() => get(`/outbox/${encodeURIComponent(params.id)}`), [params.id]);
  const m = message.data;
  const tabs = [["html", "HTML"], ["text", "Text"], ["headers", "Headers"], ["raw", "Source"]];
  return html`
    <${Page} title=${m ? m.subject || "(no subject)" : "Message"} back=${{ href: `${base}/outbox`, label: "Outbox" }}>
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
