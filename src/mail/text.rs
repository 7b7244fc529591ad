//! The plain-text part made from a message's HTML.
//!
//! Every link is written inline, right after its text, as `text <url>` (RFC 3986 appendix C's
//! delimiters), or as the bare URL when the text is the URL itself; no footnote repeats it.
//! html2text lays the HTML out 998 columns wide (RFC 5322's line limit), so no link of up to
//! 998 characters is cut, and prose is then wrapped at 78 columns at spaces only: a
//! verification, reset, unsubscribe or tracked link in the text part opens as it is. Layout
//! tables are read cell by cell rather than drawn. A line longer than 76 characters (a long
//! link) makes the part quoted-printable on the wire (lettre chooses the encoding), so no line
//! of the message itself is longer than 78 characters.
//!
//! Indentation is the one way the text can grow past the HTML (each nested list or quote
//! prefixes every line inside it), so the text's size is bounded from the parsed document
//! before it is laid out: HTML that would lay out larger than twice its size and a MiB gets a
//! one-line text part instead.

use html2text::render::{TaggedLine, TextDecorator};
use html2text::{Element, RcDom};
use textwrap::{Options, WordSeparator, WordSplitter};

use super::text_layouts::{self, Layout};

/// Where prose wraps.
pub const WIDTH: usize = 78;
/// The width html2text lays out in: RFC 5322's longest line. A word (a link) longer than that
/// is the one thing it cuts.
const LAYOUT_WIDTH: usize = 998;
/// The text part of HTML whose layout would outgrow [`budget`].
pub const TOO_LARGE: &str = "This message is meant to be read as HTML.\n";

/// The most a laid-out text may take: twice the HTML and a MiB.
fn budget(html_len: usize) -> usize {
    html_len.saturating_mul(2).saturating_add(1 << 20)
}

/// The plain-text part made from the HTML.
pub fn text_of(html: &str) -> String {
    finish(text_layouts::wrapped(html, lay_out, wrap_line))
}

/// html2text's layout of `html` (lines of up to 998 columns), or too large for a document of
/// `len` bytes.
fn lay_out(html: &str, len: usize) -> Layout {
    let config = html2text::config::with_decorator(InlineLinks::default()).raw_mode(true);
    let Ok(dom) = config.parse_html(html.as_bytes()) else { return Layout::Text(String::new()) };
    if laid_out_bound(&dom, len) > budget(len) {
        return Layout::TooLarge;
    }
    Layout::Text(
        config
            .dom_to_render_tree(&dom)
            .and_then(|tree| config.render_to_string(tree, LAYOUT_WIDTH))
            .unwrap_or_default(),
    )
}

/// The text part from its wrapped lines (`None`: too large): no run of blank lines longer than
/// one, and none at the ends.
fn finish(wrapped: Option<String>) -> String {
    let Some(wrapped) = wrapped else { return TOO_LARGE.to_string() };
    let mut text = String::with_capacity(wrapped.len());
    let mut blank = 0;
    for line in wrapped.lines() {
        if line.is_empty() {
            blank += 1;
            continue;
        }
        if !text.is_empty() && blank > 0 {
            text.push('\n');
        }
        blank = 0;
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// The text part of `html` laid out on its own, never from a kept layout: what [`text_of`] must
/// give (the fuzzing compares them).
#[cfg(test)]
pub fn text_alone(html: &str) -> String {
    finish(text_layouts::wrapped_alone(html, lay_out, wrap_line))
}

/// At least as much as html2text's layout of `dom` (from HTML of `html_len` bytes) can take:
/// each node's line prefix (the indentation its lists, quotes and headings add, on at least one
/// line), and every byte of the HTML, as text or attributes shown (a link's URL, an image's
/// title), wrapped as narrowly as the deepest indentation leaves room for. The walk keeps its
/// own stack, so no depth of nesting can exhaust the thread's.
fn laid_out_bound(dom: &RcDom, html_len: usize) -> usize {
    let mut stack = vec![(dom.document.clone(), 0usize)];
    let (mut total, mut deepest) = (0usize, 0usize);
    while let Some((node, outer)) = stack.pop() {
        let indent = outer.saturating_add(match &node.data {
            Element { name, .. } => match name.local.as_ref() {
                "ul" | "blockquote" | "dd" => 2,
                // Numbers of up to 20 digits, a dot and a space.
                "ol" => 22,
                "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => 7,
                _ => 0,
            },
            _ => 0,
        });
        total = total.saturating_add(indent + 1);
        deepest = deepest.max(indent);
        stack.extend(node.children.borrow().iter().map(|child| (child.clone(), indent)));
    }
    let room = LAYOUT_WIDTH.saturating_sub(deepest).max(1);
    total.saturating_add(html_len.saturating_mul(LAYOUT_WIDTH) / room)
}

/// Wraps one laid-out line at [`WIDTH`], keeping its prefix (`> ` quotes on every line, list
/// markers as an indent on the lines after the first), and writes it to `out`.
fn wrap_line(line: &str, out: &mut String) {
    let quote_len = line.len() - line.trim_start_matches("> ").len();
    let (quote, rest) = line.split_at(quote_len);
    let marker = list_marker(rest);
    let line = dedupe_link_text(rest);
    let first = quote.to_string();
    let next = format!("{quote}{}", " ".repeat(marker));
    let options = Options::new(WIDTH)
        .word_separator(WordSeparator::AsciiSpace)
        .word_splitter(WordSplitter::NoHyphenation)
        .break_words(false)
        .initial_indent(&first)
        .subsequent_indent(&next);
    if line.is_empty() {
        out.push_str(quote.trim_end());
        out.push('\n');
        return;
    }
    for wrapped in textwrap::wrap(&line, &options) {
        out.push_str(wrapped.trim_end());
        out.push('\n');
    }
}

/// The width of a list item's marker (`* `, `12. `) at the start of `line`, or 0.
fn list_marker(line: &str) -> usize {
    if line.starts_with("* ") {
        return 2;
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && line[digits..].starts_with(". ") { digits + 2 } else { 0 }
}

/// `https://x.test <https://x.test>` (a link whose text is its URL) as the URL alone; the same
/// for `a@x.test <mailto:a@x.test>`.
fn dedupe_link_text(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let mut kept: Vec<&str> = Vec::with_capacity(words.len());
    for word in words {
        let repeats = word.strip_prefix('<').and_then(|w| w.strip_suffix('>')).is_some_and(|url| {
            kept.last().is_some_and(|text| {
                !text.is_empty() && (*text == url || url.strip_prefix("mailto:") == Some(text))
            })
        });
        if !repeats {
            kept.push(word);
        }
    }
    kept.join(" ")
}

/// html2text's plain rendering, with each link's URL written after its text instead of in a
/// footnote.
#[derive(Clone, Default)]
struct InlineLinks {
    /// The URLs of the links open at this point (links may nest in broken HTML).
    open: Vec<String>,
}

impl TextDecorator for InlineLinks {
    type Annotation = ();

    fn decorate_link_start(&mut self, url: &str) -> (String, ()) {
        self.open.push(url.trim().to_string());
        (String::new(), ())
    }

    fn decorate_link_end(&mut self) -> String {
        match self.open.pop() {
            Some(url) if !url.is_empty() && !url.starts_with('#') => format!(" <{url}>"),
            _ => String::new(),
        }
    }

    fn decorate_em_start(&self) -> (String, ()) {
        ("*".into(), ())
    }

    fn decorate_em_end(&self) -> String {
        "*".into()
    }

    fn decorate_strong_start(&self) -> (String, ()) {
        ("**".into(), ())
    }

    fn decorate_strong_end(&self) -> String {
        "**".into()
    }

    fn decorate_strikeout_start(&self) -> (String, ()) {
        (String::new(), ())
    }

    fn decorate_strikeout_end(&self) -> String {
        String::new()
    }

    fn decorate_code_start(&self) -> (String, ()) {
        ("`".into(), ())
    }

    fn decorate_code_end(&self) -> String {
        "`".into()
    }

    fn decorate_preformat_first(&self) {}

    fn decorate_preformat_cont(&self) {}

    fn decorate_image(&mut self, _src: &str, title: &str) -> (String, ()) {
        let title = title.trim();
        (if title.is_empty() { String::new() } else { format!("[{title}]") }, ())
    }

    fn header_prefix(&self, level: usize) -> String {
        format!("{} ", "#".repeat(level))
    }

    fn quote_prefix(&self) -> String {
        "> ".into()
    }

    fn unordered_item_prefix(&self) -> String {
        "* ".into()
    }

    fn ordered_item_prefix(&self, i: i64) -> String {
        format!("{i}. ")
    }

    fn make_subblock_decorator(&self) -> Self {
        InlineLinks::default()
    }

    fn finalise(&mut self, _urls: Vec<String>) -> Vec<TaggedLine<()>> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERIFY: &str = "https://tidings.example/verify-email?token=abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdef";

    #[test]
    fn links_follow_their_text_whole_and_without_footnotes() {
        let html = format!(
            "<table><tr><td><p>Thanks for signing up. Please verify your address with the link below, \
             which works once and for 48 hours only.</p><p><a href=\"{VERIFY}\">Verify your email</a></p>\
             <p>Or paste {VERIFY} into your browser.</p></td><td>Side</td></tr></table>"
        );
        let text = text_of(&html);
        let joined = text.replace('\n', " ");
        assert!(joined.contains(&format!("Verify your email <{VERIFY}>")), "{text}");
        assert!(joined.contains(&format!(" {VERIFY} into")), "a bare URL in the text is not cut: {text}");
        assert!(
            text.lines().any(|l| l == format!("<{VERIFY}>")),
            "a long link gets a line of its own: {text}"
        );
        assert!(!text.contains("[1]"), "no footnotes: {text}");
        assert!(!text.contains('│'), "layout tables are not drawn: {text}");
        for line in text.lines() {
            assert!(
                line.chars().count() <= WIDTH || !line.contains(' ') || line.contains("https://"),
                "{line:?}"
            );
        }
        assert!(text.lines().any(|l| l.starts_with("Thanks") && l.chars().count() <= WIDTH));
    }

    #[test]
    fn a_link_whose_text_is_its_url_is_written_once() {
        let text = text_of(
            "<p><a href=\"https://x.test/a\">https://x.test/a</a> or <a href=\"mailto:a@x.test\">a@x.test</a></p>",
        );
        assert_eq!(text, "https://x.test/a or a@x.test\n");
    }

    #[test]
    fn indentation_cannot_grow_the_text_past_its_budget() {
        // Lists nested 400 deep, then many short items: laid out, each line would carry ~800
        // columns of indentation for 5 bytes of HTML.
        let html = format!("{}{}", "<ul><li>".repeat(400), "<li>x".repeat(20_000));
        assert_eq!(text_of(&html), TOO_LARGE);
        let quotes = format!("{}{}", "<blockquote>".repeat(450), "word ".repeat(50_000));
        assert_eq!(text_of(&quotes), TOO_LARGE);
        // Ordinary nesting is laid out.
        let nested = format!("{}item{}", "<ul><li>".repeat(6), "</li></ul>".repeat(6));
        assert!(text_of(&nested).contains("item"));
        // A huge document that is mostly text is fine: the text is bounded by the HTML.
        let long = format!("<p>{}</p>", "word ".repeat(200_000));
        let text = text_of(&long);
        assert!(text.len() < long.len() + 10_000 && text.lines().all(|l| l.chars().count() <= WIDTH));
    }

    /// Laid out from a kept layout or on its own, each message's text is the same.
    #[test]
    fn a_kept_layout_gives_each_message_its_own_text() {
        let long = "word ".repeat(210);
        let documents = [
            "<table><tr><td><h1>News</h1><p>Read <a href=\"{a}\">the post</a> or {a}.</p>\
             <p><a href=\"{b}\">{b}</a> · <a href=\"#top\">top</a></p><img src=\"{b}\" alt=\"\">\
             </td></tr></table>"
                .to_string(),
            format!("<p>{long}<a href=\"{{a}}\">here</a> {long}<a href='{{b}}'>there</a>{long}</p>"),
            format!(
                "<ul><li>{long}<a HREF=\"{{a}}\">a</a><blockquote>{long} <a href={{b}}>b</a></blockquote></li></ul>"
            ),
            "<pre>href=\"{a}\"</pre><a href=\"mailto:{b}\">mail</a><img src=\"{a}\" title=\"Logo {b}\">\
             <a href=\"{a}?x=1&amp;y=2\">entity</a><a href=\"{a}\"><a href=\"{b}\">nested</a></a>"
                .to_string(),
            "<p>\u{E000} a private-use character <a href=\"{a}\">a</a></p>".to_string(),
        ];
        let values = [
            ("https://t.example/c/AAAA.bbbb", "https://t.example/u/0123456789"),
            ("https://t.example/c/CCCC.dddd", "https://t.example/u/9876543210"),
            ("https://t.example/c/EEEEEEEEEEEEEEEEEEEEEE", "x@y.test"),
            (&*format!("https://t.example/{}", "z".repeat(950)), "https://t.example/u/0123456789"),
            ("https://t.example/c/CCCC.dddd", "https://t.example/u/9876543210"),
        ];
        for document in &documents {
            for (a, b) in values {
                let html = document.replace("{a}", a).replace("{b}", b);
                assert_eq!(text_of(&html), text_alone(&html), "{html}");
            }
        }
    }

    #[test]
    fn list_items_and_quotes_keep_their_prefix_when_wrapped() {
        let long = "word ".repeat(30);
        let text = text_of(&format!("<ul><li>{long}</li></ul><blockquote>{long}</blockquote>"));
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("* word"));
        assert!(lines[1].starts_with("  word"), "{text}");
        assert!(lines.iter().filter(|l| l.starts_with("> word")).count() >= 2, "{text}");
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{text}");
    }
}
