// Subscription topics: what the project's marketing mail is about. A contact subscribes to each
// on its own (its choice, else the topic's default); a campaign to a topic reaches only the
// contacts subscribed to it and to marketing.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import { ConsentSettings } from "./consent.js";
import { Badge, Empty, ErrorBox, Field, Form, Loaded, Page, Table, date, useAction, useLoad } from "../ui.js";

/** The fields of a topic, for the add and edit forms. */
function TopicFields({ topic = {} }) {
  return html`
    <div class="grid2">
      <${Field} label="Name"><input name="name" required maxlength="200" value=${topic.name || ""} placeholder="Product news" /><//>
      <${Field} label="Description" hint="Shown to contacts on their preferences page."><input name="description" maxlength="500" value=${topic.description || ""} /><//>
    </div>
    <label class="field check"><input type="checkbox" name="defaultOptIn" checked=${!!topic.defaultOptIn} /> Contacts are subscribed until they choose otherwise</label>
    <label class="field check"><input type="checkbox" name="public" checked=${topic.public !== false} /> Contacts see it on their preferences page</label>`;
}

function settingsOf(data) {
  return {
    name: data.get("name"),
    description: data.get("description") || "",
    defaultOptIn: data.get("defaultOptIn") === "on",
    public: data.get("public") === "on",
  };
}

function TopicRow({ topic, onChanged, onDeleted }) {
  const [editing, setEditing] = useState(false);
  const save = useAction(async (data) => {
    const saved = await patch(`/topics/${encodeURIComponent(topic.id)}`, settingsOf(data));
    setEditing(false);
    onChanged(saved);
    return saved;
  }, "Topic saved");
  const remove = useAction(async () => {
    await del(`/topics/${encodeURIComponent(topic.id)}`);
    onDeleted(topic);
  }, "Topic deleted");
  return html`
    <tr data-topic=${topic.name}>
      <th scope="row">${topic.name}${topic.description && html`<div class="meta">${topic.description}</div>`}</th>
      <td>${topic.defaultOptIn ? html`<${Badge} kind="ok">subscribed<//>` : html`<${Badge}>not subscribed<//>`}</td>
      <td>${topic.public ? "listed" : "hidden"}</td>
      <td><code>${topic.id}</code></td>
      <td>
        <div class="buttons">
          <button type="button" class="secondary small" aria-expanded=${editing} onClick=${() => setEditing(!editing)}>Edit</button>
          <button type="button" class="danger small" aria-label=${`Delete the topic ${topic.name}`}
            onClick=${() => window.confirm(`Delete the topic ${topic.name}? Contacts' choices of it go too.`) && remove.run()}>Delete</button>
        </div>
        <${ErrorBox} error=${remove.error} />
        ${editing && html`<${Form} action=${save} submit="Save topic"><${TopicFields} topic=${topic} /><//>`}
      </td>
    </tr>`;
}

export function Topics() {
  const list = useLoad(() => get("/topics"), []);
  const add = useAction(async (data, form) => {
    const made = await post("/topics", settingsOf(data));
    form.reset();
    list.setData([...(list.data || []), made]);
    return made;
  }, (t) => `Topic ${t.name} added`);
  return html`
    <${Page} title="Topics">
      <p class="meta">Topics are what your marketing mail is about. Each contact subscribes to each topic on its own; a campaign
        sent to a topic reaches only the contacts subscribed to it (and to marketing). Conditions read them as <code>topic.&lt;id&gt;</code>.</p>
      <${Loaded} result=${list}>${(topics) => topics.length === 0
        ? html`<${Empty}>No topics yet. Add one for each kind of mail your contacts may want or not.<//>`
        : html`<${Table} label="Topics" id="topics-table">
            <thead><tr><th scope="col">Topic</th><th scope="col">Until a contact chooses</th><th scope="col">Preferences page</th><th scope="col">Id</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${topics.map((t) => html`<${TopicRow} key=${t.id} topic=${t}
              onChanged=${(saved) => list.setData(list.data.map((x) => (x.id === saved.id ? saved : x)))}
              onDeleted=${(gone) => list.setData(list.data.filter((x) => x.id !== gone.id))} />`)}</tbody>
          <//>`}<//>
      <section class="card" aria-labelledby="new-topic">
        <h2 id="new-topic">Add a topic</h2>
        <${Form} action=${add} submit="Add topic" id="topic-form"><${TopicFields} /><//>
      </section>
      <${ConsentSettings} />
    <//>`;
}

/** A contact's topics, each a switch: the contact's choice, else the topic's default; and the
 * pause of its marketing mail. */
export function ContactTopics({ contact, onChanged }) {
  const topics = useLoad(() => get("/topics"), []);
  const choose = useAction(async (topic, subscribed) => {
    const saved = await patch(`/contacts/${encodeURIComponent(contact.id)}`, { topics: { [topic.id]: subscribed } });
    onChanged({ ...contact, ...saved });
    return { topic, subscribed };
  }, ({ topic, subscribed }) => `${subscribed ? "Subscribed to" : "Unsubscribed from"} ${topic.name}`);
  const pause = useAction(async (days) => {
    const snoozedUntil = days ? new Date(Date.now() + days * 86_400_000).toISOString() : null;
    const saved = await patch(`/contacts/${encodeURIComponent(contact.id)}`, { snoozedUntil });
    onChanged({ ...contact, ...saved });
    return days;
  }, (days) => (days ? `Marketing email paused for ${days} days` : "Marketing email resumed"));
  const paused = contact.snoozedUntil && new Date(contact.snoozedUntil) > new Date();
  return html`
    <section class="card" aria-labelledby="topics-heading" id="contact-topics">
      <h2 id="topics-heading">Topics</h2>
      <${ErrorBox} error=${choose.error || pause.error} />
      <div class="buttons" id="contact-pause">
        ${paused
          ? html`<span>Marketing email paused until ${date(contact.snoozedUntil)}</span>
              <button type="button" class="secondary small" disabled=${pause.busy} onClick=${() => pause.run(0)}>Resume now</button>`
          : [30, 60, 90].map((days) => html`<button type="button" key=${days} class="secondary small" disabled=${pause.busy}
              onClick=${() => pause.run(days)}>Pause for ${days} days</button>`)}
      </div>
      <${Loaded} result=${topics}>${(list) => list.length === 0
        ? html`<p class="meta">This project has no topics.</p>`
        : html`<ul class="plain">${list.map((t) => html`<li key=${t.id}>
            <label class="check"><input type="checkbox" data-contact-topic=${t.name} checked=${!!(contact.topics || {})[t.id]}
              disabled=${choose.busy} onChange=${(e) => choose.run(t, e.currentTarget.checked)} /> ${t.name}</label>
            ${!contact.subscribed && html` <span class="meta">(no marketing mail while unsubscribed)</span>`}</li>`)}</ul>`}<//>
    </section>`;
}
