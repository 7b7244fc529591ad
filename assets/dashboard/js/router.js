// Client-side routing on the history API: every page has its own URL, so a reload or a shared
// link opens the same page. Links are plain <a href>; clicks on same-origin links are taken
// over here.

import { useEffect, useState } from "../vendor/preact-htm.js";

const listeners = new Set();

function changed() {
  for (const listener of listeners) listener();
}

/** Goes to `path` (pushing a history entry unless `replace`). */
export function navigate(path, { replace = false } = {}) {
  if (path === location.pathname + location.search) return;
  history[replace ? "replaceState" : "pushState"](null, "", path);
  changed();
  window.scrollTo(0, 0);
}

/** Re-renders the caller when the location changes; returns the current location. */
export function useLocation() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((n) => n + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return { path: location.pathname, params: new URLSearchParams(location.search) };
}

/** Matches `/a/:b/c` against a path; returns the named parts or null. */
export function match(pattern, path) {
  const want = pattern.split("/").filter(Boolean);
  const have = path.split("/").filter(Boolean);
  if (want.length !== have.length) return null;
  const params = {};
  for (let i = 0; i < want.length; i++) {
    if (want[i].startsWith(":")) params[want[i].slice(1)] = decodeURIComponent(have[i]);
    else if (want[i] !== have[i]) return null;
  }
  return params;
}

/** Replaces the query string of the current page without a new history entry. */
export function setQuery(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  history.replaceState(null, "", location.pathname + (text ? `?${text}` : ""));
}

window.addEventListener("popstate", changed);
document.addEventListener("click", (event) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target.closest && event.target.closest("a[href]");
  if (!link || link.target || link.hasAttribute("download")) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !(url.pathname.startsWith("/app") || url.pathname === "/login" || url.pathname === "/signup")) return;
  // A link within the page (`#part`) is the browser's to follow.
  if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
