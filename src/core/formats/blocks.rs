//! The block editor's document: a style and a list of blocks (heading, text, image, button,
//! divider, spacer, columns, social links, footer), stored as JSON and laid out as MJML. Text
//! fields hold merge tags (`{{ firstName ?? "there" }}`); a text block's `html` is the inline
//! HTML the editor writes (bold, italic, links, line breaks). Everything else is escaped here.
//!
//! The document is checked whole before anything is laid out: known fields only, colours as
//! `#rgb`/`#rrggbb`, links as web, mail or phone addresses (or a merge tag), sizes in range, at
//! most [`MAX_BLOCKS`] blocks, columns of 2 to 4 holding no columns, and the Liquid of every
//! text, named by the block's place (`blocks[2].columns[1][0].label`).

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::core::error::{Error, FieldError, Result};
use crate::core::render::{self, Mode, element_spans};

/// Blocks a document holds, counting those inside columns.
pub const MAX_BLOCKS: usize = 200;

/// The look of the whole mail.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase", default)]
pub struct Style {
    /// Around the content.
    pub background: String,
    pub content_background: String,
    pub text_color: String,
    /// Links and, unless a button says otherwise, buttons.
    pub accent_color: String,
    pub font: Font,
}

impl Default for Style {
    fn default() -> Self {
        Style {
            background: "#f4f4f5".into(),
            content_background: "#ffffff".into(),
            text_color: "#1f2937".into(),
            accent_color: "#2563eb".into(),
            font: Font::Sans,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Font {
    #[default]
    Sans,
    Serif,
    Mono,
}

impl Font {
    /// System fonts only: a named web font would make every open fetch it from a third party.
    fn stack(self) -> &'static str {
        match self {
            Font::Sans => "-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif",
            Font::Serif => "Georgia, 'Times New Roman', serif",
            Font::Mono => "Menlo, Consolas, 'Courier New', monospace",
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Align {
    #[default]
    Left,
    Center,
    Right,
}

impl Align {
    fn as_str(self) -> &'static str {
        match self {
            Align::Left => "left",
            Align::Center => "center",
            Align::Right => "right",
        }
    }
}

/// One block of the mail.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Block {
    Heading {
        text: String,
        #[serde(default = "one")]
        level: u8,
        #[serde(default)]
        align: Align,
    },
    Text {
        html: String,
        #[serde(default)]
        align: Align,
    },
    Image {
        src: String,
        #[serde(default)]
        alt: String,
        #[serde(default)]
        href: Option<String>,
        /// Pixels; the column's width when left out.
        #[serde(default)]
        width: Option<u16>,
        #[serde(default)]
        align: Align,
    },
    Button {
        label: String,
        href: String,
        #[serde(default)]
        color: Option<String>,
        #[serde(default, rename = "textColor")]
        text_color: Option<String>,
        #[serde(default)]
        align: Align,
    },
    Divider {
        #[serde(default)]
        color: Option<String>,
    },
    Spacer {
        height: u16,
    },
    Columns {
        columns: Vec<Vec<Block>>,
    },
    Social {
        links: Vec<SocialLink>,
        #[serde(default)]
        align: Align,
    },
    Footer {
        #[serde(default)]
        html: String,
        /// The unsubscribe link's words ("Unsubscribe" when left out); the link itself is
        /// always there in mail that has one.
        #[serde(default, rename = "unsubscribeLabel")]
        unsubscribe_label: Option<String>,
    },
}

fn one() -> u8 {
    1
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SocialLink {
    /// Shown as the link's words: `x`, `linkedin`, `github`, ... or any label.
    pub network: String,
    pub href: String,
}

/// A whole document.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Document {
    #[serde(default)]
    pub style: Style,
    pub blocks: Vec<Block>,
}

/// A refusal of the document at `path`.
fn refuse(field: &str, path: &str, code: &str, message: impl Into<String>) -> Error {
    let message = message.into();
    Error::Invalid(vec![
        FieldError::new(field, code, format!("{field}: {path}: {message}"))
            .received(json!({ "block": path })),
    ])
}

impl Document {
    /// Reads and checks a document (422 on `field`, naming the block, otherwise).
    pub fn parse(text: &str, field: &str) -> Result<Document> {
        let reader = &mut serde_json::Deserializer::from_str(text);
        let document: Document = serde_path_to_error::deserialize(reader).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner().to_string();
            refuse(
                field,
                &path,
                "invalid_blocks",
                format!("{inner} (a block document is {{\"blocks\": [...]}})"),
            )
        })?;
        document.check(field)?;
        Ok(document)
    }

    fn check(&self, field: &str) -> Result<()> {
        let style = &self.style;
        for (name, value) in [
            ("background", &style.background),
            ("contentBackground", &style.content_background),
            ("textColor", &style.text_color),
            ("accentColor", &style.accent_color),
        ] {
            check_color(field, &format!("style.{name}"), value)?;
        }
        let mut count = 0;
        check_blocks(field, "blocks", &self.blocks, true, &mut count)
    }

    /// The MJML of the mail.
    pub fn to_mjml(&self) -> String {
        let mut sections = String::new();
        let mut column = String::new();
        let close = |sections: &mut String, column: &mut String| {
            if !column.is_empty() {
                sections.push_str(&format!("<mj-section><mj-column>{column}</mj-column></mj-section>"));
                column.clear();
            }
        };
        for block in &self.blocks {
            if let Block::Columns { columns } = block {
                close(&mut sections, &mut column);
                sections.push_str("<mj-section>");
                for blocks in columns {
                    let inner: String = blocks.iter().map(|b| b.to_mjml(&self.style)).collect();
                    sections.push_str(&format!("<mj-column>{inner}</mj-column>"));
                }
                sections.push_str("</mj-section>");
            } else {
                column.push_str(&block.to_mjml(&self.style));
            }
        }
        close(&mut sections, &mut column);
        page(&self.style, &sections)
    }
}

fn check_blocks(field: &str, at: &str, blocks: &[Block], top: bool, count: &mut usize) -> Result<()> {
    for (i, block) in blocks.iter().enumerate() {
        let path = format!("{at}[{i}]");
        *count += 1;
        if *count > MAX_BLOCKS {
            return Err(refuse(field, &path, "too_big", format!("a mail holds at most {MAX_BLOCKS} blocks")));
        }
        let text = |name: &str, value: &str| check_liquid(field, &format!("{path}.{name}"), value);
        match block {
            Block::Heading { text: words, level, .. } => {
                if !(1..=3).contains(level) {
                    return Err(refuse(
                        field,
                        &format!("{path}.level"),
                        "invalid_value",
                        "level is 1, 2 or 3",
                    ));
                }
                text("text", words)?;
            }
            Block::Text { html, .. } => text("html", html)?,
            Block::Image { src, alt, href, width, .. } => {
                check_link(field, &format!("{path}.src"), src, false)?;
                text("alt", alt)?;
                if let Some(href) = href.as_deref().filter(|h| !h.is_empty()) {
                    check_link(field, &format!("{path}.href"), href, true)?;
                }
                if width.is_some_and(|w| !(16..=600).contains(&w)) {
                    return Err(refuse(
                        field,
                        &format!("{path}.width"),
                        "invalid_value",
                        "width is 16 to 600 pixels",
                    ));
                }
            }
            Block::Button { label, href, color, text_color, .. } => {
                if label.trim().is_empty() {
                    return Err(refuse(field, &format!("{path}.label"), "too_small", "a button has words"));
                }
                text("label", label)?;
                check_link(field, &format!("{path}.href"), href, true)?;
                for (name, value) in [("color", color), ("textColor", text_color)] {
                    if let Some(value) = value {
                        check_color(field, &format!("{path}.{name}"), value)?;
                    }
                }
            }
            Block::Divider { color } => {
                if let Some(color) = color {
                    check_color(field, &format!("{path}.color"), color)?;
                }
            }
            Block::Spacer { height } => {
                if !(4..=200).contains(height) {
                    return Err(refuse(
                        field,
                        &format!("{path}.height"),
                        "invalid_value",
                        "height is 4 to 200 pixels",
                    ));
                }
            }
            Block::Columns { columns } => {
                if !top {
                    return Err(refuse(field, &path, "invalid_value", "columns do not go inside columns"));
                }
                if !(2..=4).contains(&columns.len()) {
                    return Err(refuse(field, &format!("{path}.columns"), "invalid_value", "2 to 4 columns"));
                }
                for (c, inner) in columns.iter().enumerate() {
                    check_blocks(field, &format!("{path}.columns[{c}]"), inner, false, count)?;
                }
            }
            Block::Social { links, .. } => {
                for (l, link) in links.iter().enumerate() {
                    text(&format!("links[{l}].network"), &link.network)?;
                    check_link(field, &format!("{path}.links[{l}].href"), &link.href, true)?;
                }
            }
            Block::Footer { html, unsubscribe_label } => {
                text("html", html)?;
                text("unsubscribeLabel", unsubscribe_label.as_deref().unwrap_or(""))?;
            }
        }
    }
    Ok(())
}

/// The Liquid of one text, its errors named by the block's place.
fn check_liquid(field: &str, path: &str, value: &str) -> Result<()> {
    render::check(value, Mode::Html, field).map_err(|e| match e {
        Error::Invalid(mut items) => {
            for item in &mut items {
                item.message = format!("{path}: {}", item.message);
                let mut received = item.received.take().unwrap_or_else(|| json!({}));
                received["block"] = json!(path);
                item.received = Some(received);
            }
            Error::Invalid(items)
        }
        other => other,
    })
}

fn check_color(field: &str, path: &str, value: &str) -> Result<()> {
    let hex = value.strip_prefix('#').unwrap_or("");
    if (hex.len() == 3 || hex.len() == 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(refuse(field, path, "invalid_value", format!("a colour is written #rgb or #rrggbb, not {value:?}")))
}

/// A link or image address: a web address, or a merge tag; `mailto:` and `tel:` for links.
fn check_link(field: &str, path: &str, value: &str, link: bool) -> Result<()> {
    let value = value.trim();
    let lower = value.to_ascii_lowercase();
    let web = lower.starts_with("https://") || lower.starts_with("http://");
    let other = link && (lower.starts_with("mailto:") || lower.starts_with("tel:"));
    if !(web || other || value.starts_with("{{"))
        || value.contains(['"', '<', '>']) && !value.starts_with("{{")
    {
        let what = if link { "a web, mailto: or tel: address" } else { "a web address" };
        return Err(refuse(field, path, "invalid_url", format!("{what}, or a merge tag like {{{{ url }}}}")));
    }
    check_liquid(field, path, value)
}

/// `text` with HTML's special characters escaped outside its Liquid elements.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let plain = |out: &mut String, part: &str| {
        for c in part.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                c => out.push(c),
            }
        }
    };
    for (start, end) in element_spans(text) {
        plain(&mut out, &text[at..start]);
        out.push_str(&text[start..end]);
        at = end;
    }
    plain(&mut out, &text[at..]);
    out
}

impl Block {
    fn to_mjml(&self, style: &Style) -> String {
        match self {
            Block::Heading { text, level, align } => {
                let size = match level {
                    1 => 28,
                    2 => 22,
                    _ => 18,
                };
                format!(
                    "<mj-text align=\"{}\" font-size=\"{size}px\" font-weight=\"700\" line-height=\"1.25\"><h{level} style=\"margin:0;font-size:inherit;font-weight:inherit\">{}</h{level}></mj-text>",
                    align.as_str(),
                    escape(text)
                )
            }
            Block::Text { html, align } => format!("<mj-text align=\"{}\">{html}</mj-text>", align.as_str()),
            Block::Image { src, alt, href, width, align } => {
                let href =
                    href.as_deref().filter(|h| !h.is_empty()).map(|h| format!(" href=\"{}\"", escape(h)));
                let width = width.map(|w| format!(" width=\"{w}px\"")).unwrap_or_default();
                format!(
                    "<mj-image src=\"{}\" alt=\"{}\"{}{width} align=\"{}\" />",
                    escape(src),
                    escape(alt),
                    href.unwrap_or_default(),
                    align.as_str()
                )
            }
            Block::Button { label, href, color, text_color, align } => format!(
                "<mj-button href=\"{}\" background-color=\"{}\" color=\"{}\" align=\"{}\">{}</mj-button>",
                escape(href),
                color.as_deref().unwrap_or(&style.accent_color),
                text_color.as_deref().unwrap_or("#ffffff"),
                align.as_str(),
                escape(label)
            ),
            Block::Divider { color } => {
                format!("<mj-divider border-color=\"{}\" />", color.as_deref().unwrap_or("#e5e7eb"))
            }
            Block::Spacer { height } => format!("<mj-spacer height=\"{height}px\" />"),
            Block::Columns { .. } => String::new(),
            Block::Social { links, align } => {
                let links: Vec<String> = links
                    .iter()
                    .map(|l| {
                        format!("<a href=\"{}\">{}</a>", escape(&l.href), escape(&network_label(&l.network)))
                    })
                    .collect();
                format!("<mj-text align=\"{}\">{}</mj-text>", align.as_str(), links.join(" &middot; "))
            }
            Block::Footer { html, unsubscribe_label } => {
                let label = escape(
                    unsubscribe_label.as_deref().filter(|l| !l.trim().is_empty()).unwrap_or("Unsubscribe"),
                );
                let brk = if html.trim().is_empty() { "" } else { "<br />" };
                format!(
                    "<mj-text align=\"center\" font-size=\"13px\" color=\"#6b7280\">{html}{{% if unsubscribeUrl != \"\" %}}{brk}<a href=\"{{{{ unsubscribeUrl }}}}\" style=\"color:#6b7280\">{label}</a>{{% endif %}}</mj-text>"
                )
            }
        }
    }
}

/// The words of a social link: the network's own name for the known ones.
fn network_label(network: &str) -> String {
    let known = [
        ("x", "X"),
        ("twitter", "X"),
        ("linkedin", "LinkedIn"),
        ("github", "GitHub"),
        ("facebook", "Facebook"),
        ("instagram", "Instagram"),
        ("youtube", "YouTube"),
        ("mastodon", "Mastodon"),
        ("bluesky", "Bluesky"),
        ("website", "Website"),
    ];
    known
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(network.trim()))
        .map_or_else(|| network.trim().to_string(), |(_, label)| (*label).to_string())
}

/// The responsive page around `sections` (MJML sections): the style's colours and font, prose
/// styles for Markdown, content 600 px wide on a background.
pub fn page(style: &Style, sections: &str) -> String {
    let Style { background, content_background, text_color, accent_color, font } = style;
    let font = font.stack();
    format!(
        "<mjml><mj-head><mj-attributes>\
         <mj-all font-family=\"{font}\" />\
         <mj-text font-size=\"16px\" line-height=\"1.6\" color=\"{text_color}\" padding=\"8px 32px\" />\
         <mj-button font-size=\"16px\" font-weight=\"600\" border-radius=\"6px\" inner-padding=\"12px 24px\" padding=\"12px 32px\" />\
         <mj-image padding=\"8px 32px\" />\
         <mj-divider border-width=\"1px\" padding=\"16px 32px\" />\
         <mj-section padding=\"0\" />\
         </mj-attributes>\
         <mj-style>a {{ color: {accent_color}; }} .tidings-prose h1 {{ font-size: 28px; line-height: 1.25; margin: 0 0 16px; }} \
         .tidings-prose h2 {{ font-size: 22px; line-height: 1.3; margin: 24px 0 12px; }} .tidings-prose h3 {{ font-size: 18px; margin: 20px 0 8px; }} \
         .tidings-prose p, .tidings-prose ul, .tidings-prose ol, .tidings-prose table {{ margin: 0 0 16px; }} \
         .tidings-prose blockquote {{ margin: 0 0 16px; padding-left: 12px; border-left: 3px solid #d1d5db; color: #4b5563; }} \
         .tidings-prose code {{ font-family: Menlo, Consolas, monospace; font-size: 14px; background: #f3f4f6; padding: 1px 4px; }} \
         .tidings-prose pre {{ background: #f3f4f6; padding: 12px; overflow-x: auto; }} .tidings-prose td, .tidings-prose th {{ border: 1px solid #e5e7eb; padding: 4px 8px; }} \
         .tidings-prose img {{ max-width: 100%; }}</mj-style></mj-head>\
         <mj-body background-color=\"{background}\" width=\"600px\"><mj-wrapper background-color=\"{content_background}\" padding=\"24px 0\">{sections}</mj-wrapper></mj-body></mjml>"
    )
}
