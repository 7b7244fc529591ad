// Double opt-in and proof of consent: the project's setting and confirmation mail, the record of
// what each contact agreed to (how, when, from where), and its export.

import { html } from "../../vendor/preact-htm.js";
import { download, get, patch } from "../api.js";
import { Badge, ErrorBox, Field, Form, Loaded, Table, date, useAction, useLoad } from "../ui.js";

/** The project's double opt-in setting, its confirmation mail, and the consent record's export. */
export function ConsentSettings() {
  const loaded = useLoad(() => Promise.all([get("/audience-settings"), get("/templates", { limit: 100 })]), []);
  const save = useAction(async (data) => {
    const saved = await patch("/audience-settings", {
      doubleOptIn: data.get("doubleOptIn") === "on",
      confirmationTemplateId: data.get("confirmationTemplateId") || null,
      confirmationFrom: data.get("confirmationFrom").trim() || null,
    });
    loaded.setData([saved, loaded.data[1]]);
    return saved;
  }, "Consent settings saved");
  const exportAll = useAction(() => download("/consents/export", "consents.csv"), "Consent record downloaded");
  return html`
    <section class="card" aria-labelledby="consent-heading" id="consent-settings">
      <h2 id="consent-heading">Double opt-in</h2>
      <p class="meta">With double opt-in, a new subscriber gets no marketing mail until it follows the link of a confirmation
        mail and presses the button on its page (link scanners only open the page). API calls ask for it with
        <code>confirm: true</code>. Each confirmed subscription is kept as proof of consent: when, how, from which address and browser,
        and the words agreed to.</p>
      <${Loaded} result=${loaded}>${([settings, templates]) => html`
        <${Form} action=${save} submit="Save consent settings" id="consent-form">
          <label class="field check"><input type="checkbox" name="doubleOptIn" checked=${settings.doubleOptIn} /> Forms ask new subscribers to confirm by mail</label>
          <${Field} label="Confirmation mail" hint="A transactional template with {{ confirmUrl }}; the built-in mail when none is chosen.">
            <select name="confirmationTemplateId" id="confirmation-template">
              <option value="">Built-in mail</option>
              ${(templates.data || []).map((t) => html`<option key=${t.id} value=${t.id} selected=${t.id === settings.confirmationTemplateId}>${t.name}</option>`)}
            </select>
          <//>
          <${Field} label="Sender of the built-in mail" hint="An address at a verified domain; noreply@ your first verified domain when empty.">
            <input type="email" name="confirmationFrom" id="confirmation-from" value=${settings.confirmationFrom || ""} placeholder="noreply@example.com" />
          <//>
        <//>`}<//>
      <div class="buttons">
        <button type="button" class="secondary" id="consent-export" disabled=${exportAll.busy} onClick=${() => exportAll.run()}>Download the consent record (CSV)</button>
      </div>
      <${ErrorBox} error=${exportAll.error} />
    </section>`;
}

const METHODS = { api: "API", form: "Form", import: "Import", preference_centre: "Preferences page", dashboard: "Dashboard" };

/** A contact's consent: the subscription waiting for confirmation, and each grant it made. */
export function ContactConsent({ contact }) {
  const record = useLoad(() => get(`/contacts/${encodeURIComponent(contact.id)}/consents`), [contact.id, contact.updatedAt]);
  return html`
    <section class="card" aria-labelledby="consent-record-heading" id="contact-consent">
      <h2 id="consent-record-heading">Consent</h2>
      <${Loaded} result=${record}>${({ pending, records }) => html`
        ${pending && html`<p id="consent-pending"><${Badge} kind="warn">waiting for confirmation<//> Asked ${date(pending.requestedAt)}
          through ${METHODS[pending.method] || pending.method}; the link works until ${date(pending.expiresAt)}.</p>`}
        ${records.length === 0
          ? html`<p class="meta">No consent recorded. Grants made through a form, a confirmation link, the preferences page, or an API
              call with <code>consent</code> are kept here.</p>`
          : html`<${Table} label="Consent record" id="consent-table">
              <thead><tr><th scope="col">Given</th><th scope="col">For</th><th scope="col">How</th><th scope="col">From</th><th scope="col">Words agreed to</th><th scope="col">Confirmed</th></tr></thead>
              <tbody>${records.map((r, i) => html`<tr key=${i}>
                <td>${date(r.requestedAt)}</td>
                <td>${r.topic ? `Topic ${r.topic}` : "Marketing email"}</td>
                <td>${METHODS[r.method] || r.method}</td>
                <td>${r.ip || "—"}${r.userAgent && html`<div class="meta">${r.userAgent}</div>`}</td>
                <td>${r.consentText || "—"}</td>
                <td>${r.confirmedAt ? html`${date(r.confirmedAt)}${r.confirmIp && html`<div class="meta">${r.confirmIp}</div>`}` : "single opt-in"}</td>
              </tr>`)}</tbody>
            <//>`}`}<//>
    </section>`;
}
