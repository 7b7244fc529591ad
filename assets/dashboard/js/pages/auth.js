// Sign in and sign up, with a button for each single sign-on provider the server has; a
// failed single sign-on comes back here with `?error=<code>`, worded here (only known codes:
// the address is anyone's to write).

import { html } from "../../vendor/preact-htm.js";
import { post } from "../api.js";
import { Field, Form, useAction } from "../ui.js";

const SSO_ERRORS = {
  unreachable: "The sign-in provider cannot be reached now; try again later.",
  refused: "The sign-in provider did not sign you in.",
  incomplete: "The sign-in came back incomplete; start again.",
  expired: "This sign-in has expired or was used already; start again.",
  failed: "The sign-in provider's answer could not be checked; start again.",
  unverified: "The sign-in provider did not vouch for your email address, so no account could be found or made for you (on GitHub, verify your primary address first).",
  closed: "No account here has that verified address, and sign-ups are closed on this server.",
  busy: "Too many sign-ins are under way; try again in a few minutes.",
  browser: "This sign-in was not started in this browser (or its cookie is gone), so it was not used; start again here.",
};

export function Auth({ mode, signups, providers = [], onSignedIn }) {
  const signup = mode === "signup" && signups;
  const action = useAction(async (data) => {
    const body = { email: data.get("email"), password: data.get("password") };
    onSignedIn(await post(signup ? "/auth/signup" : "/auth/login", body));
  });
  document.title = `${signup ? "Create your account" : "Sign in"} · Tidings`;
  const ssoError = SSO_ERRORS[new URLSearchParams(location.search).get("error")];
  return html`
    <section class="card narrow">
      <h1>${signup ? "Create your account" : "Sign in"}</h1>
      ${ssoError && html`<div class="error" role="alert" id="sso-error">${ssoError}</div>`}
      ${providers.length > 0 && html`<div class="buttons sso">${providers.map((p) => html`
        <a class="button-link" key=${p.id} href=${p.url}>Sign in with ${p.name}</a>`)}</div>
        <p class="meta">or with your email and password:</p>`}
      <${Form} id="auth-form" action=${action} submit=${signup ? "Create account" : "Sign in"}>
        <${Field} label="Email"><input id="email" name="email" type="email" autocomplete="email" required /><//>
        <${Field} label="Password" hint=${signup ? "At least 8 characters." : null}>
          <input id="password" name="password" type="password" required minlength=${signup ? 8 : undefined}
            autocomplete=${signup ? "new-password" : "current-password"} />
        <//>
      <//>
      ${!signup && html`<p class="meta"><a href="/forgot-password">Forgot your password?</a></p>`}
      ${signup
        ? html`<p class="meta">Have an account? <a href="/login">Sign in</a></p>`
        : signups
          ? html`<p class="meta">New here? <a href="/signup">Create an account</a></p>`
          : html`<p class="meta">Sign-ups are closed on this server; ask its owner for an invitation.</p>`}
    </section>`;
}
