// The onboarding checklist at the top of a project's first page (Contacts): the first steps a
// new project takes, from `GET /projects/:id/setup-state`, each linking to where it is done.
// It goes away once every step is taken.

import { html } from "../../vendor/preact-htm.js";
import { get } from "../api.js";
import { Copy, useLoad } from "../ui.js";

/** The request that tracks a first event, with this project's public key and this server. */
function trackSnippet(project) {
  return `curl -X POST ${location.origin}/v1/track \\
  -H "Authorization: Bearer ${project.publicKey || "<public key>"}" \\
  -H "Content-Type: application/json" \\
  -d '{"event": "signed_up", "email": "someone@example.com"}'`;
}

const STEPS = [
  ["domainVerified", "Verify a sending domain", "domains", "Add its DNS records; mail is signed with DKIM once it is verified."],
  ["firstContact", "Add a contact", "contacts", "Create one above, import a CSV, or let your app track an event."],
  ["firstEvent", "Track an event from your app", "events", "POST /v1/track with the public key, from your app or its web pages."],
  ["firstSend", "Send an email", "templates", "POST /v1/send with the secret key, or test-send a template."],
  ["firstCampaign", "Create a campaign", "campaigns", "Write it once, pick its audience, send it now or later."],
];

export function Checklist({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const state = useLoad(() => get(`/projects/${encodeURIComponent(project.id)}/setup-state`), [project.id]);
  const s = state.data;
  if (!s || s.completed === s.total) return null;
  return html`
    <section class="card checklist" aria-labelledby="checklist-heading" id="checklist">
      <h2 id="checklist-heading">Get started <span class="meta">${s.completed} of ${s.total} done</span></h2>
      <ol>
        ${STEPS.map(([key, label, page, hint]) => html`
          <li key=${key} data-step=${key} class=${s[key] ? "done" : "todo"}>
            <span aria-hidden="true">${s[key] ? "✓" : "○"}</span>
            ${s[key] ? html`<span>${label} <span class="visually-hidden">(done)</span></span>` : html`<a href=${`${base}/${page}`}>${label}</a>`}
            <small class="hint">${hint}</small>
            ${key === "firstEvent" && !s[key] && html`
              <div class="snippet"><pre id="track-snippet">${trackSnippet(project)}</pre><${Copy} text=${trackSnippet(project)} label="Copy the request" /></div>`}
          </li>`)}
      </ol>
    </section>`;
}
