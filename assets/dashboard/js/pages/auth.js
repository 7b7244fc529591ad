// Sign in and sign up.

import { html } from "../../vendor/preact-htm.js";
import { post } from "../api.js";
import { Field, Form, useAction } from "../ui.js";

export function Auth({ mode, signups, onSignedIn }) {
  const signup = mode === "signup" && signups;
  const action = useAction(async (data) => {
    const body = { email: data.get("email"), password: data.get("password") };
    onSignedIn(await post(signup ? "/auth/signup" : "/auth/login", body));
  });
  document.title = `${signup ? "Create your account" : "Sign in"} · Tidings`;
  return html`
    <section class="card narrow">
      <h1>${signup ? "Create your account" : "Sign in"}</h1>
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
          : html`<p class="meta">Sign-ups are closed on this server; ask its administrator for an account.</p>`}
    </section>`;
}
