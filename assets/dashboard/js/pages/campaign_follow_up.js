// Following a sent campaign up (issue 34, item 2): a new campaign with the same content, and a
// new subject if wanted, to the recipients no person opened it for (or who did not click),
// after a delay or as a draft to edit first. How many that is so far is counted as the choice
// changes; a privacy proxy's fetch on delivery is no open.

import { html, useState } from "../../vendor/preact-htm.js";
import { post } from "../api.js";
import { navigate } from "../router.js";
import { ErrorBox, Field, date, useAction, useLoad } from "../ui.js";

export function FollowUpPanel({ campaign, base }) {
  const id = encodeURIComponent(campaign.id);
  const [audience, setAudience] = useState("notOpened");
  const [subject, setSubject] = useState("");
  const [when, setWhen] = useState("later");
  const [delay, setDelay] = useState(72);
  const tree = { logic: "AND", groups: [{ filters: [{ field: `campaign.${campaign.id}`, operator: audience }] }] };
  const missed = useLoad(() => post("/segments/count", { condition: tree }), [audience]);
  const make = useAction(async () => {
    const body = { audience };
    if (subject.trim()) body.subject = subject.trim();
    if (when === "later") body.delayHours = Number(delay);
    const made = await post(`/campaigns/${id}/follow-up`, body);
    navigate(`${base}/campaigns/${encodeURIComponent(made.id)}`);
    return made;
  }, (c) => (c.status === "SCHEDULED" ? `${c.name} scheduled for ${date(c.scheduledFor)}` : `Created ${c.name}`));
  const count = missed.data ? missed.data.count : "…";
  return html`
    <section class="card stack" aria-labelledby="follow-up-heading" id="follow-up">
      <h2 id="follow-up-heading">Follow up</h2>
      <p class="meta">Send this campaign again to those who missed it. Only a person's open counts: Apple Mail's
        privacy proxy fetches every image on delivery, and that is no open. A click counts as an open.</p>
      <form class="stack" onSubmit=${(e) => { e.preventDefault(); make.run(); }}>
        <${Field} label="To the recipients who">
          <select id="follow-up-audience" value=${audience} onChange=${(e) => setAudience(e.currentTarget.value)}>
            <option value="notOpened">did not open it</option>
            <option value="notClicked">did not click in it</option>
          </select><//>
        <p id="follow-up-count" role="status">${count} so far</p>
        <${Field} label="New subject" hint="Left empty, the same subject">
          <input id="follow-up-subject" maxlength="998" value=${subject} placeholder=${campaign.subject}
            onInput=${(e) => setSubject(e.currentTarget.value)} /><//>
        <fieldset class="field">
          <legend class="label">When</legend>
          <label class="check"><input type="radio" name="follow-up-when" checked=${when === "later"} onChange=${() => setWhen("later")} />
            <span>Send</span>
            <input type="number" id="follow-up-delay" min="0" max="720" step="1" aria-label="Hours after this campaign was sent"
              value=${delay} disabled=${when !== "later"} onInput=${(e) => setDelay(e.currentTarget.value)} />
            <span>hours after this campaign was sent</span></label>
          <label class="check"><input type="radio" name="follow-up-when" checked=${when === "draft"} onChange=${() => setWhen("draft")} />
            <span>Save as a draft to edit first</span></label>
        </fieldset>
        <div class="buttons"><button type="submit" id="follow-up-create" disabled=${make.busy}>Create the follow-up</button></div>
      </form>
      <${ErrorBox} error=${make.error || missed.error} />
    </section>`;
}
