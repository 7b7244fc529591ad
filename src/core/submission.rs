//! SMTP submission (issue 31): what a message another app submitted becomes. The same as a
//! `/v1/send` of it: its recipients' contacts upserted by the send rules (a new contact is not
//! subscribed to marketing mail), the sender domain verified, MARKETING mail only to subscribed
//! contacts, one email row per recipient through [`outbound::queue`], so delivery, DKIM,
//! `email.*` events, webhooks, the activity feed and the outbox follow as for any email.
//!
//! The message is kept as the app wrote it (headers, MIME structure, attachments, its
//! Message-ID): stored once for all its recipients, delivered with Tidings' headers and DKIM
//! signature added. Tidings reads only what it needs (From, Subject, Message-ID) and two
//! headers of its own, which it takes out: `X-Tidings-Type: marketing` (the marketing rules and
//! List-Unsubscribe) and `X-Tidings-Track`. A message submitted again (its Message-ID to the same
//! recipient) is not queued again, so an app that retries after a lost reply sends nothing twice.

use mail_parser::{HeaderName, MessageParser};

use super::consent::may_send;
use super::contacts::{self as core_contacts, Upsert};
use super::data::DataPatch;
use super::domains::{candidates, require_verified_sender};
use super::error::{Error, FieldError, Forbidden, Result};
use super::fields::FieldChanges;
use super::outbound::{self, Draft};
use super::smtp_credentials::Submitter;
use super::vocabulary::{EmailKind, EmailSource};
use crate::db::Tx;
use crate::db::contacts::Indexing;
use crate::db::email_parts::{self, RawMessage};
use crate::db::emails;

/// The headers of Tidings' own a submitted message may carry, taken out before it is sent.
const OWN_HEADERS: [&str; 2] = ["x-tidings-type", "x-tidings-track"];

/// A submitted message, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Submitted {
    /// The From header's address (normalised) and name.
    pub from: (String, Option<String>),
    pub subject: String,
    /// `<…>`, as the message gives it (one is added when it has none).
    pub message_id: String,
    pub kind: EmailKind,
    /// What `X-Tidings-Track` asks to track (`opens`, `clicks`; empty for `none`); `None`
    /// without the header (the credential's default holds).
    pub track: Option<Vec<String>>,
    /// The message as written, less Tidings' own headers (and with a Message-ID).
    pub raw: Vec<u8>,
}

/// `X-Tidings-Track`'s value: `opens`, `clicks` or both (separated by commas or spaces), or `none`.
fn tracking(value: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for word in value.split([',', ' ', '\t']).map(str::trim).filter(|w| !w.is_empty()) {
        let word = word.to_ascii_lowercase();
        match word.as_str() {
            "none" => {}
            "opens" | "clicks" if !out.contains(&word) => out.push(word),
            "opens" | "clicks" => {}
            _ => {
                return Err(Error::invalid(
                    "X-Tidings-Track",
                    "invalid_enum_value",
                    format!("X-Tidings-Track lists opens and clicks, or says none (found {value:?})"),
                ));
            }
        }
    }
    Ok(out)
}

/// Reads a submitted message (CPU work: run it off the executor).
pub fn read(raw: &[u8]) -> Result<Submitted> {
    let message = MessageParser::default()
        .parse_headers(raw)
        .ok_or_else(|| Error::malformed("the message has no header section"))?;
    let from = message
        .from()
        .and_then(|f| f.first())
        .and_then(|a| Some((a.address()?.to_string(), a.name().map(str::to_string))))
        .ok_or_else(|| Error::invalid("from", "required", "the message has no From address"))?;
    let address = super::email::normalize(&from.0)
        .map_err(|why| Error::invalid("from", "invalid_string", format!("the From address {why}")))?;
    let kind = match message.header_raw("X-Tidings-Type").map(str::trim) {
        None => EmailKind::Transactional,
        Some(t) if t.eq_ignore_ascii_case("marketing") => EmailKind::Marketing,
        Some(t) if t.eq_ignore_ascii_case("transactional") => EmailKind::Transactional,
        Some(other) => {
            return Err(Error::invalid(
                "X-Tidings-Type",
                "invalid_enum_value",
                format!("X-Tidings-Type is marketing or transactional (found {other:?})"),
            ));
        }
    };
    let track = message.header_raw("X-Tidings-Track").map(tracking).transpose()?;
    // Tidings' own headers go; the rest stays byte for byte.
    let mut kept = Vec::with_capacity(raw.len() + 80);
    let mut at = 0;
    for header in message.headers() {
        if let HeaderName::Other(name) = &header.name
            && OWN_HEADERS.iter().any(|own| name.eq_ignore_ascii_case(own))
        {
            kept.extend_from_slice(&raw[at..header.offset_field as usize]);
            at = header.offset_end as usize;
        }
    }
    kept.extend_from_slice(&raw[at..]);
    let message_id = match message.message_id() {
        Some(id) => format!("<{id}>"),
        None => {
            let id = super::compose::message_id(&address);
            let mut with_id = format!("Message-ID: {id}\r\n").into_bytes();
            with_id.extend_from_slice(&kept);
            kept = with_id;
            id
        }
    };
    let subject = message.subject().unwrap_or_default().replace(['\r', '\n'], " ");
    Ok(Submitted { from: (address, from.1), subject, message_id, kind, track, raw: kept })
}

/// One recipient's email, as the submission queued it (or found it queued before).
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    pub to: String,
    /// `None` for a recipient the message was already submitted to.
    pub email_id: Option<String>,
}

/// Queues `message` to each of `recipients` (envelope addresses, normalised) for `submitter`.
/// Refused as a whole when the From domain is not one the credential may use or not verified in
/// the project.
pub fn submit(
    tx: &Tx,
    submitter: &Submitter,
    recipients: &[String],
    mut message: Submitted,
    now: i64,
) -> Result<Vec<Queued>> {
    let project = submitter.project.id.as_str();
    let domain = message.from.0.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
    if let Some(allowed) = submitter.credential.as_ref().and_then(|c| c.allowed_from_domains.as_ref())
        && !candidates(domain).iter().any(|d| allowed.contains(d))
    {
        return Err(Error::Forbidden(Forbidden::Denied(format!(
            "this credential may not send from {domain}"
        ))));
    }
    require_verified_sender(tx, project, &message.from.0)?;
    let mut fields = FieldChanges::default();
    let mut raw_id = None;
    let mut out = Vec::with_capacity(recipients.len());
    for to in recipients {
        if emails::has_message_to(tx, project, &message.message_id, to)? {
            out.push(Queued { to: to.clone(), email_id: None });
            continue;
        }
        let upsert = Upsert {
            email: to,
            subscribed: None,
            default_subscribed: false,
            data: &DataPatch::default(),
            source: "smtp",
            indexing: Indexing::AtCommit,
            new_likely: false,
        };
        let contact = core_contacts::upsert(tx, project, &upsert, &mut fields, now)?.contact;
        let refused =
            may_send(message.kind.as_str(), &contact, None, now).err().map(|why| format!("not sent: {why}"));
        let raw = match &raw_id {
            Some(id) => id,
            None => {
                let track = message.track.clone().unwrap_or_else(|| {
                    submitter.credential.as_ref().map(|c| c.track.clone()).unwrap_or_default()
                });
                // The bytes move into the row: no copy of a large message on the writer's thread.
                let kept = RawMessage { content: std::mem::take(&mut message.raw), track };
                raw_id.insert(email_parts::insert_raw_message(tx, project, &kept, now)?)
            }
        };
        let draft = Draft {
            project_id: project.into(),
            contact_id: Some(contact.id.clone()),
            to: (to.clone(), None),
            from: message.from.clone(),
            subject: message.subject.clone(),
            kind: message.kind.into(),
            message_id: Some(message.message_id.clone()),
            raw_message: Some(raw.clone()),
            refused,
            ..Draft::default()
        };
        let email = outbound::queue(tx, EmailSource::Transactional, draft, now)?;
        out.push(Queued { to: to.clone(), email_id: Some(email.id) });
    }
    fields.save(tx, project)?;
    // None of its emails may go (all refused): the message is not kept.
    if let Some(id) = &raw_id {
        email_parts::drop_raw_message_when_done(tx, id)?;
    }
    Ok(out)
}

/// The field problems of a refused message as one line, for an SMTP reply.
pub fn reason(errors: &[FieldError]) -> String {
    errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &[u8] = b"From: Gitea <gitea@example.com>\r\nTo: ada@example.org\r\nX-Tidings-Type: marketing\r\nSubject: Your\r\n digest\r\nX-Tidings-Track: Clicks, opens\r\nMessage-ID: <abc@example.com>\r\nContent-Type: text/plain\r\n\r\nHello\r\n";

    #[test]
    fn a_message_is_read_and_kept_as_written_less_tidings_headers() {
        let read = read(MESSAGE).unwrap();
        assert_eq!(read.from, ("gitea@example.com".to_string(), Some("Gitea".to_string())));
        assert_eq!((read.subject.as_str(), read.message_id.as_str()), ("Your digest", "<abc@example.com>"));
        assert_eq!(read.kind, EmailKind::Marketing);
        assert_eq!(read.track, Some(vec!["clicks".to_string(), "opens".to_string()]));
        assert_eq!(
            String::from_utf8(read.raw).unwrap(),
            "From: Gitea <gitea@example.com>\r\nTo: ada@example.org\r\nSubject: Your\r\n digest\r\nMessage-ID: <abc@example.com>\r\nContent-Type: text/plain\r\n\r\nHello\r\n"
        );
    }

    #[test]
    fn a_message_without_an_id_gets_one_and_without_a_sender_is_refused() {
        let read = read(b"From: a@example.com\r\n\r\nHi\r\n").unwrap();
        assert!(read.message_id.ends_with("@example.com>"), "{}", read.message_id);
        assert!(read.raw.starts_with(format!("Message-ID: {}\r\nFrom:", read.message_id).as_bytes()));
        assert_eq!((read.kind, read.track), (EmailKind::Transactional, None));
        let none = super::read(b"From: a@example.com\r\nX-Tidings-Track: none\r\n\r\nHi\r\n").unwrap();
        assert_eq!(none.track, Some(vec![]));
        let odd =
            super::read(b"From: a@example.com\r\nX-Tidings-Track: everything\r\n\r\nHi\r\n").unwrap_err();
        assert_eq!(odd.fields()[0].field, "X-Tidings-Track");
        assert_eq!(super::read(b"Subject: x\r\n\r\nHi\r\n").unwrap_err().fields()[0].field, "from");
        let odd = super::read(b"From: a@example.com\r\nX-Tidings-Type: bulk\r\n\r\nHi\r\n").unwrap_err();
        assert_eq!(odd.fields()[0].field, "X-Tidings-Type");
    }
}
