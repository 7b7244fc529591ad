//! Tracking in a message an app wrote (SMTP submission): its HTML parts rewritten (click links,
//! the open pixel) and everything else left byte for byte. A rewritten part keeps its headers,
//! but for `Content-Transfer-Encoding`, which becomes base64 (the new body encoded by the base64
//! crate). Only parts in UTF-8 or US-ASCII are rewritten, so the text put back is in the charset
//! the part declares; an attached HTML file, a part in another charset and a forwarded message
//! inside stay as they are.

use std::ops::Range;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mail_parser::{HeaderName, MessageParser, MimeHeaders, PartType};

/// `raw` with each HTML part's text replaced by what `rewrite` makes of it; `raw` itself when
/// nothing changed.
pub fn rewrite_html(raw: &[u8], rewrite: impl Fn(&str) -> String) -> Vec<u8> {
    let Some(message) = MessageParser::default().parse(raw) else { return raw.to_vec() };
    let mut edits: Vec<(Range<usize>, Vec<u8>)> = Vec::new();
    for part in &message.parts {
        let PartType::Html(html) = &part.body else { continue };
        if part.content_disposition().is_some_and(|d| d.is_attachment()) {
            continue;
        }
        let charset = part.content_type().and_then(|t| t.attribute("charset")).unwrap_or("us-ascii");
        if !["utf-8", "utf8", "us-ascii", "ascii"].iter().any(|c| charset.eq_ignore_ascii_case(c)) {
            continue;
        }
        let rewritten = rewrite(html);
        if rewritten == html.as_ref() {
            continue;
        }
        let (header, body, end) =
            (part.offset_header as usize, part.offset_body as usize, part.offset_end as usize);
        // The part's header section, less its transfer encoding; the blank line after it comes back below.
        let mut head = Vec::with_capacity(body - header + 40);
        let mut at = header;
        for h in part.headers.iter().filter(|h| h.name == HeaderName::ContentTransferEncoding) {
            head.extend_from_slice(&raw[at..h.offset_field as usize]);
            at = h.offset_end as usize;
        }
        let rest = &raw[at..body];
        let section = rest.strip_suffix(b"\r\n").or_else(|| rest.strip_suffix(b"\n")).unwrap_or(rest);
        head.extend_from_slice(section);
        head.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n\r\n");
        let encoded = STANDARD.encode(rewritten.as_bytes());
        let lines: Vec<&[u8]> = encoded.as_bytes().chunks(76).collect();
        head.extend_from_slice(&lines.join(&b"\r\n"[..]));
        if raw[..end].ends_with(b"\n") {
            head.extend_from_slice(b"\r\n");
        }
        edits.push((header..end, head));
    }
    if edits.is_empty() {
        return raw.to_vec();
    }
    edits.sort_by_key(|(range, _)| range.start);
    let mut out = Vec::with_capacity(raw.len() + 1024);
    let mut at = 0;
    for (range, replacement) in edits {
        if range.start < at {
            continue;
        }
        out.extend_from_slice(&raw[at..range.start]);
        out.extend_from_slice(&replacement);
        at = range.end;
    }
    out.extend_from_slice(&raw[at..]);
    out
}

#[cfg(test)]
mod tests {
    use mail_parser::MessageParser;

    use super::rewrite_html;

    const MIXED: &[u8] = b"From: a@example.com\r\nSubject: Hi\r\nContent-Type: multipart/mixed; boundary=\"o\"\r\n\r\n\
--o\r\nContent-Type: multipart/alternative; boundary=\"i\"\r\n\r\n\
--i\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee https://example.org\r\n\
--i\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<a href=3D\"https://example.org\">caf=C3=A9</a>\r\n\
--i--\r\n\
--o\r\nContent-Type: text/html; charset=utf-8\r\nContent-Disposition: attachment; filename=\"page.html\"\r\n\r\n<a href=\"https://example.org\">file</a>\r\n\
--o--\r\n";

    #[test]
    fn the_html_part_is_rewritten_and_the_rest_stays_as_written() {
        let out = rewrite_html(MIXED, |html| html.replace("https://example.org", "https://t.example/c"));
        let message = MessageParser::default().parse(&out).unwrap();
        assert_eq!(message.body_html(0).unwrap(), "<a href=\"https://t.example/c\">café</a>");
        assert_eq!(message.body_text(0).unwrap(), "See https://example.org");
        let attached = message.attachments().next().unwrap();
        assert_eq!(
            attached.contents(),
            b"<a href=\"https://example.org\">file</a>",
            "an attached page stays"
        );
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.starts_with("From: a@example.com\r\nSubject: Hi\r\n"), "{text}");
        assert!(text.contains(
            "--i\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nSee https://example.org\r\n--i\r\n"
        ));
        assert!(!text.contains("quoted-printable"), "{text}");
        assert!(text.contains("Content-Transfer-Encoding: base64\r\n\r\n"), "{text}");
        assert!(text.ends_with("--o--\r\n"), "{text}");
    }

    #[test]
    fn a_message_that_is_one_html_part_or_has_none_to_change_is_kept() {
        let single = b"From: a@example.com\r\nContent-Type: text/html\r\n\r\n<p>hi</p>\r\n";
        let out = rewrite_html(single, |html| html.replace("<p>", "<p class=x>"));
        let message = MessageParser::default().parse(&out).unwrap();
        assert_eq!(message.body_html(0).unwrap(), "<p class=x>hi</p>\r\n");
        assert_eq!(message.from().unwrap().first().unwrap().address(), Some("a@example.com"));
        assert_eq!(rewrite_html(MIXED, str::to_string), MIXED, "nothing changed, nothing touched");
        let latin =
            b"From: a@example.com\r\nContent-Type: text/html; charset=iso-8859-1\r\n\r\n<p>caf\xe9</p>\r\n";
        assert_eq!(rewrite_html(latin, |h| h.replace("p", "div")), latin, "another charset is left alone");
    }
}
