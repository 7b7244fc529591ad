//! What a template or campaign body is written in ([`Format`]), and turning it into the HTML
//! the mail is rendered from (still holding its Liquid, which delivery renders per contact).
//!
//! - `html`: the body is that HTML;
//! - `mjml`: MJML, rendered to responsive HTML by mrml ([`mjml`]);
//! - `markdown`: CommonMark by pulldown-cmark, laid out in a responsive MJML page ([`markdown`]);
//! - `blocks`: the dashboard's visual editor's document, a JSON list of blocks, laid out in
//!   MJML ([`blocks`]).
//!
//! A body is compiled once, when it is saved (or previewed), never per recipient: the stored
//! body is the compiled HTML and the author's text is kept beside it as the source.
//!
//! Liquid elements (`{{ … }}`, `{% … %}`) pass through the compilers untouched: each is swapped
//! for a placeholder made of private-use characters before, and put back after ([`Shield`]), so
//! a `"` in `{{ name ?? "there" }}` is never escaped, nor a `{% if %}` between two sections
//! dropped. A source holding those characters itself is refused. The Liquid of a source is
//! checked on the author's text, so an error names the author's line (and, in blocks, the
//! block).

pub mod blocks;
mod markdown;
pub mod mjml;
pub mod starters;

use serde_json::json;

use super::compose;
use super::error::{Error, FieldError, Result};
use super::render::{self, MAX_SOURCE_BYTES, Mode};
use mjml::CompileError;

/// What a body is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Html,
    Mjml,
    Markdown,
    Blocks,
}

impl Format {
    pub const ALL: [Format; 4] = [Format::Html, Format::Mjml, Format::Markdown, Format::Blocks];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Mjml => "mjml",
            Format::Markdown => "markdown",
            Format::Blocks => "blocks",
        }
    }

    /// The format named `name` (stored values and what clients send, any case); 422 on `field`
    /// for another.
    pub fn parse(name: &str, field: &str) -> Result<Format> {
        Format::ALL.into_iter().find(|f| f.as_str().eq_ignore_ascii_case(name.trim())).ok_or_else(|| {
            Error::Invalid(vec![
                FieldError::new(
                    field,
                    "invalid_enum_value",
                    format!("{field} must be html, mjml, markdown or blocks"),
                )
                .received(json!(name)),
            ])
        })
    }

    /// The stored format, `html` for a value this version does not know.
    pub fn stored(name: &str) -> Format {
        Format::parse(name, "format").unwrap_or_default()
    }
}

/// A body as it is stored: its format, the HTML mail is rendered from, and the author's text
/// when that is not the HTML itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Content {
    pub format: Format,
    pub html: String,
    pub source: Option<String>,
}

impl Content {
    /// What the author wrote: the source, or the HTML for an `html` body.
    pub fn written(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.html)
    }
}

/// Checks `body` written in `format` and compiles it (CPU work: run it off the executor). 422 on
/// `field` when it is empty, does not compile, has Liquid that does not parse, or compiles to
/// more HTML than a body may hold.
pub fn compile(format: Format, body: &str, field: &str) -> Result<Content> {
    if body.trim().is_empty() {
        return Err(Error::invalid(field, "too_small", format!("{field} must not be empty")));
    }
    if format == Format::Html {
        compose::check_body(body, field)?;
        return Ok(Content { format, html: body.to_string(), source: None });
    }
    if body.len() > MAX_SOURCE_BYTES {
        return Err(Error::invalid(
            field,
            "too_big",
            format!("{field} is at most {} KiB", MAX_SOURCE_BYTES / 1024),
        ));
    }
    if body.contains([Shield::OPEN, Shield::CLOSE]) {
        return Err(reserved(field));
    }
    let html = match format {
        Format::Html => unreachable!("returned above"),
        Format::Mjml => {
            render::check(body, Mode::Html, field)?;
            let shield = Shield::new(body);
            shield.restore(&mjml::to_html(&shield.text).map_err(|e| e.refusal(field))?)
        }
        Format::Markdown => {
            render::check(body, Mode::Html, field)?;
            let shield = Shield::new(body);
            let page = markdown::to_mjml(&shield.text);
            shield.restore(&mjml::to_html(&page).map_err(|e| e.refusal(field))?)
        }
        Format::Blocks => {
            let mjml = blocks::Document::parse(body, field)?.to_mjml();
            // JSON may write the reserved characters as escapes (`\ue000`) the check above
            // does not see.
            if mjml.contains([Shield::OPEN, Shield::CLOSE]) {
                return Err(reserved(field));
            }
            let shield = Shield::new(&mjml);
            shield.restore(&mjml::to_html(&shield.text).map_err(|e| e.refusal(field))?)
        }
    };
    if html.len() > MAX_SOURCE_BYTES {
        return Err(Error::invalid(
            field,
            "too_big",
            format!(
                "{field} makes {} KiB of HTML; a body is at most {} KiB",
                html.len() / 1024,
                MAX_SOURCE_BYTES / 1024
            ),
        ));
    }
    compose::check_body(&html, field)?;
    Ok(Content { format, html, source: Some(body.to_string()) })
}

/// The refusal of a body holding the placeholders' characters.
fn reserved(field: &str) -> Error {
    Error::invalid(
        field,
        "invalid_string",
        format!("{field} holds the private-use characters U+E000 or U+E001, which Tidings reserves"),
    )
}

/// A body given with an optional format (`html` when left out), compiled.
pub fn compile_named(format: Option<&str>, body: &str, field: &str) -> Result<Content> {
    let format = format.map(|f| Format::parse(f, "format")).transpose()?.unwrap_or_default();
    compile(format, body, field)
}

/// A text with its Liquid elements swapped for placeholders, and the elements to put back.
struct Shield {
    text: String,
    elements: Vec<String>,
}

impl Shield {
    const OPEN: char = '\u{E000}';
    const CLOSE: char = '\u{E001}';
    /// The placeholders' characters as pulldown-cmark writes them in a link's address, and as
    /// mrml writes them in an attribute (with Rust's debug escapes).
    const ENCODED: [(&'static str, char); 4] = [
        ("%EE%80%80", Self::OPEN),
        ("%EE%80%81", Self::CLOSE),
        ("\\u{e000}", Self::OPEN),
        ("\\u{e001}", Self::CLOSE),
    ];

    fn new(source: &str) -> Shield {
        let mut text = String::with_capacity(source.len());
        let mut elements = Vec::new();
        let mut at = 0;
        for (start, end) in render::element_spans(source) {
            text.push_str(&source[at..start]);
            text.push(Self::OPEN);
            text.push_str(&elements.len().to_string());
            text.push(Self::CLOSE);
            elements.push(source[start..end].to_string());
            at = end;
        }
        text.push_str(&source[at..]);
        Shield { text, elements }
    }

    /// `compiled` with each placeholder replaced by its element (an index a compiler changed
    /// is left as it is, and fails the Liquid check after).
    fn restore(&self, compiled: &str) -> String {
        if self.elements.is_empty() {
            return compiled.to_string();
        }
        let mut compiled = compiled.to_string();
        for (encoded, c) in Self::ENCODED {
            if compiled.contains(encoded) {
                compiled = compiled.replace(encoded, c.encode_utf8(&mut [0; 4]));
            }
        }
        let mut out = String::with_capacity(compiled.len());
        let mut rest = compiled.as_str();
        while let Some(open) = rest.find(Self::OPEN) {
            out.push_str(&rest[..open]);
            let after = &rest[open + Self::OPEN.len_utf8()..];
            let element = after.find(Self::CLOSE).and_then(|close| {
                after[..close].parse::<usize>().ok().and_then(|i| self.elements.get(i)).map(|e| (e, close))
            });
            match element {
                Some((element, close)) => {
                    out.push_str(element);
                    rest = &after[close + Self::CLOSE.len_utf8()..];
                }
                None => {
                    out.push(Self::OPEN);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

impl CompileError {
    fn refusal(self, field: &str) -> Error {
        let code = if self.limit { "template_limit" } else { "invalid_template" };
        Error::Invalid(vec![FieldError::new(
            field,
            code,
            format!("{field} does not compile: {}", self.message),
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn liquid_passes_through_every_compiler() {
        let md = compile(
            Format::Markdown,
            "# Hi {{ name ?? \"there\" }}\n\n[Open]({{ url }}) {% if vip %}*VIP*{% endif %}",
            "body",
        )
        .unwrap();
        assert!(md.html.contains("Hi {{ name ?? \"there\" }}"), "{}", md.html);
        assert!(md.html.contains("href=\"{{ url }}\""), "{}", md.html);
        assert!(md.html.contains("{% if vip %}<em>VIP</em>{% endif %}"), "{}", md.html);
        assert_eq!(
            md.written(),
            "# Hi {{ name ?? \"there\" }}\n\n[Open]({{ url }}) {% if vip %}*VIP*{% endif %}"
        );
        let mj = "<mjml><mj-body>{% if vip %}<mj-section><mj-column><mj-button href=\"{{ url ?? \"https://a.test\" }}\">Go</mj-button></mj-column></mj-section>{% endif %}</mj-body></mjml>";
        let out = compile(Format::Mjml, mj, "body").unwrap();
        assert!(out.html.contains("href=\"{{ url ?? \"https://a.test\" }}\""), "{}", out.html);
        assert!(out.html.contains("{% if vip %}") && out.html.contains("{% endif %}"));
        let html = compile(Format::Html, "<p>{{ x }}</p>", "body").unwrap();
        assert_eq!((html.html.as_str(), html.source), ("<p>{{ x }}</p>", None));
    }

    #[test]
    fn refusals_name_the_field_and_the_author_line() {
        let e = compile(Format::Markdown, "ok\n\n{% iff x %}", "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "invalid_template");
        assert_eq!(e.fields()[0].received.as_ref().unwrap()["line"], 3);
        let e = compile(Format::Mjml, "<mjml><mj-body>", "body").unwrap_err();
        assert_eq!((e.fields()[0].field.as_str(), e.fields()[0].code.as_str()), ("body", "invalid_template"));
        let e = compile(Format::Markdown, "a \u{E000}0\u{E001}", "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "invalid_string");
        let escaped = r#"{"blocks": [{"type": "text", "html": "\ue0000\ue001"}]}"#;
        let e = compile(Format::Blocks, escaped, "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "invalid_string", "written as JSON escapes too");
        let e = Format::parse("word", "format").unwrap_err();
        assert_eq!(e.fields()[0].code, "invalid_enum_value");
        assert_eq!(Format::parse("MJML", "format").unwrap(), Format::Mjml);
        let e = compile(Format::Markdown, "  ", "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "too_small");
    }

    #[test]
    fn a_small_source_that_makes_too_much_html_is_refused() {
        // Each empty section expands to about a kilobyte of tables.
        let many = format!("<mjml><mj-body>{}</mj-body></mjml>", "<mj-section></mj-section>".repeat(4000));
        let e = compile(Format::Mjml, &many, "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "too_big", "{:?}", e.fields());
    }

    // The block editor's documents.

    fn compiled(doc: serde_json::Value) -> crate::core::error::Result<String> {
        compile(Format::Blocks, &doc.to_string(), "body").map(|c| c.html)
    }

    #[test]
    fn every_block_lays_out_and_merge_tags_survive() {
        let doc = json!({ "style": { "accentColor": "#0f766e" }, "blocks": [
            { "type": "heading", "text": "Hi {{ firstName ?? \"there\" }} & <co>" },
            { "type": "text", "html": "<p>Our <b>news</b>, <a href=\"https://a.test\">read</a></p>" },
            { "type": "image", "src": "https://cdn.test/a.png", "alt": "A", "href": "https://a.test", "width": 300 },
            { "type": "button", "label": "Open", "href": "{{ url ?? \"https://a.test\" }}" },
            { "type": "divider" }, { "type": "spacer", "height": 24 },
            { "type": "columns", "columns": [[{ "type": "text", "html": "left" }], [{ "type": "text", "html": "right" }]] },
            { "type": "social", "links": [{ "network": "github", "href": "https://github.com/x" }] },
            { "type": "footer", "html": "Acme, 1 Road" }
        ]});
        let html = compiled(doc).unwrap();
        for part in [
            "Hi {{ firstName ?? \"there\" }} &amp; &lt;co&gt;",
            "<b>news</b>",
            "src=\"https://cdn.test/a.png\"",
            "href=\"{{ url ?? \"https://a.test\" }}\"",
            "background:#0f766e",
            "mj-column-per-50",
            ">GitHub</a>",
            "Acme, 1 Road",
            "{% if unsubscribeUrl != \"\" %}",
            "href=\"{{ unsubscribeUrl }}\"",
        ] {
            assert!(html.contains(part), "{part} missing from {html}");
        }
        assert!(!html.contains("fonts.googleapis"), "no third-party fonts");
    }

    #[test]
    fn bad_documents_are_refused_with_the_block_named() {
        let refused = |doc: serde_json::Value| {
            let e = compiled(doc).unwrap_err();
            let item = e.fields()[0].clone();
            (
                item.code,
                item.received.map(|r| r["block"].as_str().unwrap_or("").to_string()).unwrap_or_default(),
            )
        };
        let cases = [
            (
                json!({ "blocks": [{ "type": "button", "label": "x", "href": "javascript:alert(1)" }] }),
                "invalid_url",
                "blocks[0].href",
            ),
            (
                json!({ "blocks": [{ "type": "heading", "text": "a", "level": 7 }] }),
                "invalid_value",
                "blocks[0].level",
            ),
            (
                json!({ "blocks": [{ "type": "text", "html": "{% iff x %}" }] }),
                "invalid_template",
                "blocks[0].html",
            ),
            (
                json!({ "blocks": [{ "type": "divider", "color": "red\" onload=\"x" }] }),
                "invalid_value",
                "blocks[0].color",
            ),
            (
                json!({ "blocks": [{ "type": "columns", "columns": [[{ "type": "columns", "columns": [[], []] }], []] }] }),
                "invalid_value",
                "blocks[0].columns[0][0]",
            ),
            (json!({ "blocks": [{ "type": "marquee" }] }), "invalid_blocks", "blocks[0].type"),
            (
                json!({ "blocks": [{ "type": "spacer", "height": 20, "extra": 1 }] }),
                "invalid_blocks",
                "blocks[0]",
            ),
            (json!({ "style": { "font": "comic" }, "blocks": [] }), "invalid_blocks", "style.font"),
            (json!({ "blocks": vec![json!({ "type": "divider" }); 201] }), "too_big", "blocks[200]"),
        ];
        for (doc, code, path) in cases {
            assert_eq!(refused(doc.clone()), (code.to_string(), path.to_string()), "{doc}");
        }
        let e = compile(Format::Blocks, "<p>not json</p>", "body").unwrap_err();
        assert_eq!(e.fields()[0].code, "invalid_blocks");
    }

    // Markdown.

    #[test]
    fn markdown_is_laid_out_as_responsive_mail() {
        let out = compile(
            Format::Markdown,
            "# Welcome\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n~~old~~ **new**",
            "body",
        )
        .unwrap()
        .html;
        for part in
            ["<h1>Welcome</h1>", "<table>", "<del>old</del>", "<strong>new</strong>", "max-width:600px"]
        {
            assert!(out.contains(part), "{part} in {out}");
        }
        // Pathological inputs stay linear and bounded (pulldown-cmark has no recursion).
        let deep = format!("{}x", "> ".repeat(20_000));
        let e = compile(Format::Markdown, &deep, "body").unwrap_err();
        assert!(["too_big", "template_limit"].contains(&e.fields()[0].code.as_str()), "{:?}", e.fields());
    }
}
