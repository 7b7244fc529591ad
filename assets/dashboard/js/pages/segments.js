// Segments: the list with member counts; a segment's page with its condition builder and the
// live count, its members (pages), static members added and removed by email, and compute or
// refresh.

import { html, useState } from "../../vendor/preact-htm.js";
import { del, get, patch, post } from "../api.js";
import { navigate } from "../router.js";
import { ConditionBuilder, emptyCondition } from "../conditions.js";
import {
  ActionButton, Badge, Empty, ErrorBox, Field, Form, Loaded, Page, PagePager, date, toast, useAction,
  useDebouncedLoad, useLoad, Table } from "../ui.js";

export function Segments({ project }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const list = useLoad(() => get("/segments"), []);
  return html`
    <${Page} title="Segments" actions=${html`<a class="button-link primary" href=${`${base}/segments/new`}>New segment</a>`}>
      <${Loaded} result=${list}>${(segments) => segments.length === 0
        ? html`<${Empty}>No segments yet. A dynamic segment is every contact matching a condition; a static one is a list you keep.<//>`
        : html`<${Table} label="Segments" id="segments-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col" class="num">Members</th><th scope="col">Tracked</th><th scope="col">Counted</th></tr></thead>
            <tbody>${segments.map((s) => html`
              <tr key=${s.id} data-segment=${s.name}>
                <td><a href=${`${base}/segments/${encodeURIComponent(s.id)}`}>${s.name}</a>${s.description && html`<div class="meta">${s.description}</div>`}</td>
                <td><${Badge}>${s.type.toLowerCase()}<//></td>
                <td class="num" data-count>${s.memberCount}</td>
                <td>${s.trackMembership ? html`<${Badge} kind="ok">entry/exit events<//>` : "—"}</td>
                <td>${date(s.countedAt || s.updatedAt)}</td>
              </tr>`)}</tbody>
          <//>`}<//>
    <//>`;
}

/** What the builder needs to offer: the field catalogue, event names and other segments. */
function useVocabulary() {
  return useLoad(async () => {
    const [fields, events, segments] = await Promise.all([get("/contacts/fields"), get("/events/names"), get("/segments")]);
    return { catalogue: fields.fields, events, segments };
  }, []);
}

/** The live count of a condition as it is being built. */
function LiveCount({ condition }) {
  const [state, setState] = useState({ count: null, error: null, busy: false });
  useDebouncedLoad(async () => {
    setState((s) => ({ ...s, busy: true }));
    return (await post("/segments/count", { condition })).count;
  }, (count, error) => setState(error ? { count: null, error, busy: false } : { count, error: null, busy: false }),
  [JSON.stringify(condition)], 400);
  return html`
    <div class="count-live" aria-live="polite">
      ${state.error
        ? html`<${ErrorBox} error=${state.error} />`
        : html`<p>Matches <strong id="live-count">${state.count === null ? "…" : state.count}</strong> contacts now${state.busy ? " (counting…)" : ""}.</p>`}
    </div>`;
}

function SegmentForm({ segment, isNew, base, vocabulary, onSaved }) {
  const [draft, setDraft] = useState({
    name: segment.name || "", description: segment.description || "", type: segment.type || "DYNAMIC",
    trackMembership: !!segment.trackMembership, condition: segment.condition || emptyCondition(),
  });
  const dynamic = draft.type === "DYNAMIC";
  const save = useAction(async () => {
    const body = { name: draft.name, description: draft.description || null, trackMembership: draft.trackMembership };
    if (dynamic) body.condition = draft.condition;
    let saved;
    if (isNew) {
      saved = await post("/segments", { ...body, type: draft.type, description: draft.description || undefined });
      navigate(`${base}/segments/${encodeURIComponent(saved.id)}`, { replace: true });
    } else {
      saved = await patch(`/segments/${encodeURIComponent(segment.id)}`, body);
      onSaved(saved);
    }
    return saved;
  }, (s) => `Segment saved: ${s.memberCount} members`);
  const others = vocabulary.segments.filter((s) => s.id !== segment.id);
  return html`
    <${Form} class="card stack" id="segment-form" action=${save} submit=${isNew ? "Create segment" : "Save segment"}>
      <div class="grid2">
        <${Field} label="Name"><input required maxlength="100" value=${draft.name} onInput=${(e) => setDraft({ ...draft, name: e.currentTarget.value })} /><//>
        ${isNew
          ? html`<${Field} label="Type">
              <select value=${draft.type} onChange=${(e) => setDraft({ ...draft, type: e.currentTarget.value })}>
                <option value="DYNAMIC">Dynamic: contacts matching a condition</option>
                <option value="STATIC">Static: a list of contacts you keep</option>
              </select><//>`
          : html`<div class="field"><span class="label">Type</span><span>${draft.type.toLowerCase()}</span></div>`}
      </div>
      <${Field} label="Description"><input maxlength="500" value=${draft.description} onInput=${(e) => setDraft({ ...draft, description: e.currentTarget.value })} /><//>
      <label class="field check"><input type="checkbox" checked=${draft.trackMembership} onChange=${(e) => setDraft({ ...draft, trackMembership: e.currentTarget.checked })} />
        Track membership (emit <code>segment.${segment.slug || "<slug>"}.entry</code> and <code>.exit</code> events)</label>
      ${dynamic && html`
        <fieldset>
          <legend>Condition</legend>
          <${ConditionBuilder} value=${draft.condition} catalogue=${vocabulary.catalogue} events=${vocabulary.events} segments=${others}
            onChange=${(condition) => setDraft({ ...draft, condition })} />
          <${LiveCount} condition=${draft.condition} />
        </fieldset>`}
    <//>`;
}

function Members({ segment, onChanged }) {
  const [page, setPage] = useState(1);
  const id = encodeURIComponent(segment.id);
  const list = useLoad(() => get(`/segments/${id}/contacts`, { page, pageSize: 25 }), [page, segment.memberCount, segment.updatedAt]);
  const add = useAction(async (data, form) => {
    const emails = String(data.get("emails")).split(/[\s,;]+/).filter(Boolean);
    const result = await post(`/segments/${id}/members`, { emails, createMissing: data.get("createMissing") === "on" });
    form.reset();
    onChanged(result.segment);
    return result;
  }, (r) => `${r.added} added${r.alreadyMembers ? `, ${r.alreadyMembers} already members` : ""}${r.notFound && r.notFound.length ? `, ${r.notFound.length} not contacts` : ""}`);
  const remove = useAction(async (emails) => {
    const result = await del(`/segments/${id}/members`, { emails });
    onChanged(result.segment);
    return result;
  }, (r) => `${r.removed} removed`);
  return html`
    <section class="card" aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      ${segment.type === "STATIC" && html`
        <${Form} action=${add} submit="Add members">
          <${Field} label="Emails to add" hint="One per line, or separated by commas."><textarea name="emails" rows="3" required></textarea><//>
          <label class="field check"><input type="checkbox" name="createMissing" /> Create contacts for addresses that are not contacts yet</label>
        <//>
        <${ErrorBox} error=${remove.error} />`}
      <${Loaded} result=${list}>${(p) => p.data.length === 0 ? html`<p class="meta">No members.</p>` : html`
        <p class="meta">${p.total} member${p.total === 1 ? "" : "s"}${segment.type === "DYNAMIC" ? ", evaluated now" : ""}.</p>
        <${Table} label="Members" id="members-table">
          <thead><tr><th scope="col">Email</th><th scope="col">Subscribed</th>${segment.type === "STATIC" && html`<th scope="col"><span class="visually-hidden">Actions</span></th>`}</tr></thead>
          <tbody>${p.data.map((c) => html`<tr key=${c.id}><td><a href=${`/app/p/${encodeURIComponent(segment.projectId)}/contacts/${encodeURIComponent(c.id)}`}>${c.email}</a></td>
            <td>${c.subscribed ? "yes" : "no"}</td>
            ${segment.type === "STATIC" && html`<td><button type="button" class="danger small" aria-label=${`Remove ${c.email}`} onClick=${() => remove.run([c.email])}>Remove</button></td>`}</tr>`)}</tbody>
        <//>
        <${PagePager} page=${p.page} totalPages=${p.totalPages} onPage=${setPage} label="Members" />`}<//>
    </section>`;
}

export function SegmentPage({ project, params }) {
  const base = `/app/p/${encodeURIComponent(project.id)}`;
  const isNew = params.id === "new";
  const segment = useLoad(() => (isNew ? Promise.resolve({}) : get(`/segments/${encodeURIComponent(params.id)}`)), [params.id]);
  const vocabulary = useVocabulary();
  const id = encodeURIComponent(params.id);
  const refresh = useAction(async () => {
    const s = await post(`/segments/${id}/refresh`);
    segment.setData(s);
    return s;
  }, (s) => `Counted: ${s.memberCount} members`);
  const compute = useAction(async () => {
    const s = await post(`/segments/${id}/compute`);
    segment.setData(s.segment || s);
    return s;
  }, "Membership computed; entry and exit events emitted");
  const remove = useAction(async () => {
    await del(`/segments/${id}`);
    toast("Segment deleted");
    navigate(`${base}/segments`);
  });
  const s = segment.data;
  const tracked = s && s.type === "DYNAMIC" && s.trackMembership;
  return html`
    <${Page} title=${isNew ? "New segment" : s ? s.name : "Segment"} back=${{ href: `${base}/segments`, label: "Segments" }}
      actions=${!isNew && s && html`
        <span class="meta">${s.memberCount} members · counted ${date(s.countedAt)}</span>
        <${ActionButton} action=${refresh}>Refresh count<//>
        ${tracked && html`<${ActionButton} action=${compute}>Compute membership<//>`}
        <${ActionButton} class="danger" action=${remove} confirm=${`Delete the segment ${s.name}?`}>Delete<//>`}>
      <${ErrorBox} error=${refresh.error || compute.error || remove.error} />
      ${s && s.computation && html`<p class="meta">Last computation ${date(s.computation.computedAt)}: ${s.computation.entered ?? 0} entered, ${s.computation.exited ?? 0} exited${s.computation.running ? " (running)" : ""}.</p>`}
      <${Loaded} result=${segment}>${(seg) => html`<${Loaded} result=${vocabulary}>${(v) => html`
        <${SegmentForm} key=${seg.updatedAt || "new"} segment=${seg} isNew=${isNew} base=${base} vocabulary=${v} onSaved=${segment.setData} />
        ${!isNew && html`<${Members} segment=${seg} onChanged=${(next) => next && segment.setData(next)} />`}`}<//>`}<//>
    <//>`;
}
