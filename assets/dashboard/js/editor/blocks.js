// The visual block editor: a mail as a list of blocks (heading, text, image, button, divider,
// spacer, columns, social links, footer) and a style. It edits the document the server stores
// and lays out in MJML (src/core/formats/blocks.rs), so what it holds is exactly what is sent.

import { html, useEffect, useRef, useState } from "../../vendor/preact-htm.js";
import { api } from "../api.js";
import { ErrorBox, Field, useAction } from "../ui.js";

export const KINDS = {
  heading: { label: "Heading", make: () => ({ type: "heading", text: "A headline", level: 1 }) },
  text: { label: "Text", make: () => ({ type: "text", html: "<p>Write something worth reading.</p>" }) },
  image: { label: "Image", make: () => ({ type: "image", src: "", alt: "" }) },
  button: { label: "Button", make: () => ({ type: "button", label: "Read more", href: "https://" }) },
  divider: { label: "Divider", make: () => ({ type: "divider" }) },
  spacer: { label: "Spacer", make: () => ({ type: "spacer", height: 24 }) },
  columns: { label: "Two columns", make: () => ({ type: "columns", columns: [[KINDS.text.make()], [KINDS.text.make()]] }) },
  social: { label: "Social links", make: () => ({ type: "social", links: [{ network: "website", href: "https://" }], align: "center" }) },
  footer: { label: "Footer with unsubscribe link", make: () => ({ type: "footer", html: "Your company, its postal address" }) },
};

const MERGE_TAGS = [
  ["{{ firstName ?? \"there\" }}", "First name"], ["{{ email }}", "Email"], ["{{ unsubscribeUrl }}", "Unsubscribe link"],
  ["{{ viewInBrowserUrl }}", "Web version link"], ["{{ manageUrl }}", "Preferences link"],
];
const ALIGN = ["left", "center", "right"];
const NETWORKS = ["website", "x", "linkedin", "github", "facebook", "instagram", "youtube", "mastodon", "bluesky"];

/** The document in `value` (a JSON string), or a new one with a heading, a text and a footer. */
export function parseDocument(value) {
  try {
    const doc = JSON.parse(value);
    if (doc && Array.isArray(doc.blocks)) return doc;
  } catch (_) { /* a body in another format: start afresh */ }
  return { style: {}, blocks: [KINDS.heading.make(), KINDS.text.make(), KINDS.footer.make()] };
}

/** Edits the document in `value` (JSON); `onChange` gets the new JSON. */
export function BlockEditor({ value, onChange }) {
  const doc = parseDocument(value);
  const emit = (next) => onChange(JSON.stringify(next));
  return html`
    <div class="block-editor" id="block-editor">
      <${StylePanel} style=${doc.style || {}} onChange=${(style) => emit({ ...doc, style })} />
      <${BlockList} blocks=${doc.blocks} top=${true} onChange=${(blocks) => emit({ ...doc, blocks })} label="Mail" />
    </div>`;
}

function StylePanel({ style, onChange }) {
  const colour = (key, label, fallback) => html`
    <div class="field color-field">
      <label class="label" for=${`style-${key}`}>${label}</label>
      <input type="color" id=${`style-${key}`} value=${style[key] || fallback} onInput=${(e) => onChange({ ...style, [key]: e.currentTarget.value })} />
    </div>`;
  return html`
    <details class="block-style">
      <summary>Style: colours and font</summary>
      <div class="inline">
        ${colour("background", "Background", "#f4f4f5")}
        ${colour("contentBackground", "Content", "#ffffff")}
        ${colour("textColor", "Text", "#1f2937")}
        ${colour("accentColor", "Links and buttons", "#2563eb")}
        <${Field} label="Font">
          <select id="style-font" value=${style.font || "sans"} onChange=${(e) => onChange({ ...style, font: e.currentTarget.value })}>
            <option value="sans">Sans-serif</option><option value="serif">Serif</option><option value="mono">Monospace</option>
          </select>
        <//>
      </div>
    </details>`;
}

/** A list of blocks with move, remove and add; inside columns, no further columns. */
function BlockList({ blocks, top, onChange, label }) {
  const [adding, setAdding] = useState("text");
  // Blocks are keyed by place and by how often the list was rearranged, so a move or a removal
  // remounts them with their new content (text edited in place is only written on mount).
  const [arranged, setArranged] = useState(0);
  const put = (i, block) => onChange(blocks.map((b, j) => (j === i ? block : b)));
  const rearrange = (next) => {
    setArranged((n) => n + 1);
    onChange(next);
  };
  const move = (i, by) => {
    const next = blocks.slice();
    const [block] = next.splice(i, 1);
    next.splice(i + by, 0, block);
    rearrange(next);
  };
  const kinds = Object.entries(KINDS).filter(([k]) => top || k !== "columns");
  return html`
    <ol class="blocks" aria-label=${`${label}: blocks`}>
      ${blocks.map((block, i) => html`
        <li class="block" key=${`${arranged}-${i}`} data-block=${block.type}>
          <div class="block-head">
            <strong>${(KINDS[block.type] || { label: block.type }).label}</strong>
            <span class="block-tools">
              <button type="button" class="secondary small" aria-label=${`Move block ${i + 1} up`} disabled=${i === 0} onClick=${() => move(i, -1)}>↑</button>
              <button type="button" class="secondary small" aria-label=${`Move block ${i + 1} down`} disabled=${i === blocks.length - 1} onClick=${() => move(i, 1)}>↓</button>
              <button type="button" class="secondary small" aria-label=${`Remove block ${i + 1}`} onClick=${() => rearrange(blocks.filter((_, j) => j !== i))}>✕</button>
            </span>
          </div>
          <${BlockFields} block=${block} id=${`${label.replace(/\W+/g, "-").toLowerCase()}-${i}`} onChange=${(b) => put(i, b)} />
        </li>`)}
    </ol>
    <div class="inline add-block">
      <div class="field">
        <label class="label" for=${`add-${label.replace(/\W+/g, "-").toLowerCase()}`}>${top ? "Add a block" : html`Add<span class="visually-hidden"> a block</span> to ${label.split(" of ")[0].toLowerCase()}`}</label>
        <select id=${`add-${label.replace(/\W+/g, "-").toLowerCase()}`} value=${adding} onChange=${(e) => setAdding(e.currentTarget.value)}>
          ${kinds.map(([k, v]) => html`<option value=${k}>${v.label}</option>`)}
        </select>
      </div>
      <button type="button" class="secondary" onClick=${() => onChange([...blocks, KINDS[adding].make()])}>Add</button>
    </div>`;
}

function BlockFields({ block, id, onChange }) {
  const set = (key, parse = (v) => v) => (e) => onChange({ ...block, [key]: parse(e.currentTarget.value) });
  const align = html`
    <${Field} label="Align">
      <select id=${`${id}-align`} value=${block.align || "left"} onChange=${set("align")}>${ALIGN.map((a) => html`<option value=${a}>${a}</option>`)}</select>
    <//>`;
  switch (block.type) {
    case "heading":
      return html`<div class="inline">
        <${Field} label="Heading"><input id=${`${id}-text`} value=${block.text} onInput=${set("text")} /><//>
        <${Field} label="Size">
          <select id=${`${id}-level`} value=${block.level || 1} onChange=${set("level", Number)}>
            <option value="1">Large</option><option value="2">Medium</option><option value="3">Small</option>
          </select>
        <//>
        ${align}</div>`;
    case "text":
      return html`<${RichText} id=${`${id}-html`} value=${block.html} onChange=${(v) => onChange({ ...block, html: v })} />${align}`;
    case "image":
      return html`<${ImageFields} block=${block} id=${id} onChange=${onChange} />`;
    case "button":
      return html`<div class="inline">
        <${Field} label="Words"><input id=${`${id}-label`} value=${block.label} onInput=${set("label")} /><//>
        <${Field} label="Link"><input id=${`${id}-href`} value=${block.href} onInput=${set("href")} /><//>
        <div class="field color-field"><label class="label" for=${`${id}-color`}>Colour</label>
          <input type="color" id=${`${id}-color`} value=${block.color || "#2563eb"} onInput=${set("color")} /></div>
        ${align}</div>`;
    case "divider":
      return html`<p class="meta">A thin line across the mail.</p>`;
    case "spacer":
      return html`<${Field} label="Height in pixels"><input id=${`${id}-height`} type="number" min="4" max="200" value=${block.height} onInput=${set("height", Number)} /><//>`;
    case "columns":
      return html`<div class="block-columns">${block.columns.map((col, c) => html`
        <div class="block-column" key=${c}>
          <${BlockList} blocks=${col} top=${false} label=${`Column ${c + 1} of block ${id}`}
            onChange=${(blocks) => onChange({ ...block, columns: block.columns.map((x, k) => (k === c ? blocks : x)) })} />
        </div>`)}</div>`;
    case "social":
      return html`<${SocialFields} block=${block} id=${id} onChange=${onChange} />${align}`;
    case "footer":
      return html`
        <${RichText} id=${`${id}-html`} label="Footer text" value=${block.html} onChange=${(v) => onChange({ ...block, html: v })} />
        <${Field} label="Unsubscribe link's words" hint="The link is added to marketing mail by itself.">
          <input id=${`${id}-unsubscribe`} value=${block.unsubscribeLabel || ""} placeholder="Unsubscribe" onInput=${set("unsubscribeLabel")} />
        <//>`;
    default:
      return html`<p class="meta">This block is kept as it is.</p>`;
  }
}

/**
 * Text with inline formatting: bold, italic, links and merge tags, edited in place; the
 * element's HTML is written back on each input.
 */
function RichText({ id, value, onChange, label = "Text" }) {
  const box = useRef(null);
  // Filled once: a block list remounts its blocks when they move, and writing the element again
  // on a later render could undo keystrokes typed before that render (the cursor jumps).
  useEffect(() => {
    if (box.current) box.current.innerHTML = value;
  }, []);
  const report = () => onChange(box.current.innerHTML);
  const command = (name, arg) => {
    box.current.focus();
    document.execCommand(name, false, arg);
    report();
  };
  const link = () => {
    const href = window.prompt("Link to (https://…, or a merge tag)", "https://");
    if (href) command("createLink", href);
  };
  return html`
    <div class="rich">
      <span class="label" id=${`${id}-label`}>${label}</span>
      <div class="rich-tools" role="toolbar" aria-label=${`${label}: formatting`} onMouseDown=${(e) => { if (e.target.closest("button")) e.preventDefault(); }}>
        <button type="button" class="secondary small" onClick=${() => command("bold")} aria-label="Bold"><b>B</b></button>
        <button type="button" class="secondary small" onClick=${() => command("italic")} aria-label="Italic"><i>I</i></button>
        <button type="button" class="secondary small" onClick=${link}>Link</button>
        <select aria-label="Insert a merge tag" value="" onChange=${(e) => { const tag = e.currentTarget.value; e.currentTarget.value = ""; if (tag) command("insertText", tag); }}>
          <option value="">Insert a merge tag…</option>
          ${MERGE_TAGS.map(([tag, name]) => html`<option value=${tag}>${name}</option>`)}
        </select>
      </div>
      <div class="rich-text" id=${id} contenteditable="true" role="textbox" aria-multiline="true" aria-labelledby=${`${id}-label`}
        ref=${box} onInput=${report}></div>
    </div>`;
}

function ImageFields({ block, id, onChange }) {
  const set = (key, parse = (v) => v) => (e) => onChange({ ...block, [key]: parse(e.currentTarget.value) });
  const upload = useAction(async (file) => {
    const form = new FormData();
    form.append("file", file);
    const image = await api("POST", "/uploads/image", form);
    onChange({ ...block, src: image.url });
    return image;
  }, "Image uploaded");
  return html`
    ${block.src && html`<img class="block-thumb" src=${block.src} alt="" />`}
    <div class="inline">
      <div class="field">
        <label class="label" for=${`${id}-file`}>Upload an image</label>
        <input id=${`${id}-file`} type="file" accept="image/png,image/jpeg,image/gif,image/webp" disabled=${upload.busy}
          onChange=${(e) => { const f = e.currentTarget.files[0]; e.currentTarget.value = ""; if (f) upload.run(f); }} />
      </div>
      <${Field} label="…or its address"><input id=${`${id}-src`} value=${block.src} placeholder="https://" onInput=${set("src")} /><//>
    </div>
    <${ErrorBox} error=${upload.error} />
    <div class="inline">
      <${Field} label="Description (alt text)"><input id=${`${id}-alt`} value=${block.alt || ""} onInput=${set("alt")} /><//>
      <${Field} label="Link (optional)"><input id=${`${id}-href`} value=${block.href || ""} onInput=${set("href")} /><//>
      <${Field} label="Width in pixels"><input id=${`${id}-width`} type="number" min="16" max="600" value=${block.width || ""}
        onInput=${(e) => onChange({ ...block, width: e.currentTarget.value ? Number(e.currentTarget.value) : undefined })} /><//>
    </div>`;
}

function SocialFields({ block, id, onChange }) {
  const links = block.links || [];
  const put = (i, link) => onChange({ ...block, links: links.map((l, j) => (j === i ? link : l)) });
  return html`
    ${links.map((l, i) => html`
      <div class="inline" key=${i}>
        <${Field} label=${`Network ${i + 1}`}>
          <select id=${`${id}-network-${i}`} value=${l.network} onChange=${(e) => put(i, { ...l, network: e.currentTarget.value })}>
            ${NETWORKS.map((n) => html`<option value=${n}>${n}</option>`)}
          </select>
        <//>
        <${Field} label=${`Address ${i + 1}`}><input id=${`${id}-href-${i}`} value=${l.href} onInput=${(e) => put(i, { ...l, href: e.currentTarget.value })} /><//>
        <button type="button" class="secondary small" aria-label=${`Remove link ${i + 1}`} onClick=${() => onChange({ ...block, links: links.filter((_, j) => j !== i) })}>✕</button>
      </div>`)}
    <button type="button" class="secondary small" onClick=${() => onChange({ ...block, links: [...links, { network: "website", href: "https://" }] })}>Add a link</button>`;
}
