// When the project's marketing mail may go (issue 34, item 3): the time zone of contacts
// without their own, and the quiet hours and days when marketing mail waits, read in each
// contact's zone. Transactional mail never waits.

import { html } from "../../vendor/preact-htm.js";
import { get, patch } from "../api.js";
import { Field, Form, Loaded, useAction, useLoad } from "../ui.js";

const DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];

/** Every IANA zone the browser knows, for the zone field's suggestions. */
function zones() {
  try { return Intl.supportedValuesOf("timeZone"); } catch (e) { return []; }
}

export function DeliveryWindows() {
  const settings = useLoad(() => get("/sending-settings"), []);
  const save = useAction(async (data) => {
    const body = {
      timezone: data.get("timezone").trim(),
      quietDays: DAYS.filter((d) => data.get(`quiet-${d}`)),
      quietHours: data.get("quiet-on") ? { start: data.get("quiet-start"), end: data.get("quiet-end") } : null,
    };
    const saved = await patch("/sending-settings", body);
    settings.setData(saved);
    return saved;
  }, "Sending times saved");
  return html`
    <section class="card" aria-labelledby="windows-heading" id="delivery-windows">
      <h2 id="windows-heading">Sending times</h2>
      <p class="meta">Marketing mail waits out the quiet hours and days, in each contact's own time zone (their
        <code>timezone</code> field, which signup forms fill in from the browser), else in the project's. A campaign
        sent "at 09:00 in each contact's time zone" uses the same zones. Transactional mail never waits.</p>
      <${Loaded} result=${settings}>${(s) => html`
        <${Form} id="windows-form" action=${save} submit="Save sending times">
          <${Field} label="Project time zone" hint="For contacts without their own">
            <input name="timezone" id="windows-timezone" list="windows-zones" required value=${s.timezone} /><//>
          <datalist id="windows-zones">${zones().map((z) => html`<option value=${z} />`)}</datalist>
          <fieldset class="field">
            <legend class="label">Quiet hours</legend>
            <label class="check"><input type="checkbox" name="quiet-on" id="windows-quiet-on" checked=${!!s.quietHours} />
              <span>Hold marketing mail every day from</span></label>
            <div class="inline">
              <input type="time" name="quiet-start" id="windows-quiet-start" aria-label="Quiet from" value=${s.quietHours ? s.quietHours.start : "21:00"} />
              <span>to</span>
              <input type="time" name="quiet-end" id="windows-quiet-end" aria-label="Quiet until" value=${s.quietHours ? s.quietHours.end : "08:00"} />
            </div>
          </fieldset>
          <fieldset class="field">
            <legend class="label">Quiet days</legend>
            <div class="inline">${DAYS.map((d) => html`
              <label class="check" key=${d}><input type="checkbox" name=${`quiet-${d}`} checked=${s.quietDays.includes(d)} />
                <span>${d[0].toUpperCase() + d.slice(1)}</span></label>`)}</div>
          </fieldset>
        <//>`}<//>
    </section>`;
}
