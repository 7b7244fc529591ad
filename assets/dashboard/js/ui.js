// Shared pieces of every page: the page frame, loading, empty and error states, forms that
// show the server's message where the action was, toasts, copy buttons, pagers, job progress.

import { html, useCallback, useEffect, useLayoutEffect, useRef, useState } from "../vendor/preact-htm.js";
import { ApiError, get } from "./api.js";

export { html };

// ---------------------------------------------------------------------------------------------
// Data loading.

/**
 * Runs `load` when `deps` change and keeps its result: {data, error, loading, reload, setData}.
 * An answer that arrives after a newer load started is dropped.
 */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const serial = useRef(0);
  const run = useCallback(async () => {
    const mine = ++serial.current;
    setState((s) => ({ ...s, loading: true, error: null }));
    try {
      const data = await load();
      if (mine === serial.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === serial.current) setState((s) => ({ ...s, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    run();
  }, [run]);
  return { ...state, reload: run, setData: (data) => setState((s) => ({ ...s, data })) };
}

/**
 * An action (a button or a form): {run, busy, error, clear}. `run(...args)` calls `act`, shows
 * `done` as a toast when it succeeds, and keeps the error to show where the action was.
 */
export function useAction(act, done) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (...args) => {
    setBusy(true);
    setError(null);
    try {
      const result = await act(...args);
      if (done) toast(typeof done === "function" ? done(result) : done);
      return result;
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError(null) };
}

/** Calls `fn` `ms` after the last change of `deps`. */
export function useDebounced(fn, deps, ms = 350) {
  useEffect(() => {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  }, deps);
}

/**
 * Loads `ms` after the last change of `deps` and hands the result (or the error) to `apply`,
 * unless a later load has started meanwhile: answers can come back out of order, and a preview
 * or count must show what was asked last, not what came back last.
 */
export function useDebouncedLoad(load, apply, deps, ms = 350) {
  const latest = useRef(0);
  useDebounced(async () => {
    const mine = ++latest.current;
    let result;
    let error = null;
    try {
      result = await load();
    } catch (e) {
      error = e;
    }
    if (mine === latest.current) apply(result, error);
  }, deps, ms);
}

/**
 * A search box's text and the search applied after typing pauses: {text, setText, applied}.
 * Starts from the page's `search` query parameter; `onApply` runs when the search changes (to
 * go back to the first page).
 */
export function useSearch(initial, onApply) {
  const [text, setText] = useState(initial || "");
  const [applied, setApplied] = useState(text);
  useDebounced(() => {
    if (text !== applied) {
      setApplied(text);
      onApply();
    }
  }, [text]);
  return { text, setText, applied };
}

// ---------------------------------------------------------------------------------------------
// States.

export function Page({ title, actions, children, back }) {
  const heading = useRef(null);
  useEffect(() => {
    document.title = `${title} · Tidings`;
  }, [title]);
  // A new page takes the focus to its heading (screen readers announce it), unless the user is
  // already in a control of it.
  useEffect(() => {
    const active = document.activeElement;
    if (!active || active === document.body || !document.getElementById("main")?.contains(active)) {
      heading.current && heading.current.focus({ preventScroll: true });
    }
  }, []);
  return html`
    <section class="page">
      ${back && html`<p class="back"><a href=${back.href}>← ${back.label}</a></p>`}
      <header class="page-head">
        <h1 ref=${heading} tabindex="-1">${title}</h1>
        ${actions && html`<div class="actions">${actions}</div>`}
      </header>
      ${children}
    </section>`;
}

export function Loading({ what = "Loading" }) {
  return html`<p class="loading" role="status"><span class="spinner" aria-hidden="true"></span>${what}…</p>`;
}

export function Empty({ children }) {
  return html`<div class="empty">${children}</div>`;
}

/** The server's message for a failed action, with the suggestion and request id when given. */
export function ErrorBox({ error, retry }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return html`
    <div class="error" role="alert">
      <p>${message}</p>
      ${error.suggestion && html`<p class="meta">${error.suggestion}</p>`}
      ${error.requestId && error.status >= 500 && html`<p class="meta">Request id: <code>${error.requestId}</code></p>`}
      ${retry && html`<button type="button" class="secondary" onClick=${retry}>Try again</button>`}
    </div>`;
}

/** Shows loading, error or the content of a `useLoad` result. */
export function Loaded({ result, children }) {
  if (result.error && !result.data) return html`<${ErrorBox} error=${result.error} retry=${result.reload} />`;
  if (result.data === null) return html`<${Loading} />`;
  return children(result.data);
}

// ---------------------------------------------------------------------------------------------
// Forms.

/** A labelled control: the label wraps it, so every input has its name. */
export function Field({ label, hint, children, wide }) {
  return html`
    <label class=${wide ? "field wide" : "field"}>
      <span class="label">${label}</span>
      ${children}
      ${hint && html`<small class="hint">${hint}</small>`}
    </label>`;
}

/** A form that runs an action on submit, disables its button while busy and shows the error. */
export function Form({ action, submit, children, class: cls, id, busyText }) {
  const onSubmit = (event) => {
    event.preventDefault();
    action.run(new FormData(event.currentTarget), event.currentTarget);
  };
  return html`
    <form class=${cls || "stack"} id=${id} onSubmit=${onSubmit}>
      ${children}
      <${ErrorBox} error=${action.error} />
      ${submit && html`<div class="buttons"><button type="submit" disabled=${action.busy}>${action.busy ? busyText || "Working…" : submit}</button></div>`}
    </form>`;
}

/** A button that runs an action; `confirm` asks first. */
export function ActionButton({ action, children, confirm: question, class: cls = "secondary", label }) {
  const onClick = () => {
    if (question && !window.confirm(question)) return;
    action.run();
  };
  return html`<button type="button" class=${cls} disabled=${action.busy} aria-label=${label} onClick=${onClick}>${children}</button>`;
}

// ---------------------------------------------------------------------------------------------
// Toasts: completed actions are announced in one polite live region.

const toastListeners = new Set();
let toastSerial = 0;

export function toast(message, kind = "ok") {
  const item = { id: ++toastSerial, message, kind };
  for (const listener of toastListeners) listener(item);
}

export function Toasts() {
  const [items, setItems] = useState([]);
  useEffect(() => {
    const listener = (item) => {
      setItems((list) => [...list.slice(-2), item]);
      setTimeout(() => setItems((list) => list.filter((i) => i.id !== item.id)), 4000);
    };
    toastListeners.add(listener);
    return () => toastListeners.delete(listener);
  }, []);
  return html`
    <div class="toasts" role="status" aria-live="polite">
      ${items.map((item) => html`<div class=${`toast ${item.kind}`} key=${item.id}>${item.message}</div>`)}
    </div>`;
}

// ---------------------------------------------------------------------------------------------
// Small pieces.

export function Copy({ text, label = "Copy" }) {
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      toast("Copied to the clipboard");
    } catch {
      toast("Copying is not allowed here; select the text and copy it", "warn");
    }
  };
  return html`<button type="button" class="secondary small" onClick=${copy} aria-label=${`${label}: ${text.length > 40 ? text.slice(0, 40) + "…" : text}`}>${label}</button>`;
}

/**
 * A table in a scrolling box: the box can take the keyboard focus (so a wide table scrolls
 * without a mouse) and is a region named `label`.
 */
/**
 * A table in a scrolling, labelled region. On a phone its rows become cards (class `cards`,
 * the default): each cell is labelled with its column's heading, read from the table's head
 * after every render, so no page has to repeat its headings cell by cell.
 */
export function Table({ label, id, class: cls = "table cards", children }) {
  const table = useRef(null);
  useLayoutEffect(() => {
    const el = table.current;
    if (!el || !el.classList.contains("cards")) return;
    const headings = [...el.querySelectorAll("thead th")].map((th) => th.textContent.trim());
    for (const row of el.querySelectorAll("tbody tr")) {
      let column = 0;
      for (const cell of row.children) {
        if (!cell.hasAttribute("data-label") && cell.colSpan === 1 && headings[column]) cell.setAttribute("data-label", headings[column]);
        column += cell.colSpan || 1;
      }
    }
  });
  return html`
    <div class="table-wrap" role="region" aria-label=${label} tabindex="0">
      <table class=${cls} id=${id} ref=${table}>${children}</table>
    </div>`;
}

let tabsSerial = 0;

/**
 * Tabs as the ARIA pattern has them: the selected tab is the one in the tab order, arrow keys
 * (and Home/End) move between tabs, and the panel is labelled by its tab. `tabs` is a list of
 * [key, label]; `children` is the selected panel's content.
 */
export function Tabs({ label, tabs, current, onChange, children }) {
  const prefix = useRef(`tabs${++tabsSerial}`).current;
  const list = useRef(null);
  const onKeyDown = (event) => {
    const index = tabs.findIndex(([key]) => key === current);
    const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
    if (!(event.key in moves)) return;
    event.preventDefault();
    const next = (moves[event.key] + tabs.length) % tabs.length;
    onChange(tabs[next][0]);
    setTimeout(() => list.current && list.current.querySelector(`#${prefix}-${tabs[next][0]}`).focus());
  };
  return html`
    <div class="tabs" role="tablist" aria-label=${label} ref=${list} onKeyDown=${onKeyDown}>
      ${tabs.map(([key, text]) => html`
        <button type="button" role="tab" id=${`${prefix}-${key}`} key=${key} aria-selected=${key === current}
          aria-controls=${`${prefix}-panel`} tabindex=${key === current ? 0 : -1} onClick=${() => onChange(key)}>${text}</button>`)}
    </div>
    <div role="tabpanel" id=${`${prefix}-panel`} aria-labelledby=${`${prefix}-${current}`}>${children}</div>`;
}

export function Badge({ children, kind = "" }) {
  return html`<span class=${`badge ${kind}`}>${children}</span>`;
}

export function date(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function percent(share) {
  return `${Math.round((share || 0) * 1000) / 10} %`;
}

/**
 * Keeps a uPlot chart as wide as its box (a phone turned, a window narrowed); returns the
 * cleanup that stops watching and destroys the chart.
 */
export function fitChart(chart, box, height) {
  const watcher = new ResizeObserver(() => {
    const width = Math.max(240, box.clientWidth);
    if (Math.abs(width - chart.width) > 1) chart.setSize({ width, height });
  });
  watcher.observe(box);
  return () => {
    watcher.disconnect();
    chart.destroy();
  };
}

/** JSON shown compactly, for event data and field values. */
export function Json({ value }) {
  const text = value === undefined ? "" : JSON.stringify(value);
  return html`<code class="json">${text && text.length > 160 ? text.slice(0, 160) + "…" : text}</code>`;
}

/** Previous/next for cursor lists: keeps the cursors of earlier pages. */
export function useCursor() {
  const [stack, setStack] = useState([null]);
  const cursor = stack[stack.length - 1];
  return {
    cursor,
    page: stack.length,
    next: (c) => setStack((s) => [...s, c]),
    prev: () => setStack((s) => (s.length > 1 ? s.slice(0, -1) : s)),
    reset: () => setStack([null]),
  };
}

export function CursorPager({ pager, list, label }) {
  if (!list || (pager.page === 1 && !list.hasMore)) return null;
  return html`
    <nav class="pager" aria-label=${`${label} pages`}>
      <button type="button" class="secondary" disabled=${pager.page === 1} onClick=${pager.prev}>Previous</button>
      <span>Page ${pager.page}</span>
      <button type="button" class="secondary" disabled=${!list.hasMore} onClick=${() => pager.next(list.cursor)}>Next</button>
    </nav>`;
}

/** The page numbers a pager offers: the first, the last, and those next to `page`, with gaps. */
function pageNumbers(page, total) {
  const wanted = new Set([1, total, page - 1, page, page + 1].filter((n) => n >= 1 && n <= total));
  const out = [];
  for (const n of [...wanted].sort((a, b) => a - b)) {
    if (out.length && n - out[out.length - 1] > 1) out.push("gap");
    out.push(n);
  }
  return out;
}

export function PagePager({ page, totalPages, onPage, label }) {
  if (!totalPages || totalPages <= 1) return null;
  return html`
    <nav class="pager" aria-label=${`${label} pages`}>
      <button type="button" class="secondary" disabled=${page <= 1} onClick=${() => onPage(page - 1)}>Previous</button>
      <span class="page-numbers">
        ${pageNumbers(page, totalPages).map((n, i) => n === "gap"
          ? html`<span key=${`gap${i}`} aria-hidden="true">…</span>`
          : html`<button type="button" key=${n} class=${n === page ? "" : "ghost"} aria-current=${n === page ? "page" : undefined}
              aria-label=${`Page ${n} of ${totalPages}`} onClick=${() => onPage(n)}>${n}</button>`)}
      </span>
      <button type="button" class="secondary" disabled=${page >= totalPages} onClick=${() => onPage(page + 1)}>Next</button>
    </nav>`;
}

/**
 * Follows a contact job (import, bulk, field removal) until it ends, with a progress bar, the
 * result counts and the row errors. `path` is the job's poll URL.
 */
export function JobProgress({ path, onDone, title = "Job" }) {
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const reported = useRef(false);
  useEffect(() => {
    let stopped = false;
    let timer;
    const poll = async () => {
      try {
        const current = await get(path);
        if (stopped) return;
        setJob(current);
        if (current.status === "completed" || current.status === "failed") {
          if (!reported.current) {
            reported.current = true;
            onDone && onDone(current);
          }
          return;
        }
      } catch (e) {
        if (stopped) return;
        setError(e);
        if (!(e instanceof ApiError) || e.status >= 500 || e.status === 0) timer = setTimeout(poll, 2000);
        return;
      }
      timer = setTimeout(poll, 400);
    };
    poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [path]);
  if (!job) return error ? html`<${ErrorBox} error=${error} />` : html`<${Loading} what="Starting" />`;
  const total = job.totalRows ?? job.total ?? 0;
  const finished = job.status === "completed" || job.status === "failed";
  return html`
    <div class="job" data-job-status=${job.status}>
      <p><strong>${title}: ${job.status}</strong> — ${job.processed} of ${total} processed</p>
      <progress max=${Math.max(total, 1)} value=${finished ? Math.max(total, 1) : job.processed} aria-label=${`${title} progress`}></progress>
      <dl class="counts">
        ${job.operation === "import" && html`<dt>Imported</dt><dd data-count="imported">${job.imported}</dd>`}
        <dt>Updated</dt><dd data-count="updated">${job.updated}</dd>
        <dt>Skipped</dt><dd data-count="skipped">${job.skipped}</dd>
        <dt>Errors</dt><dd data-count="errors">${job.errorCount}</dd>
      </dl>
      ${job.failure && html`<div class="error" role="alert"><p>${job.failure}</p></div>`}
      ${job.errors && job.errors.length > 0 && html`
        <${Table} label="Errors">
          <caption>Errors${job.errorCount > job.errors.length ? ` (first ${job.errors.length} of ${job.errorCount})` : ""}</caption>
          <thead><tr>${job.operation === "import"
            ? html`<th scope="col">Row</th><th scope="col">Email</th>`
            : html`<th scope="col">Contact</th>`}<th scope="col">Reason</th></tr></thead>
          <tbody>${job.errors.slice(0, 100).map((e, i) => html`<tr key=${i}>${job.operation === "import"
            ? html`<td>${e.row}</td><td>${e.email ?? ""}</td>`
            : html`<td>${e.contactId}</td>`}<td>${e.reason}</td></tr>`)}</tbody>
        <//>`}
    </div>`;
}
