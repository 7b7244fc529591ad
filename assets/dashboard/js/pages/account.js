// The pages a mailed link opens (verify an address, reset a password, accept an invitation),
// the page that asks for a reset link, and the signed-in user's account card.

import { html, useEffect, useState } from "../../vendor/preact-htm.js";
import { api, get, post } from "../api.js";
import { navigate } from "../router.js";
import { Badge, ErrorBox, Field, Form, Loading, toast, useAction } from "../ui.js";

function titled(title) {
  document.title = `${title} · Tidings`;
}

/** Asks for a reset link; says the same whether or not the account exists. */
export function ForgotPassword() {
  const [sent, setSent] = useState(null);
  const ask = useAction(async (data) => setSent((await post("/auth/request-password-reset", { email: data.get("email") })).message));
  titled("Reset your password");
  return html`
    <section class="card narrow">
      <h1>Reset your password</h1>
      ${sent
        ? html`<p id="reset-requested" role="status">${sent}. The link works for one hour.</p>`
        : html`<${Form} id="forgot-form" action=${ask} submit="Send me a link">
            <${Field} label="Email"><input id="email" name="email" type="email" autocomplete="email" required /><//>
          <//>`}
      <p class="meta"><a href="/login">Back to sign in</a></p>
    </section>`;
}

/** Chooses a new password with the token of a reset link, and signs in. */
export function ResetPassword({ token, onSignedIn }) {
  const reset = useAction(async (data) => {
    const user = await post("/auth/reset-password", { token, password: data.get("password") });
    toast("Password changed: you are signed in, and signed out everywhere else");
    onSignedIn(user);
  });
  titled("Choose a new password");
  return html`
    <section class="card narrow">
      <h1>Choose a new password</h1>
      <${Form} id="reset-form" action=${reset} submit="Set password">
        <${Field} label="New password" hint="At least 8 characters.">
          <input id="password" name="password" type="password" required minlength="8" autocomplete="new-password" />
        <//>
      <//>
      <p class="meta"><a href="/forgot-password">Ask for a new link</a></p>
    </section>`;
}

/** Verifies the address a link was mailed to, as soon as the page opens. */
export function VerifyEmail({ token, user }) {
  const [state, setState] = useState({ done: false, error: null });
  useEffect(() => {
    post("/auth/verify-email", { token })
      .then(() => setState({ done: true, error: null }))
      .catch((error) => setState({ done: false, error }));
  }, [token]);
  titled("Confirm your email address");
  return html`
    <section class="card narrow">
      <h1>Confirm your email address</h1>
      ${!state.done && !state.error && html`<${Loading} />`}
      ${state.done && html`<p id="verified" role="status">Your email address is confirmed.</p>`}
      <${ErrorBox} error=${state.error} />
      <p class="meta"><a href=${user ? "/app/projects" : "/login"}>${user ? "Go to your projects" : "Sign in"}</a></p>
    </section>`;
}

/** What an invitation offers; joins as the signed-in user, or creates the account. */
export function Invitation({ token, user, onSignedIn }) {
  const [offer, setOffer] = useState({ data: null, error: null });
  useEffect(() => {
    get(`/auth/invitation?token=${encodeURIComponent(token)}`)
      .then((data) => setOffer({ data, error: null }))
      .catch((error) => setOffer({ data: null, error }));
  }, [token]);
  const accept = useAction(async (data) => {
    const body = { token };
    if (data && data.get("password")) body.password = data.get("password");
    const joined = await post("/auth/accept-invitation", body);
    toast(`You joined ${joined.project.name}`);
    if (user) navigate(`/app/p/${encodeURIComponent(joined.project.id)}/contacts`);
    else onSignedIn(joined.user, `/app/p/${encodeURIComponent(joined.project.id)}/contacts`);
  });
  titled("Invitation");
  const o = offer.data;
  const mine = o && user && user.email === o.email;
  return html`
    <section class="card narrow">
      <h1>${o ? `Join ${o.project.name}` : "Invitation"}</h1>
      ${!o && !offer.error && html`<${Loading} />`}
      <${ErrorBox} error=${offer.error || accept.error} />
      ${o && html`<p id="offer">You are invited to <strong>${o.project.name}</strong> as <${Badge}>${o.role.toLowerCase()}<//>, with the address <strong>${o.email}</strong>.</p>`}
      ${o && mine && html`<button type="button" id="join" disabled=${accept.busy} onClick=${() => accept.run(null)}>Join ${o.project.name}</button>`}
      ${o && user && !mine && html`<p class="meta">You are signed in as ${user.email}. Sign out, then open the link again to join as ${o.email}.</p>`}
      ${o && !user && o.hasAccount && html`<p class="meta">An account uses ${o.email}: <a href="/login">sign in</a> with it, then open the link again.</p>`}
      ${o && !user && !o.hasAccount && html`
        <${Form} id="invitation-form" action=${accept} submit="Create account and join">
          <${Field} label="Choose a password" hint="At least 8 characters.">
            <input id="password" name="password" type="password" required minlength="8" autocomplete="new-password" />
          <//>
        <//>`}
    </section>`;
}

/** Pages a signed-out or signed-in visitor may open from a link, by path. */
export const LINK_PAGES = {
  "/forgot-password": ForgotPassword,
  "/reset-password": ResetPassword,
  "/verify-email": VerifyEmail,
  "/invitation": Invitation,
};

/** The signed-in user's address (and its verification) and password. */
export function AccountCard({ user }) {
  const resend = useAction(async () => (await post("/auth/request-verification", {})).message, (m) => m);
  const change = useAction(async (data, form) => {
    await api("POST", "/users/@me/password", { currentPassword: data.get("current"), newPassword: data.get("new") });
    form.reset();
  }, "Password changed; every other session was signed out");
  return html`
    <section class="card" aria-labelledby="account-heading" id="account">
      <h2 id="account-heading">Your account</h2>
      <p>${user.email} ${user.emailVerified
        ? html`<${Badge} kind="ok">confirmed<//>`
        : html`<${Badge} kind="bad">not confirmed<//> <button type="button" class="secondary small" id="resend-verification"
            disabled=${resend.busy} onClick=${() => resend.run()}>Send a new confirmation link</button>`}</p>
      <${ErrorBox} error=${resend.error} />
      <h3>Change your password</h3>
      <${Form} id="password-form" class="inline" action=${change} submit="Change password">
        <${Field} label="Current password"><input name="current" type="password" required autocomplete="current-password" /><//>
        <${Field} label="New password" hint="At least 8 characters."><input name="new" type="password" required minlength="8" autocomplete="new-password" /><//>
      <//>
    </section>`;
}
