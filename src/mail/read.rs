//! Reading a whole message back (mail-parser): its headers in order, unfolded; its text and
//! HTML bodies; its attachments; and the few fields Tidings acts on. The outbox shows captured
//! messages with it, and inbound mail is read with it.

use mail_parser::{MessageParser, MimeHeaders};

/// A header, unfolded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// An attachment (or inline part with a name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub filename: Option<String>,
    /// `type/subtype`.
    pub content_type: String,
    pub content: Vec<u8>,
}

/// What a message says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Read {
    pub headers: Vec<Header>,
    /// The From header's first address (lowercase) and display name.
    pub from: Option<(String, Option<String>)>,
    pub subject: String,
    /// `<…>`.
    pub message_id: Option<String>,
    /// The Message-IDs it answers (`<…>`): In-Reply-To's, then References' newest first.
    pub answers: Vec<String>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<Attachment>,
}

impl Read {
    /// What recording a message needs of it (sender, subject, ids), without its headers,
    /// bodies and attachments.
    pub fn summary(&self) -> Read {
        Read {
            from: self.from.clone(),
            subject: self.subject.clone(),
            message_id: self.message_id.clone(),
            answers: self.answers.clone(),
            ..Read::default()
        }
    }
}

/// Most Message-IDs of In-Reply-To and References looked at.
const MAX_ANSWERS: usize = 20;

/// The message `raw`; an empty reading when it has no header at all.
pub fn read(raw: &[u8]) -> Read {
    let Some(message) = MessageParser::default().parse(raw) else { return Read::default() };
    let headers = message
        .headers_raw()
        .map(|(name, value)| Header {
            name: name.to_string(),
            value: value.replace("\r\n", "").replace('\n', "").trim().to_string(),
        })
        .collect();
    let from = message.from().and_then(|a| a.first()).and_then(|addr| {
        let address = addr.address.as_deref()?.trim().to_ascii_lowercase();
        Some((address, addr.name.as_deref().map(str::to_string).filter(|n| !n.trim().is_empty())))
    });
    let bracket = |id: &str| format!("<{}>", id.trim().trim_start_matches('<').trim_end_matches('>'));
    let mut answers: Vec<String> = Vec::new();
    let replied = message.in_reply_to().as_text_list().unwrap_or_default().iter();
    let referenced = message.references().as_text_list().unwrap_or_default().iter().rev();
    for id in replied.chain(referenced) {
        let id = bracket(id);
        if answers.len() < MAX_ANSWERS && !answers.contains(&id) {
            answers.push(id);
        }
    }
    let attachments = message
        .attachments()
        .map(|part| Attachment {
            filename: part.attachment_name().map(str::to_string),
            content_type: part
                .content_type()
                .map(|t| match t.subtype() {
                    Some(sub) => format!("{}/{sub}", t.ctype()),
                    None => t.ctype().to_string(),
                })
                .unwrap_or_else(|| "application/octet-stream".into())
                .to_ascii_lowercase(),
            content: part.contents().to_vec(),
        })
        .collect();
    Read {
        headers,
        from,
        subject: message.subject().unwrap_or_default().replace(['\r', '\n'], " ").trim().to_string(),
        message_id: message.message_id().map(bracket),
        answers,
        text: message.body_text(0).map(|t| t.into_owned()),
        html: message.body_html(0).map(|h| h.into_owned()),
        attachments,
    }
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn a_reply_names_what_it_answers_and_its_parts_are_read() {
        let raw = b"From: \"Ada\" <Ada@Example.org>\r\nTo: support@acme.test\r\nSubject: Re: Your\r\n order\r\nMessage-ID: <r1@example.org>\r\nIn-Reply-To: <m1@acme.test>\r\nReferences: <m0@acme.test> <m1@acme.test>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nThanks!\r\n--b\r\nContent-Type: application/pdf; name=a.pdf\r\nContent-Disposition: attachment; filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERg==\r\n--b--\r\n";
        let r = read(raw);
        assert_eq!(r.from, Some(("ada@example.org".into(), Some("Ada".into()))));
        assert_eq!(r.subject, "Re: Your order");
        assert_eq!(r.message_id.as_deref(), Some("<r1@example.org>"));
        assert_eq!(r.answers, ["<m1@acme.test>", "<m0@acme.test>"]);
        assert_eq!(r.text.as_deref().map(str::trim), Some("Thanks!"));
        assert_eq!(r.attachments.len(), 1);
        assert_eq!(r.attachments[0].filename.as_deref(), Some("a.pdf"));
        assert_eq!(r.attachments[0].content_type, "application/pdf");
        assert_eq!(r.attachments[0].content, b"%PDF");
        assert_eq!(r.headers[2].value, "Re: Your order");
        assert_eq!(read(b"").from, None);
    }
}
