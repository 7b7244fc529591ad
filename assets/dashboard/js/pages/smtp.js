// SMTP: the credentials other apps (Gitea, Ghost, Nextcloud, Mastodon, a cron job) sign in to
// the submission listener with, the settings to give them, ready to copy, and a snippet per
// common app. A new credential's password is shown once.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, post } from "../api.js";
import { Badge, Copy, Empty, ErrorBox, Field, Form, Loaded, Page, Table, date, useAction, useLoad } from "../ui.js";

/** What a common app's configuration says, filled in with `s` (host, port, user, password). */
function snippets(s) {
  const from = "you@your-domain";
  return [
    ["Gitea (app.ini)", `[mailer]
ENABLED = true
PROTOCOL = smtp+starttls
SMTP_ADDR = ${s.host}
SMTP_PORT = ${s.port}
USER = ${s.user}
PASSWD = ${s.password}
FROM = "Gitea <${from}>"`],
    ["Ghost (config.production.json)", JSON.stringify({ mail: { from, transport: "SMTP", options: {
      host: s.host, port: s.port, secure: false, auth: { user: s.user, pass: s.password } } } }, null, 2)],
    ["Nextcloud (config.php)", `'mail_smtpmode' => 'smtp',
'mail_smtphost' => '${s.host}',
'mail_smtpport' => ${s.port},
'mail_smtpsecure' => '',
'mail_smtpauth' => true,
'mail_smtpname' => '${s.user}',
'mail_smtppassword' => '${s.password}',`],
    ["Mastodon (.env.production)", `SMTP_SERVER=${s.host}
SMTP_PORT=${s.port}
SMTP_LOGIN=${s.user}
SMTP_PASSWORD=${s.password}
SMTP_ENABLE_STARTTLS=always
SMTP_FROM_ADDRESS=${from}`],
    ["cron and scripts (msmtp)", `account tidings
host ${s.host}
port ${s.port}
tls on
tls_starttls on
auth on
user ${s.user}
password ${s.password}
from ${from}
account default : tidings`],
  ];
}

function Settings({ submission, created }) {
  const [app, setApp] = useState(0);
  if (!submission) {
    return html`<section class="card stack" aria-labelledby="smtp-settings" id="smtp-off">
      <h2 id="smtp-settings">Settings for your apps</h2>
      <p>The submission listener is off on this server. Its operator turns it on with <code>[submission] listen</code>
        (port 587, STARTTLS) and <code>listen_tls</code> (port 465), with a certificate; the README says how.
        Credentials made here work as soon as it is on.</p>
    </section>`;
  }
  const port = submission.starttlsPort ?? submission.tlsPort;
  const user = created ? created.username : "<username>";
  const password = created ? created.password : "<password>";
  const rows = [
    ["Host", submission.host],
    submission.starttlsPort && ["Port (STARTTLS)", String(submission.starttlsPort)],
    submission.tlsPort && ["Port (TLS from the start)", String(submission.tlsPort)],
    ["Sign-in", "AUTH PLAIN or LOGIN, over TLS only", false],
    ["Username", user],
    ["Password", password],
  ].filter(Boolean);
  const all = snippets({ host: submission.host, port, user, password });
  return html`<section class="card stack" aria-labelledby="smtp-settings" id="smtp-settings-card">
    <h2 id="smtp-settings">Settings for your apps</h2>
    <dl class="props">${rows.map(([k, v, copy = true]) => html`<dt key=${`${k}-t`}>${k}</dt><dd key=${`${k}-d`}>${copy ? html`<code>${v}</code> <${Copy} text=${v} />` : v}</dd>`)}</dl>
    <p class="meta">The From address must be on a verified domain of this project. <code>X-Tidings-Type: marketing</code> in a
      message makes it marketing mail: only to subscribed contacts, with an unsubscribe header.</p>
    <${Field} label="App"><select id="smtp-app" value=${app} onChange=${(e) => setApp(Number(e.currentTarget.value))}>
      ${all.map(([name], i) => html`<option key=${name} value=${i}>${name}</option>`)}</select><//>
    <pre id="smtp-snippet" tabindex="0" role="region" aria-label=${`${all[app][0]}: the settings`}><code>${all[app][1]}</code></pre>
    <div><${Copy} text=${all[app][1]} label="Copy the snippet" /></div>
  </section>`;
}

export function Smtp() {
  const config = useLoad(() => get("/config"), []);
  const list = useLoad(() => get("/smtp-credentials"), []);
  const [created, setCreated] = useState(null);
  const add = useAction(async (data, form) => {
    const domains = String(data.get("domains") || "").split(/[\s,]+/).filter(Boolean);
    const track = ["opens", "clicks"].filter((t) => data.get(t));
    const c = await post("/smtp-credentials", { name: data.get("name"), allowedFromDomains: domains.length ? domains : null, track });
    form.reset();
    setCreated(c);
    list.reload();
    return c;
  }, "Credential added");
  const remove = useAction(async (c) => {
    await del(`/smtp-credentials/${encodeURIComponent(c.id)}`);
    if (created && created.id === c.id) setCreated(null);
    list.reload();
  }, "Credential deleted");
  return html`
    <${Page} title="SMTP">
      <p class="meta">Apps that speak only SMTP send through Tidings with a credential: their mail is signed with this project's
        domain, kept as written, and counted, tracked and suppressed like mail sent with the API.</p>
      ${created && html`<div class="card" role="status" id="smtp-password"><strong>Password of ${created.name}</strong>
        <p class="meta">Shown once: put it in the app's settings now.</p>
        <code data-smtp-password>${created.password}</code> <${Copy} text=${created.password} label="Copy the password" /></div>`}
      <${Loaded} result=${config}>${(c) => html`<${Settings} submission=${c.submission} created=${created} />`}<//>
      <${ErrorBox} error=${remove.error} />
      <${Loaded} result=${list}>${(credentials) => credentials.length === 0
        ? html`<${Empty}>No credentials yet. Add one per app, so each can be named, narrowed and deleted on its own.<//>`
        : html`<${Table} label="Credentials" id="smtp-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Username</th><th scope="col">May send from</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${credentials.map((c) => html`<tr key=${c.id} data-credential=${c.name}>
              <td>${c.name}${c.track.length > 0 && html`<div class="meta">tracks ${c.track.join(" and ")}</div>`}</td>
              <td><code>${c.username}</code> <${Copy} text=${c.username} /></td>
              <td>${c.allowedFromDomains ? c.allowedFromDomains.join(", ") : html`<${Badge}>any verified domain<//>`}</td>
              <td>${c.lastUsedAt ? date(c.lastUsedAt) : "never"}</td>
              <td class="buttons"><button type="button" class="danger small" aria-label=${`Delete the credential ${c.name}`}
                onClick=${() => window.confirm(`Delete the credential ${c.name}? Apps using it can no longer send.`) && remove.run(c)}>Delete</button></td>
            </tr>`)}</tbody>
          <//>`}<//>
      <section class="card" aria-labelledby="new-credential">
        <h2 id="new-credential">Add a credential</h2>
        <${Form} action=${add} submit="Add credential" id="smtp-form">
          <div class="grid2">
            <${Field} label="Name" hint="The app it is for."><input name="name" required maxlength="200" placeholder="Gitea" /><//>
            <${Field} label="May send from" hint="Domains, separated by commas; empty for any verified domain."><input name="domains" placeholder="example.com" /><//>
          </div>
          <fieldset><legend>Track by default</legend>
            <label class="field check"><input type="checkbox" name="opens" /> Opens</label>
            <label class="field check"><input type="checkbox" name="clicks" /> Clicks</label>
          </fieldset>
        <//>
      </section>
    <//>`;
}
