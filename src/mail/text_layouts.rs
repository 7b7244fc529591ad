//! The text part laid out once for messages that differ only in their links (issue 36).
//!
//! html2text lays out about 30 ns a character: 260 µs for a 5 KB newsletter, more than half a
//! DKIM signature. The messages of one campaign, or of one template sent to many, differ mostly
//! in their links: each click, open, unsubscribe and preferences link carries its own signed
//! token. So the HTML's link values (`href` and `src`) are swapped for stand-ins of the same
//! width (characters from Unicode's private use area), the stand-in document is laid out once
//! and kept, and each message's own values are put back into a copy of its layout.
//!
//! The result is the layout of the message itself, character for character:
//! - a stand-in has the width of the value it stands for, so html2text breaks its lines at the
//!   same places (its layout is 998 columns wide; the wrapping at 78 runs after the values are
//!   back);
//! - only values that html2text passes through as they are become stand-ins: printable ASCII,
//!   no entity (`&`), no space, not an anchor (`#…`, which no text shows), at most
//!   [`MAX_VALUE`] characters (so none is cut at 998 columns);
//! - the size limit on the layout is checked against the message's own length;
//! - a layout in which a stand-in is not found whole is not used: the message is laid out on its
//!   own, as is HTML that holds a private-use character of the range used.
//!
//! A few layouts are kept per thread, the most recent first; HTML over [`MAX_HTML`] bytes is
//! laid out on its own, so what is kept stays small.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// What html2text made of a document: lines before the wrapping at 78 columns, or too large.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Layout {
    Text(String),
    TooLarge,
}

/// A kept layout: too large, or its lines, each wrapped already when it holds no stand-in.
enum Kept {
    TooLarge,
    Lines(Vec<Line>),
}

enum Line {
    Wrapped(String),
    StoodIn(String),
}

/// Layouts kept per thread.
const KEPT: usize = 4;
/// The largest HTML whose layout is kept.
const MAX_HTML: usize = 64 * 1024;
/// The largest layout kept (a layout may grow past its HTML by indentation, up to a limit).
const MAX_KEPT_LAYOUT: usize = 4 * MAX_HTML;
/// The longest value a stand-in replaces; shorter than html2text's 998 columns with room for
/// the `<` and `>` around a link.
const MAX_VALUE: usize = 900;
/// Misses in a row after which most documents are laid out without a look.
const MISSES_BEFORE_PASSING: u32 = 8;
/// While passing, one document in this many is looked up.
const LOOK_EVERY: u32 = 16;
/// Opens a stand-in.
const OPEN: char = '\u{E000}';
/// Pads a stand-in to its value's width.
const PAD: char = '\u{E001}';
/// The stand-in's digits (the value's index) are `DIGIT_0` to `DIGIT_0 + 9`.
const DIGIT_0: u32 = 0xE010;
/// The private-use characters stand-ins are made of; HTML holding any is laid out on its own.
fn is_mark(c: char) -> bool {
    ('\u{E000}'..='\u{E01F}').contains(&c)
}

/// Whether `html` holds a character of the stand-ins' range (U+E000 to U+E01F are `EE 80 80` to
/// `EE 80 9F` in UTF-8; a first look for the lead byte finds none in most HTML).
fn holds_marks(html: &str) -> bool {
    html.as_bytes().contains(&0xEE) && html.chars().any(is_mark)
}

thread_local! {
    static KEPT_LAYOUTS: RefCell<Vec<(String, Rc<Kept>)>> = const { RefCell::new(Vec::new()) };
    /// Documents in a row not found among the kept layouts.
    static MISSES: Cell<u32> = const { Cell::new(0) };
}

/// After [`MISSES_BEFORE_PASSING`] documents in a row were not found (mail personal beyond its
/// links: a campaign whose every message reads its contact's fields), the next are laid out on
/// their own, without stand-ins, and only one in [`LOOK_EVERY`] is looked up: the stand-ins and
/// the keeping cost such mail about 7 % of its text part.
fn passes_over() -> bool {
    let misses = MISSES.get();
    let pass = misses >= MISSES_BEFORE_PASSING && !misses.is_multiple_of(LOOK_EVERY);
    if pass {
        MISSES.set(misses.wrapping_add(1));
    }
    pass
}

/// The lines of `lay_out(html, html.len())`, each wrapped by `wrap`, from a kept layout when one
/// fits; `None` when the layout is too large. `lay_out` is given the document to lay out and the
/// length its size limit is measured against.
pub(super) fn wrapped(
    html: &str,
    lay_out: impl Fn(&str, usize) -> Layout,
    wrap: impl Fn(&str, &mut String),
) -> Option<String> {
    let alone = || wrapped_alone(html, &lay_out, &wrap);
    if html.len() > MAX_HTML || holds_marks(html) || passes_over() {
        return alone();
    }
    let (stand_in, values) = stand_ins(html);
    let kept = KEPT_LAYOUTS.with_borrow_mut(|kept| {
        let at = kept.iter().position(|(key, _)| *key == stand_in)?;
        let entry = kept.remove(at);
        let layout = entry.1.clone();
        kept.insert(0, entry);
        Some(layout)
    });
    MISSES.set(if kept.is_some() { 0 } else { MISSES.get().wrapping_add(1) });
    let kept = kept.unwrap_or_else(|| {
        let layout = lay_out(&stand_in, html.len());
        let size = match &layout {
            Layout::Text(text) => text.len(),
            Layout::TooLarge => 0,
        };
        let layout = Rc::new(match layout {
            Layout::TooLarge => Kept::TooLarge,
            Layout::Text(text) => Kept::Lines(
                text.lines()
                    .map(|line| {
                        let line = line.trim_end();
                        if line.contains(is_mark) {
                            return Line::StoodIn(line.to_string());
                        }
                        let mut out = String::new();
                        wrap(line, &mut out);
                        Line::Wrapped(out)
                    })
                    .collect(),
            ),
        });
        if size <= MAX_KEPT_LAYOUT {
            KEPT_LAYOUTS.with_borrow_mut(|kept| {
                kept.truncate(KEPT - 1);
                kept.insert(0, (stand_in, layout.clone()));
            });
        }
        layout
    });
    let Kept::Lines(lines) = &*kept else { return None };
    let mut out = String::with_capacity(html.len());
    for line in lines {
        match line {
            Line::Wrapped(wrapped) => out.push_str(wrapped),
            Line::StoodIn(line) => match put_back(line, &values) {
                Some(line) => wrap(&line, &mut out),
                None => return alone(),
            },
        }
    }
    Some(out)
}

/// The lines of `html` laid out on its own, never from a kept layout, each wrapped by `wrap`;
/// `None` when the layout is too large.
pub(super) fn wrapped_alone(
    html: &str,
    lay_out: impl Fn(&str, usize) -> Layout,
    wrap: impl Fn(&str, &mut String),
) -> Option<String> {
    match lay_out(html, html.len()) {
        Layout::TooLarge => None,
        Layout::Text(text) => {
            let mut out = String::with_capacity(text.len() + text.len() / 64);
            text.lines().for_each(|line| wrap(line.trim_end(), &mut out));
            Some(out)
        }
    }
}

/// `html` with each quoted `href` and `src` value that may stand in swapped for a stand-in, and
/// the values in order.
fn stand_ins(html: &str) -> (String, Vec<&str>) {
    let bytes = html.as_bytes();
    let mut out = String::with_capacity(html.len() + html.len() / 4);
    let mut values = Vec::new();
    let (mut copied, mut at) = (0, 0);
    while let Some(found) = html[at..].find('=') {
        let eq = at + found;
        at = eq + 1;
        let name_start = html[..eq].trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
        let name = &html[name_start..eq];
        if !(name.eq_ignore_ascii_case("href") || name.eq_ignore_ascii_case("src"))
            || !bytes.get(name_start.wrapping_sub(1)).is_some_and(u8::is_ascii_whitespace)
        {
            continue;
        }
        let Some(&quote) = bytes.get(eq + 1).filter(|q| matches!(q, b'"' | b'\'')) else { continue };
        let Some(len) = html[eq + 2..].find(quote as char) else { break };
        let (start, end) = (eq + 2, eq + 2 + len);
        let value = &html[start..end];
        let digits = values.len().to_string();
        if !may_stand_in(value) || value.len() < digits.len() + 2 {
            continue;
        }
        out.push_str(&html[copied..start]);
        out.push(OPEN);
        out.extend(digits.bytes().map(|d| char::from_u32(DIGIT_0 + u32::from(d - b'0')).expect("a digit")));
        out.extend(std::iter::repeat_n(PAD, value.len() - digits.len() - 1));
        values.push(value);
        (copied, at) = (end, end);
    }
    out.push_str(&html[copied..]);
    (out, values)
}

/// A value html2text shows as it is, if at all: printable ASCII without entities or spaces, not
/// an anchor, not so long that a line of 998 columns would cut it.
fn may_stand_in(value: &str) -> bool {
    value.len() <= MAX_VALUE
        && !value.starts_with('#')
        && value.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'&' | b'"' | b'\'' | b'<' | b'>'))
}

/// `line` with each stand-in replaced by its value; `None` when one is not found whole.
fn put_back(line: &str, values: &[&str]) -> Option<String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(is_mark) {
        out.push_str(&rest[..at]);
        let mut chars = rest[at..].chars();
        if chars.next() != Some(OPEN) {
            return None;
        }
        let (mut index, mut width) = (0usize, 1usize);
        let mut chars = chars.peekable();
        while let Some(digit) =
            chars.peek().and_then(|&d| (d as u32).checked_sub(DIGIT_0)).filter(|d| *d < 10)
        {
            index = index.checked_mul(10)?.checked_add(digit as usize)?;
            width += 1;
            chars.next();
        }
        while chars.next_if_eq(&PAD).is_some() {
            width += 1;
        }
        let value = values.get(index).filter(|v| v.len() == width && width > 1)?;
        out.push_str(value);
        // Each mark is three bytes in UTF-8.
        rest = &rest[at + 3 * width..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_differing_only_in_its_links_is_laid_out_once() {
        let calls = std::cell::Cell::new(0);
        let lay_out = |html: &str, _: usize| {
            calls.set(calls.get() + 1);
            Layout::Text(html.replace("<a href=\"", "plain\n").replace("\">", " "))
        };
        let wrap = |line: &str, out: &mut String| {
            out.push_str(line);
            out.push('\n');
        };
        let one = wrapped("<a href=\"https://t.test/1111\">A", lay_out, wrap);
        let two = wrapped("<a href=\"https://t.test/2222\">A", lay_out, wrap);
        assert_eq!(calls.get(), 1);
        assert_eq!(one.as_deref(), Some("plain\nhttps://t.test/1111 A\n"));
        assert_eq!(two.as_deref(), Some("plain\nhttps://t.test/2222 A\n"));
        // Another width or another text is another layout; the first is still kept.
        wrapped("<a href=\"https://t.test/33333\">A", lay_out, wrap);
        wrapped("<a href=\"https://t.test/3333\">B", lay_out, wrap);
        wrapped("<a href=\"https://t.test/4444\">A", lay_out, wrap);
        assert_eq!(calls.get(), 3);
        // A layout that lost a stand-in is not used: the document is laid out on its own.
        let lossy = |html: &str, _: usize| {
            calls.set(calls.get() + 1);
            Layout::Text(html.chars().filter(|&c| c != PAD).collect())
        };
        let html = "<a href=\"https://t.test/5555\">C";
        assert_eq!(wrapped(html, lossy, wrap), Some(format!("{html}\n")));
        assert_eq!(calls.get(), 5);
        // After a run of documents found nowhere, most are laid out without a look, until a
        // look finds one again.
        for i in 0..40 {
            wrapped(&format!("<p>{i}</p><a href=\"https://t.test/7777\">D"), lay_out, wrap);
        }
        assert!(MISSES.get() > MISSES_BEFORE_PASSING);
        let calls_before = calls.get();
        for i in 0..40 {
            let html = format!("<p>same</p><a href=\"https://t.test/{:04}\">D", 8000 + i);
            assert_eq!(
                wrapped(&html, lay_out, wrap),
                Some(format!("<p>same</p>plain\nhttps://t.test/{} D\n", 8000 + i))
            );
        }
        assert!(calls.get() - calls_before < 40, "the layout is kept once looked up");
        assert_eq!(MISSES.get(), 0);
        // Too large stays too large.
        assert_eq!(wrapped("<a href=\"https://t.test/6666\">", |_, _| Layout::TooLarge, wrap), None);
    }

    #[test]
    fn stand_ins_have_their_values_width_and_come_back() {
        let html = "<a HREF='https://a.test/x?y=1'>A</a><img src=\"https://p.test/o.gif\" alt=\"\">\
                    <a href=\"#top\">top</a><a href=\"https://b.test/?a=1&amp;b=2\">B</a><p>src=x href=\"https://c.test\"</p>";
        let (stand_in, values) = stand_ins(html);
        assert_eq!(values, ["https://a.test/x?y=1", "https://p.test/o.gif", "https://c.test"]);
        assert_eq!(stand_in.chars().count(), html.chars().count(), "{stand_in}");
        assert!(stand_in.contains("href=\"#top\"") && stand_in.contains("&amp;b=2"), "{stand_in}");
        assert_eq!(put_back(&stand_in, &values).as_deref(), Some(html));
        assert_eq!(put_back("no stand-in", &values).as_deref(), Some("no stand-in"));
        // A stand-in cut short, or a mark out of place, is refused.
        let cut: String = stand_in.chars().filter(|&c| c != PAD).collect();
        assert_eq!(put_back(&cut, &values), None);
        assert_eq!(put_back("x\u{E001}", &values), None);
    }
}
