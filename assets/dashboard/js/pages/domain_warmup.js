// A sender domain's warm-up (issue 34, item 4): a new domain sends a little on its first day
// and more each day, from a start to a target volume over some days, so mailbox providers learn
// to trust it. Past the day's volume its marketing mail waits for the next day; transactional
// mail goes, and counts. The card shows today's volume, what went, and each day of the plan.

import { html, useState } from "../../vendor/preact-htm.js";
import { api } from "../api.js";
import { ActionButton, ErrorBox, Field, Table, useAction, useLoad } from "../ui.js";

/** The plan, or `{none: true}` when the domain has none (`Loaded` reads null as loading). */
async function current(id) {
  try {
    return await api("GET", `/domains/${id}/warmup`);
  } catch (e) {
    if (e.status === 404) return { none: true };
    throw e;
  }
}

export function WarmupPanel({ domain }) {
  const id = encodeURIComponent(domain.id);
  const plan = useLoad(() => current(id), [domain.id]);
  const [open, setOpen] = useState(false);
  const p = plan.data;
  const [start, setStart] = useState(50);
  const [target, setTarget] = useState(10000);
  const [days, setDays] = useState(30);
  const save = useAction(async () => {
    const saved = await api("PUT", `/domains/${id}/warmup`, {
      startDaily: Number(start), targetDaily: Number(target), days: Number(days),
    });
    plan.setData(saved);
    setOpen(false);
    return saved;
  }, (s) => `${domain.domain} warms up over ${s.days} days`);
  const remove = useAction(async () => {
    await api("DELETE", `/domains/${id}/warmup`);
    plan.setData({ none: true });
  }, `${domain.domain} sends at any volume again`);
  if (!p) return html`<${ErrorBox} error=${plan.error} retry=${plan.reload} />`;
  const heading = `warmup-${domain.id}`;
  return html`
    <section class="stack warmup" aria-labelledby=${heading} data-warmup=${domain.domain}>
      <h3 id=${heading}>Warm-up</h3>
      ${p.none && !open && html`
        <p class="meta">A new domain (or a new relay) that sends a lot at once looks like a spammer to Gmail and
          Microsoft. A warm-up sends a little on the first day and more each day; past the day's volume, marketing
          mail waits for the next day.</p>
        <div class="buttons"><button type="button" class="secondary" data-action="warm-up" onClick=${() => setOpen(true)}>Warm up ${domain.domain}</button></div>`}
      ${p.none && open && html`
        <form class="stack" onSubmit=${(e) => { e.preventDefault(); save.run(); }}>
          <div class="grid">
            <${Field} label="First day's volume"><input type="number" name="startDaily" min="1" value=${start} onInput=${(e) => setStart(e.currentTarget.value)} /><//>
            <${Field} label="Last day's volume"><input type="number" name="targetDaily" min="1" value=${target} onInput=${(e) => setTarget(e.currentTarget.value)} /><//>
            <${Field} label="Days" hint="2 to 90; after them, no cap"><input type="number" name="days" min="2" max="90" value=${days} onInput=${(e) => setDays(e.currentTarget.value)} /><//>
          </div>
          <p class="meta">The volume grows by the same factor each day, starting today in the project's time zone.</p>
          <div class="buttons"><button type="submit" disabled=${save.busy}>Start the warm-up</button></div>
        </form>`}
      ${!p.none && html`
        <p role="status" data-today=${p.today}>${p.allowedToday == null
          ? `The plan ${p.today < p.startsOn ? `starts ${p.startsOn}` : "is over: no cap"}.`
          : `Today (${p.today}): ${p.sentToday} of ${p.allowedToday} sent.`}</p>
        <${Table} label=${`Warm-up of ${domain.domain}`} class="table cards warmup-days">
          <thead><tr><th scope="col">Day</th><th scope="col" class="num">Volume</th><th scope="col" class="num">Sent</th></tr></thead>
          <tbody>${p.schedule.map((d) => html`<tr key=${d.date} data-date=${d.date} aria-current=${d.date === p.today ? "date" : undefined}>
            <td data-label="Day">${d.date}</td><td class="num" data-label="Volume">${d.volume}</td><td class="num" data-label="Sent">${d.sent}</td></tr>`)}</tbody>
        <//>
        <div class="buttons"><${ActionButton} action=${remove} confirm=${`End the warm-up of ${domain.domain}? Its mail goes at any volume from now.`}>End the warm-up<//></div>`}
      <${ErrorBox} error=${save.error || remove.error} />
    </section>`;
}
