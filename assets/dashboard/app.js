// The Tidings dashboard: plain ES modules and a vendored Preact + htm, no build step. It talks
// to the same JSON API as API users, with the session cookie. Text from the server is only
// ever rendered as text (Preact escapes it); captured mail is shown in a sandboxed iframe.

import { html, render, useEffect, useState } from "./vendor/preact-htm.js";
import { api, get, setProject } from "./js/api.js";
import { match, navigate, useLocation } from "./js/router.js";
import { ErrorBox, Loading, Toasts } from "./js/ui.js";
import { Auth } from "./js/pages/auth.js";
import { LINK_PAGES } from "./js/pages/account.js";
import { Projects } from "./js/pages/projects.js";
import { Contacts } from "./js/pages/contacts.js";
import { Contact } from "./js/pages/contact.js";
import { Import } from "./js/pages/import.js";
import { Fields } from "./js/pages/fields.js";
import { Templates, TemplateEditor } from "./js/pages/templates.js";
import { Segments, SegmentPage } from "./js/pages/segments.js";
import { Topics } from "./js/pages/topics.js";
import { Forms } from "./js/pages/forms.js";
import { Suppressions } from "./js/pages/suppressions.js";
import { Branding } from "./js/pages/branding.js";
import { CampaignPage, Campaigns } from "./js/pages/campaigns.js";
import { Events } from "./js/pages/events.js";
import { WorkflowPage, Workflows } from "./js/pages/workflows.js";
import { Webhooks } from "./js/pages/webhooks.js";
import { Smtp } from "./js/pages/smtp.js";
import { Inbound, InboundMessage } from "./js/pages/inbound.js";
import { Overview } from "./js/pages/overview.js";
import { Domains } from "./js/pages/domains.js";
import { Outbox, OutboxMessage, SystemOutboxMessage } from "./js/pages/outbox.js";
import { Settings } from "./js/pages/settings.js";
import { Reference } from "./js/pages/reference.js";

/** Pages of a project, in the order the navigation lists them. */
const SECTIONS = [
  ["overview", "Overview"],
  ["contacts", "Contacts"],
  ["fields", "Fields"],
  ["segments", "Segments"],
  ["topics", "Topics"],
  ["forms", "Forms"],
  ["suppressions", "Suppressions"],
  ["branding", "Public pages"],
  ["templates", "Templates"],
  ["campaigns", "Campaigns"],
  ["workflows", "Workflows"],
  ["events", "Events"],
  ["domains", "Domains"],
  ["outbox", "Outbox"],
  ["webhooks", "Webhooks"],
  ["smtp", "SMTP"],
  ["inbound", "Inbound"],
  ["settings", "Settings"],
  ["reference", "API reference"],
];

/** Routes under /app/p/:pid, first match wins. */
const PROJECT_ROUTES = [
  ["overview", Overview],
  ["contacts", Contacts],
  ["contacts/import", Import],
  ["contacts/:id", Contact],
  ["fields", Fields],
  ["templates", Templates],
  ["templates/:id", TemplateEditor],
  ["segments", Segments],
  ["segments/:id", SegmentPage],
  ["topics", Topics],
  ["forms", Forms],
  ["suppressions", Suppressions],
  ["branding", Branding],
  ["campaigns", Campaigns],
  ["campaigns/:id", CampaignPage],
  ["workflows", Workflows],
  ["workflows/:id", WorkflowPage],
  ["events", Events],
  ["domains", Domains],
  ["outbox", Outbox],
  ["outbox/system/:id", SystemOutboxMessage],
  ["outbox/:id", OutboxMessage],
  ["webhooks", Webhooks],
  ["smtp", Smtp],
  ["inbound", Inbound],
  ["inbound/:id", InboundMessage],
  ["settings", Settings],
  ["reference", Reference],
];

const LAST_PROJECT = "tidings.project";

// ---------------------------------------------------------------------------------------------
// Theme: light or dark, following the system until the user picks one.

function currentTheme() {
  return document.documentElement.dataset.theme
    || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
}

function ThemeToggle() {
  const [theme, setTheme] = useState(currentTheme());
  const flip = () => {
    const next = theme === "dark" ? "light" : "dark";
    document.documentElement.dataset.theme = next;
    localStorage.setItem("tidings.theme", next);
    setTheme(next);
  };
  return html`<button type="button" class="ghost" onClick=${flip} aria-pressed=${theme === "dark"}>${theme === "dark" ? "Light theme" : "Dark theme"}</button>`;
}

// ---------------------------------------------------------------------------------------------
// The frame around signed-in pages.

function ProjectSwitcher({ projects, current }) {
  if (!projects.length) return null;
  const onChange = (event) => {
    const id = event.currentTarget.value;
    if (id === "") navigate("/app/projects");
    else {
      const section = (location.pathname.match(/^\/app\/p\/[^/]+\/([^/]+)/) || [])[1] || "contacts";
      navigate(`/app/p/${encodeURIComponent(id)}/${section}`);
    }
  };
  return html`
    <label class="switcher">
      <span class="visually-hidden">Project</span>
      <select onChange=${onChange} value=${current ? current.id : ""}>
        <option value="">All projects</option>
        ${projects.map((p) => html`<option value=${p.id} key=${p.id}>${p.name}</option>`)}
      </select>
    </label>`;
}

/** A warning on every page once the server's data takes 90 % of its disk budget (issue 35). */
function StorageBanner() {
  const [storage, setStorage] = useState(null);
  useEffect(() => { get("/server/storage").then(setStorage).catch(() => {}); }, []);
  if (!storage || !storage.warning) return null;
  const size = (bytes) => bytes >= 1048576 ? `${Math.round(bytes / 1048576).toLocaleString()} MiB`
    : bytes >= 1024 ? `${Math.round(bytes / 1024)} KiB` : bytes === 1 ? "1 byte" : `${bytes} bytes`;
  return html`<p class="notice warn storage-banner" id="storage-banner" role="status">
    The server's data takes ${size(storage.usedBytes)} of its ${size(storage.budgetBytes)} budget. When the disk fills up,
    nothing new can be stored until its operator frees space: shorten data retention in Settings, or give the server room.</p>`;
}

function Shell({ user, projects, project, onSignOut, children }) {
  const [open, setOpen] = useState(false);
  const { path } = useLocation();
  useEffect(() => setOpen(false), [path]);
  const base = project ? `/app/p/${encodeURIComponent(project.id)}` : null;
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="bar">
      <a class="brand" href=${base ? `${base}/contacts` : "/app/projects"}>Tidings</a>
      <${ProjectSwitcher} projects=${projects} current=${project} />
      <button type="button" class="ghost menu" aria-expanded=${open} aria-controls=${project ? "sections account-menu" : "account-menu"} onClick=${() => setOpen(!open)}>Menu</button>
      <div class=${open ? "bar-end open" : "bar-end"} id="account-menu">
        <${ThemeToggle} />
        <span class="who">${user.email}</span>
        <button type="button" class="secondary" onClick=${onSignOut}>Sign out</button>
      </div>
    </header>
    <div class=${project ? "frame with-nav" : "frame"}>
      ${project && html`
        <nav id="sections" class=${open ? "sections open" : "sections"} aria-label="Sections">
          <p class="project-name">${project.name} <span class="badge">${project.role.toLowerCase()}</span></p>
          <ul>
            ${SECTIONS.map(([slug, label]) => {
              const href = `${base}/${slug}`;
              const here = path === href || path.startsWith(`${href}/`);
              return html`<li key=${slug}><a href=${href} aria-current=${here ? "page" : undefined}>${label}</a></li>`;
            })}
          </ul>
        </nav>`}
      <main id="main" tabindex="-1"><${StorageBanner} />${children}</main>
    </div>
    <${Toasts} />`;
}

/** The page for a path under /app, with its project when it has one. */
function routeOf(path) {
  if (path === "/app" || path === "/app/" || path === "/app/projects") return { page: Projects, params: {} };
  const inProject = path.match(/^\/app\/p\/([^/]+)\/?(.*)$/);
  if (!inProject) return null;
  const pid = decodeURIComponent(inProject[1]);
  const rest = `/${inProject[2] || "contacts"}`;
  for (const [pattern, page] of PROJECT_ROUTES) {
    const params = match(`/${pattern}`, rest);
    if (params) return { page, params, pid };
  }
  return { page: null, params: {}, pid };
}

function SignedIn({ user, onSignOut }) {
  const { path } = useLocation();
  const [projects, setProjects] = useState(null);
  const [project, setCurrent] = useState(null);
  const [error, setError] = useState(null);
  const route = routeOf(path);

  const loadProjects = async () => {
    try {
      setProjects(await get("/users/@me/projects"));
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    loadProjects();
  }, []);

  // The project of the route, with the caller's role in it.
  const pid = route && route.pid;
  useEffect(() => {
    setError(null);
    if (!pid || (project && project.id === pid)) return;
    api("GET", `/users/@me/projects/${encodeURIComponent(pid)}`)
      .then((p) => {
        localStorage.setItem(LAST_PROJECT, p.id);
        setCurrent(p);
      })
      .catch((e) => {
        if (e.status === 404) localStorage.removeItem(LAST_PROJECT);
        setError(e);
      });
  }, [pid]);

  const shell = (content) => html`<${Shell} user=${user} projects=${projects || []} onSignOut=${onSignOut}>${content}</${Shell}>`;
  if (error) {
    return shell(html`<section class="page"><${ErrorBox} error=${error} /><p><a href="/app/projects">Go to your projects</a></p></section>`);
  }
  // Pages render only once their project is the route's, and name it in every request.
  const ready = !pid || (project && project.id === pid);
  if (!projects || !ready) return shell(html`<${Loading} />`);
  setProject(pid || null);
  const Page = route ? route.page : null;
  const refresh = async (changed) => {
    await loadProjects();
    if (changed && project && changed.id === project.id) {
      const { secretKey: _shownOnce, ...rest } = changed;
      setCurrent({ ...project, ...rest });
    }
  };
  return html`
    <${Shell} user=${user} projects=${projects} project=${pid ? project : null} onSignOut=${onSignOut}>
      ${Page
        ? html`<${Page} key=${path} user=${user} project=${project} projects=${projects} params=${route.params} onProjectsChanged=${refresh} />`
        : html`<section class="page"><h1>Page not found</h1><p>No page lives at <code>${path}</code>. <a href="/app/projects">Go to your projects</a>.</p></section>`}
    </${Shell}>`;
}

function App() {
  const [session, setSession] = useState({ checked: false, user: null });
  const [features, setFeatures] = useState({ signups: true });
  const { path } = useLocation();

  useEffect(() => {
    get("/config").then((c) => setFeatures({ ...c.features, providers: c.oauthProviders || [] })).catch(() => {});
    api("GET", "/users/@me")
      .then((user) => setSession({ checked: true, user }))
      .catch(() => setSession({ checked: true, user: null }));
    const signedOut = () => setSession({ checked: true, user: null });
    window.addEventListener("tidings:signed-out", signedOut);
    return () => window.removeEventListener("tidings:signed-out", signedOut);
  }, []);

  const { user, checked } = session;
  const linkPage = LINK_PAGES[path];
  useEffect(() => {
    if (!checked || linkPage) return;
    if (user && (path === "/" || path === "/login" || path === "/signup")) {
      const last = localStorage.getItem(LAST_PROJECT);
      navigate(last ? `/app/p/${encodeURIComponent(last)}/contacts` : "/app/projects", { replace: true });
    } else if (!user && path !== "/login" && path !== "/signup") {
      navigate("/login", { replace: true });
    }
  }, [checked, user, path]);

  if (!checked) return html`<${Loading} />`;
  const signedIn = (u, next = "/app/projects") => {
    localStorage.removeItem(LAST_PROJECT);
    setSession({ checked: true, user: u });
    navigate(next, { replace: true });
  };
  if (linkPage) {
    const token = new URLSearchParams(location.search).get("token") || "";
    return html`<main id="main"><${linkPage} token=${token} user=${user} onSignedIn=${signedIn} /></main><${Toasts} />`;
  }
  if (!user) {
    return html`<main id="main"><${Auth} mode=${path === "/signup" ? "signup" : "login"} signups=${features.signups}
      providers=${features.providers || []} onSignedIn=${(u) => signedIn(u)} /></main><${Toasts} />`;
  }
  const signOut = async () => {
    await api("GET", "/auth/logout").catch(() => {});
    setProject(null);
    setSession({ checked: true, user: null });
    navigate("/login", { replace: true });
  };
  return html`<${SignedIn} user=${user} onSignOut=${signOut} />`;
}

const saved = localStorage.getItem("tidings.theme");
if (saved === "dark" || saved === "light") document.documentElement.dataset.theme = saved;
render(html`<${App} />`, document.getElementById("app"));
