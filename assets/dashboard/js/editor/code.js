// The code editor of HTML, MJML and Markdown bodies: a plain textarea (so typing, undo, search,
// spell-check settings and screen readers all work as the browser made them) laid over a copy of
// its text with Liquid and markup coloured. The copy is hidden from assistive technology.

import { html, useEffect, useRef } from "../../vendor/preact-htm.js";

const escapeHtml = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

// One pass over the text: Liquid first (it may sit inside a tag's attribute), then comments,
// tags with their attributes, and Markdown's headings and emphasis.
const TOKENS = /(\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\})|(<!--[\s\S]*?-->)|(<\/?[A-Za-z][\w:-]*)((?:[^<>{]|\{(?![{%]))*?)(\/?>)|(^#{1,6} .*$)|(\*\*[^*\n]+\*\*|__[^_\n]+__)/gm;

function attributes(text) {
  return escapeHtml(text).replace(/([\w:-]+)(=)(&quot;|"[^"]*"|'[^']*')?/g, (whole, name, eq, value) =>
    `<span class="hl-attr">${name}</span>${eq}${value ? `<span class="hl-string">${value}</span>` : ""}`);
}

/** The text as HTML with coloured spans (exported for the browser test of the highlighter). */
export function highlight(text, language) {
  let out = "";
  let at = 0;
  TOKENS.lastIndex = 0;
  for (let m = TOKENS.exec(text); m; m = TOKENS.exec(text)) {
    if (m[0] === "") { TOKENS.lastIndex++; continue; }
    out += escapeHtml(text.slice(at, m.index));
    if (m[1]) out += `<span class="hl-liquid">${escapeHtml(m[1])}</span>`;
    else if (m[2]) out += `<span class="hl-comment">${escapeHtml(m[2])}</span>`;
    else if (m[3]) {
      // Liquid inside the tag keeps its own colour.
      const inner = m[4].split(/(\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\})/).map((part, i) =>
        i % 2 ? `<span class="hl-liquid">${escapeHtml(part)}</span>` : attributes(part)).join("");
      out += `<span class="hl-tag">${escapeHtml(m[3])}</span>${inner}<span class="hl-tag">${escapeHtml(m[5])}</span>`;
    } else if (language === "markdown" && m[6]) out += `<span class="hl-heading">${escapeHtml(m[6])}</span>`;
    else if (language === "markdown" && m[7]) out += `<span class="hl-strong">${escapeHtml(m[7])}</span>`;
    else out += escapeHtml(m[0]);
    at = m.index + m[0].length;
  }
  // A final newline needs a character after it, or the copy is a line shorter than the textarea.
  return `${out}${escapeHtml(text.slice(at))}\n`;
}

/**
 * A highlighted code field. `textareaRef` reaches the textarea (to insert at the cursor);
 * `line` (1-based), when given, scrolls the field to that line and selects it.
 */
export function CodeEditor({ id, name, value, onInput, language = "html", label, textareaRef, line, required }) {
  const own = useRef(null);
  const area = textareaRef || own;
  const copy = useRef(null);
  const sync = () => {
    if (copy.current && area.current) {
      copy.current.scrollTop = area.current.scrollTop;
      copy.current.scrollLeft = area.current.scrollLeft;
    }
  };
  useEffect(sync, [value]);
  useEffect(() => {
    const el = area.current;
    if (!el || !line) return;
    const lines = el.value.split("\n");
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    el.focus();
    el.setSelectionRange(start, start + (lines[line - 1] || "").length);
    el.scrollTop = Math.max(0, (line - 3) * parseFloat(getComputedStyle(el).lineHeight || "20"));
    sync();
  }, [line]);
  return html`
    <div class="code-editor" data-language=${language}>
      <pre class="code-copy" aria-hidden="true" ref=${copy} dangerouslySetInnerHTML=${{ __html: highlight(value, language) }}></pre>
      <textarea id=${id} name=${name} class="code code-input" aria-label=${label} spellcheck="false" required=${required} ref=${area}
        value=${value} onInput=${(e) => onInput(e.currentTarget.value)} onScroll=${sync}></textarea>
    </div>`;
}
