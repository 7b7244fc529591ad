// The user's projects: open one, or create one (its secret key is shown once).

import { html, useState } from "../../vendor/preact-htm.js";
import { post } from "../api.js";
import { AccountCard } from "./account.js";
import { Badge, Copy, Empty, Field, Form, Page, date, useAction } from "../ui.js";

/** The secret key of a project, just made: shown once, with a copy button. */
export function SecretKeyNotice({ project }) {
  return html`
    <div class="notice" role="status">
      <p><strong>Secret key for ${project.name}</strong></p>
      <p class="record-value"><code class="key" data-secret-key>${project.secretKey}</code><${Copy} text=${project.secretKey} /></p>
      <p class="meta">Copy it now: it is shown only once, and Tidings keeps only a digest of it.</p>
    </div>`;
}

export function Projects({ projects, user, onProjectsChanged }) {
  const [fresh, setFresh] = useState(null);
  const create = useAction(async (data, form) => {
    const created = await post("/users/@me/projects", { name: data.get("name") });
    form.reset();
    setFresh(created);
    await onProjectsChanged();
  }, "Project created");
  // Back from a single sign-on that took over an account made with this address by someone
  // who never confirmed it (the server mails the same words).
  const reclaimed = new URLSearchParams(location.search).get("notice") === "reclaimed";
  return html`
    <${Page} title="Projects">
      ${reclaimed && html`<div class="notice warn" role="status" id="reclaimed">
        <p><strong>Your account was secured.</strong> An account with your address already existed here, made by
        someone who never confirmed the address: possibly not you. It is yours now: its password was replaced and
        everyone signed in to it was signed out.</p>
        <p>Anything in it was made before you took it over: check these projects and their members, and make new
        API keys for any project you keep.</p></div>`}
      ${fresh && html`<${SecretKeyNotice} project=${fresh} />`}
      ${projects.length === 0 && html`<${Empty}>No projects yet. A project holds contacts, templates and segments, and has its own API keys.<//>`}
      ${projects.map((p) => html`
        <article class="card" data-project=${p.id} key=${p.id}>
          <h2><a href=${`/app/p/${encodeURIComponent(p.id)}/contacts`}>${p.name}</a> <${Badge}>${p.role.toLowerCase()}<//>
            ${p.disabled && html` <${Badge} kind="bad">disabled<//>`}</h2>
          <dl class="props">
            <dt>Project id</dt><dd><code>${p.id}</code></dd>
            <dt>Public key</dt><dd><code class="key">${p.publicKey || ""}</code></dd>
            <dt>Created</dt><dd>${date(p.createdAt)}</dd>
          </dl>
        </article>`)}
      <section class="card">
        <h2>New project</h2>
        <${Form} id="project-form" class="inline" action=${create} submit="Create project">
          <${Field} label="Name"><input name="name" required maxlength="100" /><//>
        <//>
      </section>
      <${AccountCard} user=${user} />
    <//>`;
}
