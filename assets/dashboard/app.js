// The Tidings dashboard. Plain ES module, no build step: it talks to the same JSON API as API
// users, with the session cookie. Text from the server is only ever set as textContent.

const app = document.getElementById("app");
const nav = document.getElementById("nav");

/**
 * Calls the API; resolves to the JSON body, or throws an Error with the server's message.
 * Every request that changes something is sent as JSON: the server refuses other content types
 * on cookie-authenticated requests (its CSRF rule).
 */
async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (method !== "GET") init.headers["content-type"] = "application/json";
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const error = new Error(describe(data, res.status));
    error.status = res.status;
    throw error;
  }
  return data;
}

function describe(data, status) {
  const error = data && data.error;
  if (error && Array.isArray(error.errors) && error.errors.length) {
    return error.errors.map((item) => item.message).join("; ");
  }
  if (error && typeof error.message === "string") return error.message;
  if (typeof error === "string") return error;
  return `The request failed (HTTP ${status})`;
}

/** Creates an element: h("p", {class: "meta"}, "text", child, ...). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (value === true) el.setAttribute(name, "");
    else if (value !== false && value != null) el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function show(...nodes) {
  app.replaceChildren(...nodes.filter((node) => node != null && node !== false));
}

/** Wires a form: disables it while `action` runs and shows its error. */
function form(attrs, fields, action) {
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const el = h("form", attrs, fields, error);
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = el.querySelector("button[type=submit]");
    button.disabled = true;
    error.hidden = true;
    try {
      await action(new FormData(el));
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
    } finally {
      button.disabled = false;
    }
  });
  return el;
}

let features = { signups: true };

function setNav(user) {
  if (!user) {
    nav.replaceChildren();
    return;
  }
  nav.replaceChildren(
    h("span", {}, user.email),
    h("button", { class: "secondary", type: "button", onclick: signOut }, "Sign out"),
  );
}

async function signOut() {
  await api("GET", "/auth/logout");
  history.replaceState(null, "", "/login");
  renderAuth("login");
}

function renderAuth(mode) {
  setNav(null);
  const signup = mode === "signup" && features.signups;
  const title = signup ? "Create your account" : "Sign in";
  const other = signup
    ? h("p", { class: "meta" }, "Have an account? ", h("button", { class: "link", type: "button", onclick: () => renderAuth("login") }, "Sign in"))
    : features.signups
      ? h("p", { class: "meta" }, "New here? ", h("button", { class: "link", type: "button", onclick: () => renderAuth("signup") }, "Create an account"))
      : h("p", { class: "meta" }, "Sign-ups are closed on this server; ask its administrator for an account.");
  show(
    h("section", { class: "card narrow" },
      h("h1", {}, title),
      form({ id: "auth-form" }, [
        h("label", { for: "email" }, "Email"),
        h("input", { id: "email", name: "email", type: "email", autocomplete: "email", required: true }),
        h("label", { for: "password" }, "Password"),
        h("input", {
          id: "password", name: "password", type: "password", required: true,
          minlength: signup ? "8" : false, autocomplete: signup ? "new-password" : "current-password",
        }),
        h("p", {}, h("button", { type: "submit" }, signup ? "Create account" : "Sign in")),
      ], async (data) => {
        const body = { email: data.get("email"), password: data.get("password") };
        const user = await api("POST", signup ? "/auth/signup" : "/auth/login", body);
        history.replaceState(null, "", "/app/projects");
        await renderProjects(user);
      }),
      other,
    ),
  );
}

function keyNotice(project) {
  return h("div", { class: "notice", role: "status" },
    h("strong", {}, `Secret key for ${project.name}`),
    h("p", {}, h("code", { class: "key" }, project.secretKey)),
    h("p", { class: "meta" }, "Copy it now: it is shown only once and Tidings keeps only a digest of it."),
  );
}

function projectCard(project, onChange) {
  const manage = project.role === "OWNER" || project.role === "ADMIN";
  return h("article", { class: "card", "data-project": project.id },
    h("h2", {}, project.name, " ", h("span", { class: "badge" }, project.role.toLowerCase()),
      project.disabled ? h("span", { class: "badge" }, "disabled") : null),
    h("dl", {},
      h("dt", {}, "Project id"), h("dd", {}, h("code", { class: "key" }, project.id)),
      h("dt", {}, "Public key"), h("dd", {}, h("code", { class: "key" }, project.publicKey || "")),
      h("dt", {}, "Secret key"), h("dd", { class: "meta" }, "sk_… (shown once, when made)"),
      h("dt", {}, "Created"), h("dd", {}, new Date(project.createdAt).toLocaleString()),
    ),
    manage
      ? h("button", {
        class: "secondary", type: "button",
        onclick: async (event) => {
          if (!confirm(`Replace both keys of ${project.name}? Apps using the old keys stop working at once.`)) return;
          event.target.disabled = true;
          try {
            onChange(await api("POST", `/users/@me/projects/${encodeURIComponent(project.id)}/regenerate-keys`));
          } catch (e) {
            alert(e.message);
            event.target.disabled = false;
          }
        },
      }, "Regenerate keys")
      : null,
  );
}

async function renderProjects(user, fresh) {
  setNav(user);
  const projects = await api("GET", "/users/@me/projects");
  const refresh = (changed) => renderProjects(user, changed);
  show(
    h("h1", {}, "Projects"),
    fresh ? keyNotice(fresh) : null,
    projects.length === 0
      ? h("p", { class: "meta" }, "No projects yet. A project holds contacts, templates and campaigns, and has its own API keys.")
      : null,
    ...projects.map((project) => projectCard(project, refresh)),
    h("section", { class: "card" },
      h("h2", {}, "New project"),
      form({ id: "project-form" }, h("div", { class: "row" },
        h("label", {}, "Name", h("input", { name: "name", required: true, maxlength: "100" })),
        h("button", { type: "submit" }, "Create project"),
      ), async (data) => {
        const created = await api("POST", "/users/@me/projects", { name: data.get("name") });
        await renderProjects(user, created);
      }),
    ),
  );
}

async function start() {
  try {
    features = (await api("GET", "/config")).features;
  } catch {
    // keep the defaults; the sign-in page still works
  }
  try {
    const user = await api("GET", "/users/@me");
    if (location.pathname === "/" || location.pathname === "/login") history.replaceState(null, "", "/app/projects");
    await renderProjects(user);
  } catch (e) {
    if (e.status !== 401) {
      show(h("p", { class: "error" }, e.message));
      return;
    }
    renderAuth(location.pathname === "/signup" ? "signup" : "login");
  }
}

start();
