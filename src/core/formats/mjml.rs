//! MJML to HTML by mrml, within limits counted before mrml sees the text: mrml's parser and
//! renderer recurse once per level of nesting, so a text nested a few thousand deep would
//! overflow a thread's stack and take the process down; and every element expands to tables,
//! so a count of elements bounds the work and the output. `mj-include` loads nothing (mrml's
//! default loader refuses every path).

use std::panic::{AssertUnwindSafe, catch_unwind};

/// A compiler's refusal of a source.
#[derive(Debug)]
pub struct CompileError {
    pub message: String,
    /// Whether a limit refused it (nesting, size), rather than its syntax.
    pub limit: bool,
}

/// Levels of elements (MJML and HTML within it) a text may nest. Real mail nests a dozen or so;
/// 40 levels fit well inside a 2 MiB thread stack even in a debug build (tested).
pub const MAX_DEPTH: usize = 40;
/// Elements a text may hold.
pub const MAX_ELEMENTS: usize = 5000;

/// Elements that never have content, so never open a level.
const VOID: &[&str] =
    &["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"];

/// Renders `text` (MJML) to HTML.
pub fn to_html(text: &str) -> Result<String, CompileError> {
    check_shape(text)?;
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        let parsed = mrml::parse(text).map_err(|e| e.to_string())?;
        // No fonts fetched from Google unless the MJML names them with <mj-font>: an implicit
        // import would make every open of the mail a request to a third party.
        let options =
            mrml::prelude::render::RenderOptions { fonts: Default::default(), ..Default::default() };
        parsed.element.render(&options).map_err(|e| e.to_string())
    }));
    match rendered {
        Ok(Ok(html)) => Ok(html),
        Ok(Err(message)) => Err(CompileError { message: describe(&message), limit: false }),
        Err(_) => Err(CompileError { message: "the MJML could not be rendered".into(), limit: false }),
    }
}

/// mrml's messages are for programmers ("unexpected token in root template at position 0:8");
/// the most common ones get a sentence an author can act on.
fn describe(message: &str) -> String {
    if message.contains("end of stream") {
        return format!("{message}: an element is not closed");
    }
    if message.contains("root template") && message.contains("unexpected token")
        || message.contains("unable to parse next template")
    {
        return format!("{message}: an MJML text starts with <mjml> and holds an <mj-body>");
    }
    message.to_string()
}

/// Refuses a text nested deeper than [`MAX_DEPTH`] or with more than [`MAX_ELEMENTS`]
/// elements. The count is lexical and errs on the side of depth: every `<name` that is not a
/// void element and does not end in `/>` opens a level, every `</` closes one, and so do
/// Outlook's conditional comments. It does not depend on the text being well formed (a
/// tokenizer that stopped at its first error let a deep tail through to mrml, found by the
/// fuzzer).
fn check_shape(text: &str) -> Result<(), CompileError> {
    let bytes = text.as_bytes();
    let (mut depth, mut elements) = (0usize, 0usize);
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'<', &bytes[at..]) {
        let start = at + found;
        let rest = &bytes[start + 1..];
        at = start + 1;
        match rest.first() {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(b'!') if rest.starts_with(b"!--[if") || rest.starts_with(b"![if") => depth += 1,
            Some(b'!') if rest.starts_with(b"![endif") => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                elements += 1;
                let name_end = rest
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'-'))
                    .unwrap_or(rest.len());
                let name = &rest[..name_end];
                let close = memchr::memchr(b'>', rest).unwrap_or(rest.len());
                let empty = close > 0 && rest[close - 1] == b'/';
                let void = VOID.iter().any(|v| v.as_bytes().eq_ignore_ascii_case(name));
                if !empty && !void {
                    depth += 1;
                }
            }
            _ => {}
        }
        if depth > MAX_DEPTH {
            return Err(CompileError {
                message: format!("elements nest at most {MAX_DEPTH} deep"),
                limit: true,
            });
        }
        if elements > MAX_ELEMENTS {
            return Err(CompileError {
                message: format!("a body holds at most {MAX_ELEMENTS} elements"),
                limit: true,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, n: usize) -> String {
        format!(
            "<mjml><mj-body><mj-section><mj-column><mj-text>{}x{}</mj-text></mj-column></mj-section></mj-body></mjml>",
            open.repeat(n),
            close.repeat(n)
        )
    }

    #[test]
    fn deep_texts_are_refused_before_mrml_sees_them() {
        // Each of these overflowed the stack (the process aborts, no panic to catch).
        for text in [
            nested("<div>", "</div>", 20_000),
            format!(
                "<mjml><mj-body>{}{}</mj-body></mjml>",
                "<mj-wrapper>".repeat(5000),
                "</mj-wrapper>".repeat(5000)
            ),
            nested("<!--[if mso]>", "<![endif]-->", 20_000),
        ] {
            let e = to_html(&text).unwrap_err();
            assert!(e.limit && e.message.contains("nest at most"), "{}", e.message);
        }
        // As deep as allowed renders, on a thread with the stack a worker has.
        let deepest = nested("<div>", "</div>", MAX_DEPTH - 5);
        let wrappers = format!(
            "<mjml><mj-body>{}{}</mj-body></mjml>",
            "<mj-wrapper>".repeat(MAX_DEPTH - 2),
            "</mj-wrapper>".repeat(MAX_DEPTH - 2)
        );
        let worker = std::thread::Builder::new().stack_size(2 << 20);
        let done = worker.spawn(move || to_html(&deepest).is_ok() && to_html(&wrappers).is_ok()).unwrap();
        assert!(done.join().unwrap());
        // Void elements open no level.
        assert!(to_html(&nested("<br>", "", 500)).is_ok());
    }

    #[test]
    fn element_count_and_includes() {
        let many = format!("<mjml><mj-body>{}</mj-body></mjml>", "<mj-spacer />".repeat(MAX_ELEMENTS + 1));
        assert!(to_html(&many).unwrap_err().limit);
        let include = "<mjml><mj-body><mj-include path=\"/etc/passwd\" /></mj-body></mjml>";
        let e = to_html(include).unwrap_err();
        assert!(!e.limit && e.message.contains("include"), "{}", e.message);
        let e = to_html("hello").unwrap_err();
        assert!(e.message.contains("starts with <mjml>"), "{}", e.message);
    }
}
