// Project settings: name, keys, members and roles, and the project's reset and deletion. What a member
// sees follows their role: only owners and admins manage keys, members and the project; only
// owners delete it.

import { html, useEffect, useState } from "../../vendor/preact-htm.js";
import { api, del, get, patch, post } from "../api.js";
import { navigate } from "../router.js";
import { Subscription } from "./billing.js";
import { SecretKeyNotice } from "./projects.js";
import { ProjectExport, Retention } from "./retention.js";
import { DeliveryWindows } from "./sending_settings.js";
import { ActionButton, Badge, Copy, ErrorBox, Field, Form, Loaded, Page, date, toast, useAction, useLoad, Table } from "../ui.js";

const ROLES = ["OWNER", "ADMIN", "MEMBER"];

function General({ project, manage, onChanged }) {
  const rename = useAction(async (data) => {
    const saved = await patch(`/users/@me/projects/${encodeURIComponent(project.id)}`, { name: data.get("name") });
    await onChanged(saved);
    return saved;
  }, "Project renamed");
  const toggle = useAction(async () => {
    const saved = await patch(`/users/@me/projects/${encodeURIComponent(project.id)}`, { disabled: !project.disabled });
    await onChanged(saved);
    return saved;
  }, (p) => (p.disabled ? "Project disabled: its keys are refused" : "Project enabled"));
  return html`
    <section class="card" aria-labelledby="general-heading">
      <h2 id="general-heading">Project</h2>
      ${manage
        ? html`<${Form} class="inline" id="rename-form" action=${rename} submit="Rename">
            <${Field} label="Name"><input name="name" required maxlength="100" value=${project.name} /><//>
          <//>`
        : html`<p>${project.name}</p>`}
      <dl class="props">
        <dt>Project id</dt><dd><code>${project.id}</code> <${Copy} text=${project.id} /></dd>
        <dt>Your role</dt><dd><${Badge}>${project.role.toLowerCase()}<//></dd>
        <dt>State</dt><dd>${project.disabled ? html`<${Badge} kind="bad">disabled<//>` : html`<${Badge} kind="ok">enabled<//>`}
          ${manage && html` <${ActionButton} action=${toggle} confirm=${project.disabled ? null : "Disable the project? Its API keys are refused until it is enabled again."}>${project.disabled ? "Enable" : "Disable"}<//>`}</dd>
      </dl>
      <${ErrorBox} error=${toggle.error} />
    </section>`;
}

/** Where the keys are used: the API's reference, read from the server's own description. */
function ReferenceLink({ project }) {
  return html`<p><a href=${`/app/p/${encodeURIComponent(project.id)}/reference`} id="reference-link">API reference</a>
    <span class="meta"> — every endpoint, with its parameters and answers (also as <a href="/openapi.json">openapi.json</a>)</span></p>`;
}

function Keys({ project, manage, onChanged }) {
  const [fresh, setFresh] = useState(null);
  const rotate = useAction(async () => {
    const issued = await post(`/users/@me/projects/${encodeURIComponent(project.id)}/regenerate-keys`);
    setFresh(issued);
    await onChanged(issued);
    return issued;
  }, "New keys issued; the old ones stopped working");
  return html`
    <section class="card" aria-labelledby="keys-heading" id="keys">
      <h2 id="keys-heading">API keys</h2>
      <dl class="props">
        <dt>Public key</dt>
        <dd><div class="record-value"><code class="key" data-public-key>${project.publicKey}</code><${Copy} text=${project.publicKey || ""} /></div>
          <span class="meta">For <code>POST /v1/track</code> only; safe in a browser.</span></dd>
        <dt>Secret key</dt><dd class="meta">sk_… — shown once, when it is made; Tidings keeps only its digest.</dd>
      </dl>
      ${fresh && html`<${SecretKeyNotice} project=${fresh} />`}
      ${manage && html`<${ActionButton} action=${rotate} confirm=${`Replace both keys of ${project.name}? Apps using the old keys stop working at once.`}>Regenerate keys<//>`}
      <${ErrorBox} error=${rotate.error} />
      <${ReferenceLink} project=${project} />
    </section>`;
}

function Members({ project, user, manage }) {
  const pid = encodeURIComponent(project.id);
  const members = useLoad(() => get(`/projects/${pid}/members`), [pid]);
  const invitations = useLoad(() => get(`/projects/${pid}/invitations`), [pid]);
  const add = useAction(async (data, form) => {
    const added = await post(`/projects/${pid}/members`, { email: data.get("email"), role: data.get("role") });
    form.reset();
    // Preact sets `selected` as a property, so a reset would fall back to the first option
    // (owner): back to the default role explicitly.
    form.elements.role.value = "MEMBER";
    members.reload();
    invitations.reload();
    return added;
  }, (m) => (m.invitation ? `Invitation sent to ${m.invitation.email}` : `${m.email} added as ${m.role.toLowerCase()}`));
  const revoke = useAction(async (invitation) => {
    await del(`/projects/${pid}/invitations/${encodeURIComponent(invitation.id)}`);
    invitations.reload();
    return invitation;
  }, (i) => `Invitation of ${i.email} revoked`);
  const change = useAction(async (member, role) => {
    const saved = await patch(`/projects/${pid}/members/${encodeURIComponent(member.userId)}`, { role });
    members.reload();
    return saved;
  }, (m) => `${m.email} is now ${m.role.toLowerCase()}`);
  const remove = useAction(async (member) => {
    await del(`/projects/${pid}/members/${encodeURIComponent(member.userId)}`);
    if (member.userId === user.id) {
      toast("You left the project");
      navigate("/app/projects");
      return;
    }
    toast(`${member.email} removed`);
    members.reload();
  });
  const owner = project.role === "OWNER";
  return html`
    <section class="card" aria-labelledby="members-heading" id="members">
      <h2 id="members-heading">Members</h2>
      <p class="meta">Owners and admins manage keys, members and settings; only owners make owners and delete the project. Members use everything else.</p>
      <${ErrorBox} error=${change.error || remove.error || revoke.error} />
      <${Loaded} result=${members}>${(list) => html`
        <${Table} label="Members" id="members-table">
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${list.map((m) => {
            const self = m.userId === user.id;
            const editable = manage && !self && (owner || m.role !== "OWNER");
            return html`<tr key=${m.userId} data-member=${m.email}>
              <td>${m.email}${self && html` <span class="meta">(you)</span>`}</td>
              <td>${editable
                ? html`<select aria-label=${`Role of ${m.email}`} value=${m.role} onChange=${(e) => change.run(m, e.currentTarget.value)}>
                    ${ROLES.filter((r) => owner || r !== "OWNER").map((r) => html`<option value=${r}>${r.toLowerCase()}</option>`)}
                  </select>`
                : m.role.toLowerCase()}</td>
              <td>${date(m.createdAt)}</td>
              <td>${(editable || self) && html`<button type="button" class="danger small" onClick=${() => window.confirm(self ? "Leave this project?" : `Remove ${m.email} from the project?`) && remove.run(m)}>${self ? "Leave" : "Remove"}</button>`}</td>
            </tr>`;
          })}</tbody>
        <//>`}<//>
      <${Loaded} result=${invitations}>${(pending) => pending.length > 0 && html`
        <h3>Pending invitations</h3>
        <${Table} label="Pending invitations" id="invitations-table">
          <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
          <tbody>${pending.map((i) => html`<tr key=${i.id} data-invitation=${i.email}>
            <td>${i.email}</td><td>${i.role.toLowerCase()}</td><td>${date(i.expiresAt)}</td>
            <td>${manage && (owner || i.role !== "OWNER") && html`<button type="button" class="danger small" onClick=${() => revoke.run(i)}>Revoke</button>`}</td>
          </tr>`)}</tbody>
        <//>`}<//>
      ${manage && html`
        <h3>Add a member</h3>
        <${Form} class="inline" id="member-form" action=${add} submit="Add member">
          <${Field} label="Email" hint="Someone without an account here gets an invitation by email."><input name="email" type="email" required /><//>
          <${Field} label="Role">
            <select name="role">${ROLES.filter((r) => owner || r !== "OWNER").map((r) => html`<option value=${r} selected=${r === "MEMBER"}>${r.toLowerCase()}</option>`)}</select>
          <//>
        <//>`}
    </section>`;
}

/** A destructive action, confirmed by typing the project's name. */
function Confirmed({ id, name, action, button, children }) {
  const [typed, setTyped] = useState("");
  const matches = typed.trim() === name;
  const onSubmit = (event) => {
    event.preventDefault();
    if (matches) action.run();
  };
  return html`
    <form class="stack" id=${id} onSubmit=${onSubmit}>
      ${children}
      <${Field} label=${html`Type <strong>${name}</strong> to confirm`}>
        <input name="confirm" autocomplete="off" spellcheck="false" value=${typed} onInput=${(e) => setTyped(e.currentTarget.value)} />
      <//>
      <${ErrorBox} error=${action.error} />
      <div class="buttons"><button type="submit" class="danger" disabled=${action.busy || !matches}>${action.busy ? "Working…" : button}</button></div>
    </form>`;
}

/** Reset and deletion, for owners. Both answer at once and go on in the background. */
function Danger({ project, onChanged }) {
  const path = `/users/@me/projects/${encodeURIComponent(project.id)}`;
  const reset = useAction(async () => {
    const saved = await post(`${path}/reset`);
    await onChanged(saved);
    return saved;
  }, "Reset started: the data goes in the background");
  const remove = useAction(async () => {
    await api("DELETE", path);
    toast(`${project.name} deleted`);
    window.location.assign("/app/projects");
  });
  // While a reset runs, look again every two seconds until it is done.
  useEffect(() => {
    if (!project.resetting) return undefined;
    const timer = setInterval(async () => {
      try {
        const fresh = await get(path);
        if (!fresh.resetting) {
          await onChanged(fresh);
          toast(`${project.name} is reset; its keys work again`);
        }
      } catch (_) {
        // The next look tries again.
      }
    }, 2000);
    return () => clearInterval(timer);
  }, [project.id, project.resetting]);
  return html`
    <section class="card" aria-labelledby="danger-heading" id="danger">
      <h2 id="danger-heading">Danger zone</h2>
      <h3>Reset the project</h3>
      ${project.resetting
        ? html`<p role="status" id="resetting"><${Badge} kind="bad">resetting<//> The project's data is being deleted. Its API keys are refused until that is done; this page updates by itself.</p>`
        : html`<${Confirmed} id="reset-form" name=${project.name} action=${reset} button="Reset project">
            <p>Resetting deletes every contact, event, email, template, segment, campaign and workflow of ${project.name}.
              The project, its members, keys, domains and webhook endpoints stay; the keys are refused until the reset is done. It cannot be undone.</p>
          <//>`}
      <h3>Delete the project</h3>
      <${Confirmed} id="delete-form" name=${project.name} action=${remove} button="Delete project">
        <p>Deleting removes ${project.name} and everything in it, for every member, and its keys stop working at once. It cannot be undone.</p>
      <//>
    </section>`;
}

const CATEGORIES = [
  ["transactional", "Transactional emails", "POST /v1/send"],
  ["marketing", "Campaign emails", "one per recipient"],
  ["workflow", "Workflow emails", "sent by workflow steps"],
  ["events", "Tracked events", "POST /v1/track"],
];

/** This month's consumption by category, and the monthly caps (owners and admins set them). */
function Limits({ project, manage }) {
  const path = `/users/@me/projects/${encodeURIComponent(project.id)}`;
  const usage = useLoad(() => get(`${path}/billing-consumption`), [project.id]);
  const save = useAction(async (data) => {
    const body = {};
    for (const [key] of CATEGORIES) {
      const text = data.get(key).trim();
      body[key] = text === "" ? null : Number(text);
    }
    const saved = await api("PUT", `${path}/billing-limits`, body);
    await usage.reload();
    return saved;
  }, "Limits saved");
  const number = (n) => (n === null ? "no limit" : n.toLocaleString());
  // The consumption names a subscription (null when there is none yet) only when billing is on.
  const billing = usage.data && usage.data.subscription !== undefined;
  return html`
    ${billing && html`<${Subscription} project=${project} manage=${manage} subscription=${usage.data.subscription} />`}
    <section class="card" aria-labelledby="limits-heading" id="limits">
      <h2 id="limits-heading">Monthly limits</h2>
      <${Loaded} result=${usage}>${(u) => html`
        <p class="meta">This month (UTC), from ${date(u.period.start)} until ${date(u.period.end)}. Past a limit, sends and tracked events are refused with
          <code>402 BILLING_LIMIT_EXCEEDED</code> and nothing is kept; a campaign stops at its limit.</p>
        <${Table} label="Consumption this month" id="usage-table">
          <thead><tr><th scope="col">Category</th><th scope="col">Used</th><th scope="col">Limit</th><th scope="col">Left</th></tr></thead>
          <tbody>${CATEGORIES.map(([key, label, hint]) => {
            const c = u.usage[key];
            return html`<tr key=${key} data-category=${key}>
              <td>${label} <span class="meta">${hint}</span></td><td>${c.used.toLocaleString()}</td><td>${number(c.limit)}</td>
              <td>${c.remaining === null ? "" : html`<${Badge} kind=${c.remaining === 0 ? "bad" : "ok"}>${c.remaining.toLocaleString()}<//>`}</td>
            </tr>`;
          })}</tbody>
        <//>
        ${manage && html`<${Form} id="limits-form" action=${save} submit="Save limits">
          <div class="grid2">${CATEGORIES.map(([key, label]) => html`
            <${Field} key=${key} label=${label} hint="Empty for no limit">
              <input name=${key} type="number" min="0" step="1" inputmode="numeric" value=${u.usage[key].limit ?? ""} />
            <//>`)}</div>
        <//>`}`}<//>
    </section>`;
}

const percent2 = (r) => `${(r * 100).toFixed(2)} %`;

/** Sender reputation: the rates over the window, and why sending is suspended if it is. */
function Security({ project }) {
  const state = useLoad(() => get(`/users/@me/projects/${encodeURIComponent(project.id)}/security`), [project.id, project.disabled]);
  return html`
    <section class="card" aria-labelledby="security-heading" id="security">
      <h2 id="security-heading">Sender reputation</h2>
      <${Loaded} result=${state}>${(s) => html`
        <p><${Badge} kind=${s.status === "ok" ? "ok" : "bad"}>${s.status}<//>
          <span class="meta"> over the last ${s.window.days} days: ${s.sent} sent, ${s.hardBounces} hard bounces (${percent2(s.bounceRate)}),
          ${s.complaints} complaints (${percent2(s.complaintRate)}). Sending is suspended above ${percent2(s.thresholds.bounceRate)} bounces
          or ${percent2(s.thresholds.complaintRate)} complaints, from ${s.thresholds.minSent} sent.</span></p>
        ${s.suspension && html`<div class="error" role="alert" id="suspension"><strong>Sending is suspended</strong> since ${date(s.suspension.createdAt)}: ${s.suspension.reason}.
          An owner or admin enables the project again above, once the list is cleaned.</div>`}
        ${s.suspensions.length > 0 && html`<details><summary>Earlier suspensions</summary><ul>${s.suspensions.map((x) => html`
          <li key=${x.id}>${date(x.createdAt)}: ${x.reason}${x.liftedAt ? ` (lifted ${date(x.liftedAt)})` : ""}</li>`)}</ul></details>`}`}<//>
    </section>`;
}

export function Settings({ project, user, onProjectsChanged }) {
  const manage = project.role === "OWNER" || project.role === "ADMIN";
  return html`
    <${Page} title="Settings">
      <${General} project=${project} manage=${manage} onChanged=${onProjectsChanged} />
      <${Security} project=${project} />
      <${DeliveryWindows} key=${project.id} />
      <${Retention} key=${`retention-${project.id}`} />
      <${ProjectExport} key=${`export-${project.id}`} />
      ${manage && html`<${Keys} project=${project} manage=${manage} onChanged=${onProjectsChanged} />`}
      ${!manage && html`<section class="card"><h2>API keys</h2><p class="meta">Only owners and admins see and rotate this project's keys.</p><${ReferenceLink} project=${project} /></section>`}
      <${Members} project=${project} user=${user} manage=${manage} />
      <${Limits} project=${project} manage=${manage} />
      ${project.role === "OWNER" && html`<${Danger} project=${project} onChanged=${onProjectsChanged} />`}
    <//>`;
}
