// The one API client of the dashboard. It calls the same JSON API as API users, with the
// session cookie; project resources name their project in the X-Project-Id header.
//
// Every request that changes something is JSON (or multipart for uploads): the server refuses
// other content types on cookie-authenticated requests (its CSRF rule).

let currentProject = null;

/** Names the project that project resources (/contacts, /segments, ...) act on. */
export function setProject(id) {
  currentProject = id;
}

/** An error answer of the API, with the envelope's parts. */
export class ApiError extends Error {
  constructor(status, body) {
    super(describe(body, status));
    const error = (body && typeof body.error === "object" && body.error) || {};
    this.status = status;
    this.code = error.code || null;
    this.errors = Array.isArray(error.errors) ? error.errors : [];
    this.details = error.details || null;
    this.suggestion = error.suggestion || null;
    this.requestId = error.requestId || null;
  }

  /** The line a template error is on, when the server named one. */
  get line() {
    const item = this.errors.find((e) => e.received && typeof e.received.line === "number");
    return item ? item.received.line : null;
  }
}

function describe(body, status) {
  const error = body && body.error;
  if (error && Array.isArray(error.errors) && error.errors.length) {
    return error.errors.map((item) => item.message).join("; ");
  }
  if (error && typeof error.message === "string") return error.message;
  if (typeof error === "string") return error;
  if (status === 0) return "The server cannot be reached; check your connection and try again";
  return `The request failed (HTTP ${status})`;
}

/** Builds a query string from an object, leaving out empty values. */
export function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

/**
 * Calls the API. Resolves to the JSON body (null for 204), or throws an ApiError with the
 * server's message.
 */
export async function api(method, path, body) {
  const headers = {};
  if (currentProject) headers["X-Project-Id"] = currentProject;
  const init = { method, credentials: "same-origin", headers };
  if (body instanceof FormData) {
    init.body = body;
  } else if (method !== "GET") {
    headers["content-type"] = "application/json";
    if (body !== undefined) init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, null);
  }
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    const error = new ApiError(res.status, data);
    if (res.status === 401 && path !== "/users/@me") window.dispatchEvent(new CustomEvent("tidings:signed-out"));
    throw error;
  }
  return data;
}

export const get = (path, params = {}) => api("GET", path + query(params));
export const post = (path, body = {}) => api("POST", path, body);
export const patch = (path, body) => api("PATCH", path, body);
export const del = (path, body) => api("DELETE", path, body);

/** Posts JSON to `path` and resolves to the text it answers (a page's HTML). */
export async function postForText(path, body) {
  const headers = { "content-type": "application/json" };
  if (currentProject) headers["X-Project-Id"] = currentProject;
  let res;
  try {
    res = await fetch(path, { method: "POST", credentials: "same-origin", headers, body: JSON.stringify(body) });
  } catch {
    throw new ApiError(0, null);
  }
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  return res.text();
}

/** Downloads a file the API answers at `path` (with the project header), saved as `filename`. */
export async function download(path, filename) {
  const headers = currentProject ? { "X-Project-Id": currentProject } : {};
  let res;
  try {
    res = await fetch(path, { credentials: "same-origin", headers });
  } catch {
    throw new ApiError(0, null);
  }
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const url = URL.createObjectURL(await res.blob());
  const link = Object.assign(document.createElement("a"), { href: url, download: filename });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
