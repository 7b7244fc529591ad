//! Building the MIME message: multipart/alternative (the HTML and a text part made from it),
//! inline images beside it in multipart/related, attachments in multipart/mixed around that,
//! and the headers of appliance.md section 5.

use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use lettre::Message;
use lettre::message::header::{ContentDisposition, ContentId, ContentType, HeaderName, HeaderValue};
use lettre::message::{Attachment as Part, Mailbox, MultiPart, SinglePart};
use serde::{Deserialize, Serialize};

use super::text::text_of;

/// An attachment as sent and as stored: `{filename, content (base64), contentType, contentId?,
/// inline}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    /// Base64 of the bytes.
    pub content: String,
    /// The part's `Content-ID`, which the HTML names as `cid:<contentId>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_id: Option<String>,
    /// Shown in the body (`Content-Disposition: inline`, beside the HTML in multipart/related)
    /// rather than as a file.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inline: bool,
}

/// Everything a message is made of, rendered.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub message_id: String,
    pub from: (String, Option<String>),
    pub to: (String, Option<String>),
    pub reply_to: Option<String>,
    pub subject: String,
    pub html: String,
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<Attachment>,
    /// The one-click unsubscribe URL (MARKETING mail).
    pub unsubscribe: Option<String>,
}

fn mailbox(address: &str, name: Option<&str>) -> Result<Mailbox, String> {
    let address = address.parse().map_err(|e| format!("bad address {address}: {e}"))?;
    Ok(Mailbox::new(name.map(str::to_string), address))
}

/// An attachment's MIME part: inline (with its `Content-ID`) or a file (with it when given).
fn part(a: &Attachment) -> Result<SinglePart, String> {
    let bytes = STANDARD.decode(&a.content).map_err(|e| format!("attachment {}: {e}", a.filename))?;
    let content_type = ContentType::parse(&a.content_type)
        .unwrap_or(ContentType::parse("application/octet-stream").expect("a valid type"));
    Ok(match (&a.content_id, a.inline) {
        (Some(id), true) => {
            Part::new_inline_with_name(id.clone(), a.filename.clone()).body(bytes, content_type)
        }
        (Some(id), false) => SinglePart::builder()
            .header(ContentDisposition::attachment(&a.filename))
            .header(ContentId::from(format!("<{id}>")))
            .header(content_type)
            .body(bytes),
        (None, _) => Part::new(a.filename.clone()).body(bytes, content_type),
    })
}

/// The message as bytes, ready to sign and send.
pub fn build(o: &Outgoing) -> Result<Vec<u8>, String> {
    let mut builder = Message::builder()
        .message_id(Some(o.message_id.clone()))
        .date(SystemTime::now())
        .from(mailbox(&o.from.0, o.from.1.as_deref())?)
        .to(mailbox(&o.to.0, o.to.1.as_deref())?)
        .subject(o.subject.clone());
    if let Some(reply) = &o.reply_to {
        builder = builder.reply_to(mailbox(reply, None)?);
    }
    for (name, value) in &o.headers {
        let name =
            HeaderName::new_from_ascii(name.clone()).map_err(|e| format!("bad header name {name}: {e}"))?;
        builder = builder.raw_header(HeaderValue::new(name, value.clone()));
    }
    for (name, value) in o.unsubscribe.as_deref().map(unsubscribe_headers).unwrap_or_default() {
        builder = builder.raw_header(HeaderValue::new(
            HeaderName::new_from_ascii(name).map_err(|e| e.to_string())?,
            value,
        ));
    }
    let alternative = MultiPart::alternative_plain_html(text_of(&o.html), o.html.clone());
    let (inline, attached): (Vec<&Attachment>, Vec<&Attachment>) =
        o.attachments.iter().partition(|a| a.inline);
    let content = if inline.is_empty() {
        alternative
    } else {
        let mut related = MultiPart::related().multipart(alternative);
        for a in inline {
            related = related.singlepart(part(a)?);
        }
        related
    };
    let body = if attached.is_empty() {
        content
    } else {
        let mut mixed = MultiPart::mixed().multipart(content);
        for a in attached {
            mixed = mixed.singlepart(part(a)?);
        }
        mixed
    };
    let message = builder.multipart(body).map_err(|e| format!("building the message: {e}"))?;
    Ok(message.formatted())
}

/// A message as its author wrote it, with `headers` added on top (a submitted message: its own
/// headers and body stay byte for byte), ready to sign and send. The values are Tidings' own, one
/// line each. The last line break goes: the SMTP client ends the data with `CRLF . CRLF`, which
/// gives it back (as built messages, which have none, get theirs).
pub fn with_headers(raw: &[u8], headers: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 256);
    for (name, value) in headers {
        out.extend_from_slice(format!("{name}: {}\r\n", value.replace(['\r', '\n'], " ")).as_bytes());
    }
    out.extend_from_slice(raw.strip_suffix(b"\r\n").unwrap_or(raw));
    out
}

/// The List-Unsubscribe headers of marketing mail (RFC 8058 one-click) for `url`.
pub fn unsubscribe_headers(url: &str) -> Vec<(String, String)> {
    vec![
        ("List-Unsubscribe".to_string(), format!("<{url}>")),
        ("List-Unsubscribe-Post".to_string(), "List-Unsubscribe=One-Click".to_string()),
    ]
}
