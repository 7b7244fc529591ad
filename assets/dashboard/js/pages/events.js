// Events: the recent ones, narrowed by name and contact; the names with their counts; and the
// statistics of a date range.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, post } from "../api.js";
import { setQuery, useLocation } from "../router.js";
import { KeyValues } from "./contact_fields.js";
import {
  ActionButton, Badge, CursorPager, Empty, ErrorBox, Field, Json, Loaded, Page, Table, date, useAction, useCursor, useLoad,
} from "../ui.js";

function Recent({ base, names }) {
  const { params } = useLocation();
  const [name, setName] = useState(params.get("name") || "");
  const [email, setEmail] = useState(params.get("email") || "");
  const [contact, setContact] = useState(null);
  const pager = useCursor();
  const list = useLoad(async () => {
    setQuery({ name, email });
    let contactId;
    if (email.trim()) {
      const found = await post("/contacts/lookup", { emails: [email.trim()] });
      const hit = found.data[0];
      if (!hit || !hit.exists) {
        setContact(null);
        return { data: [], hasMore: false, cursor: null, noContact: true };
      }
      contactId = hit.id;
      setContact(hit);
    } else setContact(null);
    return get("/events", { limit: 25, name, contactId, cursor: pager.cursor });
  }, [name, email, pager.cursor]);
  const onEmail = (event) => {
    event.preventDefault();
    setEmail(new FormData(event.currentTarget).get("email"));
    pager.reset();
  };
  return html`
    <section class="card" aria-labelledby="recent-heading">
      <h2 id="recent-heading">Recent events</h2>
      <div class="toolbar">
        <div class="field narrow-field">
          <label class="label" for="event-name-filter">Event</label>
          <select id="event-name-filter" value=${name} onChange=${(e) => { setName(e.currentTarget.value); pager.reset(); }}>
            <option value="">All events</option>
            ${names.map((n) => html`<option value=${n.name} key=${n.name}>${n.name}</option>`)}
          </select>
        </div>
        <form class="inline" role="search" onSubmit=${onEmail}>
          <${Field} label="Contact email"><input name="email" type="email" value=${email} /><//>
          <button type="submit" class="secondary">Filter</button>
          ${email && html`<button type="button" class="ghost" onClick=${() => { setEmail(""); pager.reset(); }}>Clear</button>`}
        </form>
      </div>
      <${Loaded} result=${list}>${(page) => page.noContact
        ? html`<p class="meta">No contact has the address ${email}.</p>`
        : page.data.length === 0
          ? html`<${Empty}>No events${name || contact ? " match" : " yet: track them with POST /v1/track"}.<//>`
          : html`
            <${Table} label="Recent events" id="events-table">
              <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Contact</th><th scope="col">Data</th></tr></thead>
              <tbody>${page.data.map((e) => html`
                <tr key=${e.id}><td>${date(e.createdAt)}</td><td>${e.name}</td>
                  <td>${e.contact ? html`<a href=${`${base}/contacts/${encodeURIComponent(e.contact.id)}`}>${e.contact.email}</a>` : "—"}</td>
                  <td>${e.data && typeof e.data === "object" && !Array.isArray(e.data) && Object.keys(e.data).length
                    ? html`<${KeyValues} data=${e.data} />` : html`<${Json} value=${e.data} />`}</td></tr>`)}</tbody>
            <//>
            <${CursorPager} pager=${pager} list=${page} label="Events" />`}<//>
    </section>`;
}

/** Deletes every event of a tracked name (service events are the record of what was sent). */
function DeleteName({ name, onDeleted }) {
  const remove = useAction(async () => {
    const done = await del(`/events/${encodeURIComponent(name)}`);
    onDeleted();
    return done;
  }, (d) => (d.status === "completed" ? `${d.deleted} ${name} events deleted` : `Deleting ${d.total} ${name} events in the background`));
  return html`
    <${ActionButton} class="danger small" action=${remove} label=${`Delete every ${name} event`}
      confirm=${`Delete every ${name} event? Segments that test it then match as if it never happened.`}>Delete<//>
    <${ErrorBox} error=${remove.error} />`;
}

function Names({ names, onChanged }) {
  if (names.length === 0) return html`<section class="card"><h2>Event names</h2><p class="meta">No events yet.</p></section>`;
  return html`
    <section class="card" aria-labelledby="names-heading">
      <h2 id="names-heading">Event names</h2>
      <${Table} label="Event names" id="names-table">
        <thead><tr><th scope="col">Name</th><th scope="col" class="num">Count</th><th scope="col">Last seen</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
        <tbody>${names.map((n) => html`<tr key=${n.name} data-event=${n.name}>
          <td>${n.name} ${n.reserved && html`<${Badge}>service<//>`}</td><td class="num">${n.count}</td><td>${date(n.lastSeenAt)}</td>
          <td>${!n.reserved && html`<${DeleteName} name=${n.name} onDeleted=${onChanged} />`}</td></tr>`)}</tbody>
      <//>
    </section>`;
}

function day(offset) {
  const d = new Date(Date.now() + offset * 86400000);
  return d.toISOString().slice(0, 10);
}

function Stats() {
  const [range, setRange] = useState({ from: day(-29), to: day(0) });
  const stats = useLoad(() => get("/events/stats", range), [range.from, range.to]);
  const onSubmit = (event) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    setRange({ from: data.get("from"), to: data.get("to") });
  };
  return html`
    <section class="card" aria-labelledby="stats-heading">
      <h2 id="stats-heading">Statistics</h2>
      <form class="inline" onSubmit=${onSubmit}>
        <${Field} label="From"><input type="date" name="from" value=${range.from} required /><//>
        <${Field} label="To"><input type="date" name="to" value=${range.to} required /><//>
        <button type="submit" class="secondary">Show</button>
      </form>
      <${Loaded} result=${stats}>${(s) => {
        const max = Math.max(1, ...s.days.map((d) => d.count));
        return html`
          <p><strong id="stats-total">${s.total}</strong> events from ${range.from} to ${range.to}.</p>
          <div class="stack">
            <${Table} label="Events by name">
              <thead><tr><th scope="col">Event</th><th scope="col" class="num">Count</th><th scope="col" class="num">Contacts</th></tr></thead>
              <tbody>${s.events.map((e) => html`<tr key=${e.name}><td>${e.name}</td><td class="num">${e.count}</td><td class="num">${e.contacts}</td></tr>`)}</tbody>
            <//>
            <ul class="bars" aria-label="Events per day">
              ${s.days.map((d) => html`<li key=${d.date}><span>${d.date}</span><span class="bar-fill" style=${`width:${(100 * d.count) / max}%`}></span><span class="num">${d.count}</span></li>`)}
            </ul>
          </div>`;
      }}<//>
    </section>`;
}

export function Events({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const names = useLoad(() => get("/events/names"), []);
  return html`
    <${Page} title="Events">
      <${Loaded} result=${names}>${(list) => html`
        <${Recent} base=${base} names=${list} />
        <${Names} names=${list} onChanged=${names.reload} />
        <${Stats} />`}<//>
    <//>`;
}
