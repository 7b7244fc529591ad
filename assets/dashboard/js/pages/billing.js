// The project's Stripe subscription, on Settings when the server has billing on: its status, a
// checkout to subscribe, Stripe's billing portal to manage it, and the invoices. Stripe's own
// pages do the paying; this page sends the browser there and shows what Stripe reported back.

import { html } from "../../vendor/preact-htm.js";
import { get, post } from "../api.js";
import { ActionButton, Badge, Empty, ErrorBox, Loaded, Table, date, useAction, useLoad } from "../ui.js";

const GOOD = ["active", "trialing"];
// Addresses from Stripe's answers are followed and linked only when they are web addresses.
const web = (url) => (typeof url === "string" && /^https?:\/\//i.test(url) ? url : null);
// A subscription in these states is over: the project may subscribe again.
const ENDED = ["canceled", "incomplete_expired"];

/** An amount in the currency's smallest unit, as the currency writes it. */
function money(amount, currency) {
  if (amount === null || amount === undefined || !currency) return "";
  const format = new Intl.NumberFormat(undefined, { style: "currency", currency: currency.toUpperCase() });
  return format.format(amount / 10 ** format.resolvedOptions().maximumFractionDigits);
}

/** What Stripe's checkout said on its way back (`?billing=success|cancelled`). */
function Returned({ confirmed }) {
  const back = new URLSearchParams(location.search).get("billing");
  if (back === "success") {
    return html`<p class="notice" role="status" id="billing-returned">Checkout is done. ${confirmed
      ? "Stripe has confirmed the subscription."
      : "The subscription shows here once Stripe confirms it, usually within a minute."}</p>`;
  }
  if (back === "cancelled") {
    return html`<p class="notice warn" role="status" id="billing-returned">Checkout was cancelled; nothing was charged.</p>`;
  }
  return null;
}

/** `subscription` is `null` (none yet) or `{status}`; `manage` is for owners and admins. */
export function Subscription({ project, manage, subscription }) {
  const path = `/users/@me/projects/${encodeURIComponent(project.id)}`;
  const go = (url) => {
    if (web(url)) location.assign(url);
  };
  const checkout = useAction(async () => go((await post(`${path}/checkout`, {})).url));
  const portal = useAction(async () => go((await post(`${path}/billing-portal`)).url));
  const live = subscription && !ENDED.includes(subscription.status);
  return html`
    <section class="card" aria-labelledby="subscription-heading" id="subscription">
      <h2 id="subscription-heading">Subscription</h2>
      <${Returned} confirmed=${live} />
      <p id="subscription-status">${subscription
        ? html`Stripe subscription: <${Badge} kind=${GOOD.includes(subscription.status) ? "ok" : "bad"}>${subscription.status || "unknown"}<//>`
        : "This project has no subscription yet."}</p>
      ${manage
        ? html`<div class="buttons">
            ${!live && html`<${ActionButton} class="" action=${checkout}>Subscribe with Stripe<//>`}
            ${subscription && html`<${ActionButton} action=${portal}>Manage billing<//>`}
          </div>
          <${ErrorBox} error=${checkout.error || portal.error} />
          <${Invoices} path=${path} />`
        : html`<p class="meta">Owners and admins manage the subscription and see its invoices.</p>`}
    </section>`;
}

function Invoices({ path }) {
  const invoices = useLoad(() => get(`${path}/billing-invoices`), [path]);
  return html`
    <h3>Invoices</h3>
    <${Loaded} result=${invoices}>${(list) => list.data.length === 0
      ? html`<${Empty}>No invoices yet.<//>`
      : html`<${Table} label="Invoices" id="invoices-table">
          <thead><tr><th scope="col">Invoice</th><th scope="col">Date</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Links</span></th></tr></thead>
          <tbody>${list.data.map((i) => html`<tr key=${i.id}>
            <td>${i.number || i.id}</td><td>${date(i.createdAt)}</td><td>${money(i.amountDue, i.currency)}</td>
            <td><${Badge} kind=${i.status === "paid" ? "ok" : i.status === "open" ? "warn" : "bad"}>${i.status}<//></td>
            <td>${web(i.url) && html`<a href=${i.url} rel="noopener noreferrer" target="_blank">View</a>`}
              ${web(i.pdf) && html` <a href=${i.pdf} rel="noopener noreferrer" target="_blank">PDF</a>`}</td>
          </tr>`)}</tbody>
        <//>`}<//>`;
}
