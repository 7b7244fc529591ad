// Signup forms: the builder (fields, topics, double opt-in, the words agreed to, what follows a
// submission, the sites allowed to embed it) with a live preview, and the hosted page's link and
// embed snippet to copy.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import { Copy, Empty, ErrorBox, Field, Loaded, Page, Table, useAction, useLoad } from "../ui.js";

const TYPES = [["string", "Text"], ["number", "Number"], ["boolean", "Yes/no"], ["date", "Date"]];
const BLANK = { name: "", fields: [], topics: [], doubleOptIn: null, consentText: "", successMessage: "", redirectUrl: "", allowedOrigins: [] };

/** What the subscriber sees, drawn from the unsaved settings. */
function Preview({ form, topics }) {
  const offered = topics.filter((t) => form.topics.includes(t.id));
  return html`
    <div class="form-preview" id="form-preview" aria-label="Preview" role="region">
      <h3>${form.name || "Untitled form"}</h3>
      <label class="field">Email<input type="email" disabled placeholder="you@example.com" /></label>
      ${form.fields.map((f, i) => html`<label class="field" key=${i}>${f.label || f.key || "Field"}${f.required ? " *" : ""}
        <input type=${{ number: "number", boolean: "checkbox", date: "date" }[f.type] || "text"} disabled /></label>`)}
      ${offered.map((t) => html`<label class="check" key=${t.id}><input type="checkbox" disabled /> ${t.name}</label>`)}
      ${form.consentText && html`<p class="meta">${form.consentText}</p>`}
      <button type="button" disabled>Subscribe</button>
    </div>`;
}

function FieldRow({ field, index, onChange, onRemove }) {
  const set = (key) => (e) => onChange({ ...field, [key]: e.currentTarget.type === "checkbox" ? e.currentTarget.checked : e.currentTarget.value });
  return html`
    <fieldset class="form-field-row" data-form-field=${index}>
      <legend class="visually-hidden">Field ${index + 1}</legend>
      <label class="field">Label<input value=${field.label} onInput=${set("label")} required maxlength="200" /></label>
      <label class="field">Key<input value=${field.key} onInput=${set("key")} required pattern="[A-Za-z][A-Za-z0-9_]*" maxlength="64" /></label>
      <label class="field">Type<select value=${field.type} onChange=${set("type")}>${TYPES.map(([v, l]) => html`<option value=${v}>${l}</option>`)}</select></label>
      <label class="check"><input type="checkbox" checked=${field.required} onChange=${set("required")} /> Required</label>
      <button type="button" class="danger small" onClick=${onRemove} aria-label=${`Remove the field ${field.label || index + 1}`}>Remove</button>
    </fieldset>`;
}

function Builder({ initial, topics, onSaved, onCancel }) {
  const [form, setForm] = useState({ ...BLANK, ...initial, consentText: initial.consentText || "", successMessage: initial.successMessage || "", redirectUrl: initial.redirectUrl || "" });
  const [origins, setOrigins] = useState((initial.allowedOrigins || []).join("\n"));
  const set = (key) => (e) => setForm({ ...form, [key]: e.currentTarget.value });
  const save = useAction(async () => {
    const body = {
      name: form.name,
      fields: form.fields,
      topics: form.topics,
      doubleOptIn: form.doubleOptIn,
      consentText: form.consentText,
      successMessage: form.successMessage,
      redirectUrl: form.redirectUrl,
      allowedOrigins: origins.split("\n").map((o) => o.trim()).filter(Boolean),
    };
    const saved = initial.id ? await patch(`/forms/${encodeURIComponent(initial.id)}`, body) : await post("/forms", body);
    onSaved(saved);
    return saved;
  }, (f) => `Form ${f.name} saved`);
  const fieldsOf = (fields) => setForm({ ...form, fields });
  return html`
    <section class="card" aria-labelledby="builder-heading" id="form-builder">
      <h2 id="builder-heading">${initial.id ? `Edit ${initial.name}` : "New form"}</h2>
      <div class="grid2">
        <form onSubmit=${(e) => { e.preventDefault(); save.run(); }} id="form-settings">
          <${Field} label="Name"><input name="name" required maxlength="200" value=${form.name} onInput=${set("name")} /><//>
          <h3>Fields</h3>
          <p class="meta">Email is always asked. Each field is kept in the contact's custom fields under its key.</p>
          ${form.fields.map((f, i) => html`<${FieldRow} key=${i} field=${f} index=${i}
            onChange=${(next) => fieldsOf(form.fields.map((x, j) => (j === i ? next : x)))}
            onRemove=${() => fieldsOf(form.fields.filter((_, j) => j !== i))} />`)}
          <button type="button" class="secondary small" id="add-form-field"
            onClick=${() => fieldsOf([...form.fields, { key: "", label: "", type: "string", required: false }])}>Add a field</button>
          ${topics.length > 0 && html`<h3>Topics offered</h3>${topics.map((t) => html`<label class="check" key=${t.id}>
            <input type="checkbox" data-form-topic=${t.name} checked=${form.topics.includes(t.id)}
              onChange=${(e) => setForm({ ...form, topics: e.currentTarget.checked ? [...form.topics, t.id] : form.topics.filter((x) => x !== t.id) })} /> ${t.name}</label>`)}`}
          <${Field} label="Double opt-in">
            <select id="form-double-opt-in" value=${form.doubleOptIn === null ? "" : String(form.doubleOptIn)}
              onChange=${(e) => setForm({ ...form, doubleOptIn: e.currentTarget.value === "" ? null : e.currentTarget.value === "true" })}>
              <option value="">The project's setting</option><option value="true">Confirm by mail</option><option value="false">Subscribe at once</option>
            </select><//>
          <${Field} label="Words agreed to" hint="Shown above the button and kept as proof of consent."><textarea name="consentText" maxlength="2000" value=${form.consentText} onInput=${set("consentText")}></textarea><//>
          <${Field} label="Message after sending"><input name="successMessage" maxlength="2000" value=${form.successMessage} onInput=${set("successMessage")} placeholder="Thank you. Please check your inbox." /><//>
          <${Field} label="Or send to this page" hint="An http(s) address; the message is not shown then."><input name="redirectUrl" type="url" value=${form.redirectUrl} onInput=${set("redirectUrl")} /><//>
          <${Field} label="Sites that may embed it" hint="One origin a line, like https://www.example.com."><textarea id="form-origins" value=${origins} onInput=${(e) => setOrigins(e.currentTarget.value)}></textarea><//>
          <${ErrorBox} error=${save.error} />
          <div class="buttons"><button type="submit" disabled=${save.busy}>Save form</button>
            <button type="button" class="secondary" onClick=${onCancel}>Cancel</button></div>
        </form>
        <${Preview} form=${form} topics=${topics} />
      </div>
    </section>`;
}

function Share({ form }) {
  return html`
    <div class="stack" data-form-share=${form.name}>
      <p>Hosted page: <a href=${form.url} target="_blank" rel="noopener">${form.url}</a> <${Copy} text=${form.url} label="Copy link" /></p>
      <p>Embed it in another site (allowed above) with:</p>
      <pre class="code"><code>${form.embed}</code></pre>
      <div class="buttons"><${Copy} text=${form.embed} label="Copy the embed snippet" /></div>
    </div>`;
}

export function Forms() {
  const loaded = useLoad(() => Promise.all([get("/forms"), get("/topics")]), []);
  const [editing, setEditing] = useState(null);
  const [shown, setShown] = useState(null);
  const remove = useAction(async (form) => {
    await del(`/forms/${encodeURIComponent(form.id)}`);
    loaded.setData([loaded.data[0].filter((f) => f.id !== form.id), loaded.data[1]]);
  }, "Form deleted");
  return html`
    <${Page} title="Forms" actions=${html`<button type="button" id="new-form" onClick=${() => setEditing({})}>New form</button>`}>
      <p class="meta">Signup forms make contacts from a hosted page or a form embedded in your site. They check for scripts without any
        third party (a proof of work the browser solves, a hidden field, a minimum fill time, limits per address) and record each
        subscriber's consent.</p>
      <${ErrorBox} error=${remove.error} />
      <${Loaded} result=${loaded}>${([forms, topics]) => html`
        ${editing && html`<${Builder} key=${editing.id || "new"} initial=${editing} topics=${topics}
          onCancel=${() => setEditing(null)}
          onSaved=${(saved) => {
            const rest = forms.filter((f) => f.id !== saved.id);
            loaded.setData([[...rest, saved], topics]);
            setEditing(null);
            setShown(saved.id);
          }} />`}
        ${forms.length === 0
          ? html`<${Empty}>No forms yet. Make one to collect subscribers from a page of yours.<//>`
          : html`<${Table} label="Forms" id="forms-table">
              <thead><tr><th scope="col">Form</th><th scope="col" class="num">Submissions</th><th scope="col">Double opt-in</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
              <tbody>${forms.map((f) => [html`<tr key=${f.id} data-form=${f.name}>
                <th scope="row">${f.name}</th>
                <td class="num">${f.submissions}</td>
                <td>${f.doubleOptIn === null ? "project's setting" : f.doubleOptIn ? "yes" : "no"}</td>
                <td><div class="buttons">
                  <button type="button" class="secondary small" aria-expanded=${shown === f.id} onClick=${() => setShown(shown === f.id ? null : f.id)}>Share</button>
                  <button type="button" class="secondary small" onClick=${() => setEditing(f)}>Edit</button>
                  <button type="button" class="danger small" aria-label=${`Delete the form ${f.name}`}
                    onClick=${() => window.confirm(`Delete the form ${f.name}? Its page stops working; the contacts it made stay.`) && remove.run(f)}>Delete</button>
                </div></td>
              </tr>`, shown === f.id && html`<tr key=${`${f.id}-share`} class="share-row"><td colspan="4"><${Share} form=${f} /></td></tr>`])}</tbody>
            <//>`}`}<//>
    <//>`;
}
