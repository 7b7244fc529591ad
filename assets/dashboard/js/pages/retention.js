// How long the project keeps its data (issue 35, item 1): each period in days, or the server's
// default when left empty. A job prunes what is older every hour; analytics' counts stay.

import { html } from "../../vendor/preact-htm.js";
import { get, patch } from "../api.js";
import { Field, Form, Loaded, useAction, useLoad } from "../ui.js";

const PERIODS = [
  ["emailContentDays", "Email content", "The body, one-off variables and attachments of sent mail, and captured messages. The email, its status and its events stay."],
  ["eventsDays", "Events", "Tracked events, opens and clicks. The counts the overview and analytics show stay."],
  ["inboundDays", "Received mail", "Mail received for the project's inbound domains, from when it arrives."],
  ["webhookDeliveriesDays", "Webhook log", "Deliveries to the project's endpoints, once they are over."],
];

export function Retention() {
  const retention = useLoad(() => get("/retention"), []);
  const save = useAction(async (data) => {
    const body = {};
    for (const [key] of PERIODS) {
      const value = data.get(key).trim();
      body[key] = value === "" ? null : Number(value);
    }
    const saved = await patch("/retention", body);
    retention.setData(saved);
    return saved;
  }, "Retention saved");
  return html`
    <section class="card" aria-labelledby="retention-heading" id="retention">
      <h2 id="retention-heading">Data retention</h2>
      <p class="meta">How many days the project keeps each kind of data. Leave a field empty for the server's default.
        Older data is removed every hour, and the space it took is given back.</p>
      <${Loaded} result=${retention}>${(r) => html`
        <${Form} id="retention-form" action=${save} submit="Save retention">
          ${PERIODS.map(([key, label, hint]) => html`
            <${Field} key=${key} label=${`${label} (days)`} hint=${`${hint} Default: ${r.defaults[key]} days.`}>
              <input name=${key} id=${`retention-${key}`} type="number" min="1" max="36500" inputmode="numeric"
                placeholder=${String(r.defaults[key])} value=${r.custom.includes(key) ? r[key] : ""} /><//>`)}
        <//>`}<//>
    </section>`;
}
