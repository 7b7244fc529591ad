// Tidings signup forms: solves the form's proof-of-work challenge (ALTCHA PoW v2, SHA-256) in
// the background while the visitor types, then sends the form. The hosted page posts it as a
// normal form; an embedded form (data-tidings-embed) posts JSON and shows the answer in place.
(function () {
  "use strict";
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const unhex = (text) => new Uint8Array((text.match(/../g) || []).map((h) => parseInt(h, 16)));

  async function solve(challenge) {
    const p = challenge.parameters;
    const salt = unhex(p.salt);
    const nonce = unhex(p.nonce);
    const input = new Uint8Array(salt.length + nonce.length + 4);
    input.set(salt);
    input.set(nonce, salt.length);
    const counterAt = salt.length + nonce.length;
    const view = new DataView(input.buffer);
    const started = Date.now();
    for (let counter = 0; counter < 0xffffffff; counter++) {
      view.setUint32(counterAt, counter);
      let key = new Uint8Array(await crypto.subtle.digest("SHA-256", input));
      for (let i = 1; i < (p.cost || 1); i++) key = new Uint8Array(await crypto.subtle.digest("SHA-256", key));
      const derived = hex(key.slice(0, p.keyLength));
      if (derived.startsWith(p.keyPrefix)) {
        return btoa(JSON.stringify({ challenge, solution: { counter, derivedKey: derived, time: Date.now() - started } }));
      }
    }
    throw new Error("no solution");
  }

  // The page's words (data-tidings-texts, in the reader's language), English when absent.
  const ENGLISH = {
    sending: "Sending…",
    failed: "The form could not be sent. Please try again.",
    unavailable: "This form cannot be sent from here right now. Please try again later.",
  };
  const textsOf = (form) => {
    try {
      return Object.assign({}, ENGLISH, JSON.parse(form.dataset.tidingsTexts || "{}"));
    } catch (e) {
      return ENGLISH;
    }
  };

  function attach(form) {
    const texts = textsOf(form);
    const status = form.querySelector("[data-tidings-status]");
    const proof = form.querySelector("input[name=altcha]");
    // The browser's time zone, which a new contact takes (marketing mail sent "at 09:00" then
    // arrives at 09:00 where they are).
    let zone = form.querySelector("input[name=_tz]");
    if (!zone) {
      zone = Object.assign(document.createElement("input"), { type: "hidden", name: "_tz" });
      form.append(zone);
    }
    try { zone.value = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { zone.value = ""; }
    const say = (text, bad) => {
      if (!status) return;
      status.textContent = text;
      status.dataset.state = bad ? "error" : "ok";
    };
    const solved = fetch(form.dataset.tidingsChallenge, { credentials: "omit" })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error("challenge"))))
      .then(solve)
      .then((payload) => (proof.value = payload));
    solved.catch(() => say(texts.unavailable, true));
    let sending = false;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (sending) return;
      sending = true;
      const button = form.querySelector("button[type=submit]");
      if (button) button.disabled = true;
      say(texts.sending);
      try {
        await solved;
        if (form.dataset.tidingsEmbed === undefined) {
          HTMLFormElement.prototype.submit.call(form);
          return;
        }
        const data = {};
        const topics = [];
        for (const [name, value] of new FormData(form)) {
          if (name === "topic") topics.push(value);
          else data[name] = value;
        }
        const res = await fetch(form.action, {
          method: "POST",
          credentials: "omit",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ ...data, topics }),
        });
        const answer = await res.json().catch(() => null);
        if (!res.ok) throw new Error((answer && answer.error && answer.error.message) || texts.failed);
        if (answer.redirect) {
          window.location.href = answer.redirect;
          return;
        }
        form.replaceChildren(Object.assign(document.createElement("p"), { textContent: answer.message }));
        form.dataset.tidingsDone = "";
      } catch (e) {
        say(e.message || texts.failed, true);
        if (button) button.disabled = false;
        sending = false;
      }
    });
  }

  // An embedded form: built from its description into the page's placeholder.
  function build(spec, holder) {
    const el = (tag, props, ...children) => {
      const node = Object.assign(document.createElement(tag), props || {});
      node.append(...children.filter(Boolean));
      return node;
    };
    const form = el("form", { method: "post", action: spec.submit, className: "tidings-form" });
    form.dataset.tidingsChallenge = spec.challenge;
    form.dataset.tidingsEmbed = "";
    form.dataset.tidingsTexts = JSON.stringify(spec.texts || {});
    form.lang = spec.lang || "en";
    const t = Object.assign({ email: "Email", submit: "Subscribe", trap: "Leave this empty" }, spec.texts);
    const field = (label, input) => el("label", { className: "tidings-field" }, el("span", { textContent: label }), input);
    form.append(field(t.email, el("input", { type: "email", name: "email", required: true, autocomplete: "email" })));
    for (const f of spec.fields) {
      const type = { number: "number", boolean: "checkbox", date: "date" }[f.type] || "text";
      form.append(field(f.label, el("input", { type, name: f.key, required: f.required && type !== "checkbox" })));
    }
    for (const t of spec.topics) {
      form.append(el("label", { className: "tidings-topic" }, el("input", { type: "checkbox", name: "topic", value: t.id }), " " + t.name));
    }
    const trap = el("input", { type: "text", name: "_hp", tabIndex: -1, autocomplete: "off" });
    form.append(el("div", { style: "position:absolute;left:-9999px", ariaHidden: "true" }, el("label", { textContent: t.trap }, trap)));
    form.append(el("input", { type: "hidden", name: "altcha" }));
    if (spec.consentText) form.append(el("p", { className: "tidings-consent", textContent: spec.consentText }));
    const status = el("p", { role: "status" });
    status.dataset.tidingsStatus = "";
    form.append(status, el("button", { type: "submit", textContent: t.submit }));
    holder.replaceChildren(form);
    attach(form);
  }

  window.TidingsForms = { attach, build };
  for (const form of document.querySelectorAll("form[data-tidings-challenge]")) attach(form);
})();
