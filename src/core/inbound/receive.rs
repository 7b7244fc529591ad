//! What receiving a message does for one project, in one transaction: the message is recorded
//! (its content kept when a route stores it, until its project's retention, `[retention] inbound_days` by default); the sender's
//! contact is found or made (not subscribed) and gets the event `email.received`, so webhooks
//! fire and workflows start; a reply to an email of ours (In-Reply-To or References names its
//! Message-ID) records `email.replied` on that email's contact and counts in its campaign; and
//! each route's actions run: a delivery to its webhook endpoint, a forward queued as an email.
//!
//! The same message received again (a sender retrying after a lost reply) is recorded again:
//! the SMTP reply is sent only after the commit, so a retry only follows a failure to answer.

use serde_json::json;

use super::auth::Verdicts;
use super::routes::{self, Action};
use crate::core::contacts::{self as core_contacts, Upsert};
use crate::core::data::DataPatch;
use crate::core::error::{Error, Result};
use crate::core::events::{self, email_data};
use crate::core::fields::FieldChanges;
use crate::core::outbound::{self, Draft};
use crate::core::vocabulary::{EmailKind, EmailSource};
use crate::core::webhooks;
use crate::db::Tx;
use crate::db::contacts::Indexing;
use crate::db::email_parts::{self, RawMessage};
use crate::db::emails;
use crate::db::inbound::{self as rows, Message, Route};
use crate::mail::read::Read;

/// Most `Received:` headers of a message taken: more is a loop.
const MAX_HOPS: usize = 50;

/// Whether `raw` has been through more servers than mail ever needs: a forwarding loop.
pub fn looped(raw: &[u8]) -> bool {
    let end = memchr::memmem::find(raw, b"\r\n\r\n").unwrap_or(raw.len());
    let hops = raw[..end]
        .split(|&b| b == b'\n')
        .filter(|line| line.len() >= 9 && line[..9].eq_ignore_ascii_case(b"received:"))
        .count();
    hops > MAX_HOPS
}

/// `email.received`.
pub const RECEIVED: &str = "email.received";
/// `email.replied`.
pub const REPLIED: &str = "email.replied";

/// How the message arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub peer: String,
    pub helo: String,
    pub mail_from: String,
}

/// One project's share of a received message, read off the writer's thread.
pub struct Incoming {
    /// The message's id (made before the write, so a webhook payload can name it).
    pub id: String,
    pub project: String,
    /// This project's recipients, each with the route that took it.
    pub recipients: Vec<(String, Route)>,
    pub envelope: Envelope,
    pub verdicts: Verdicts,
    /// What recording needs of the message ([`Read::summary`]).
    pub read: Read,
    pub raw: Vec<u8>,
}

impl Incoming {
    /// Whether a route of the message keeps its content.
    pub fn stored(&self) -> bool {
        self.actions().any(|(_, a)| a == Action::Store)
    }

    /// Whether a route posts it to a webhook.
    pub fn posted(&self) -> bool {
        self.actions().any(|(_, a)| matches!(a, Action::Webhook { .. }))
    }

    /// Each distinct route's actions, with the recipient that reached the route first.
    fn actions(&self) -> impl Iterator<Item = (&str, Action)> {
        let mut seen: Vec<&str> = Vec::new();
        self.recipients
            .iter()
            .filter(move |(_, route)| {
                let new = !seen.contains(&route.id.as_str());
                seen.push(route.id.as_str());
                new
            })
            .flat_map(|(to, route)| routes::actions(route).into_iter().map(move |a| (to.as_str(), a)))
    }
}

/// Records `incoming` at `now`, kept for its project's retention (`defaults` with the project's
/// own period); `payload` makes a webhook's body from
/// the recorded message (called only when a route posts to a webhook).
pub fn record(
    tx: &Tx,
    incoming: Incoming,
    defaults: crate::core::retention::Policy,
    now: i64,
    payload: impl FnOnce(&Message) -> String,
) -> Result<Message> {
    let project = incoming.project.as_str();
    let retention_ms = crate::core::retention::policy(tx, project, defaults)?.inbound_ms();
    let (from, from_name) = incoming.read.from.clone().unwrap_or_default();
    let contact = sender(tx, project, &from, now)?;
    let mut answered = None;
    for id in &incoming.read.answers {
        if let Some(email) = emails::answered(tx, project, id, &from)? {
            answered = Some(email);
            break;
        }
    }
    let stored = incoming.stored();
    let message = Message {
        id: incoming.id.clone(),
        project_id: project.to_string(),
        peer: incoming.envelope.peer.clone(),
        helo: incoming.envelope.helo.clone(),
        mail_from: incoming.envelope.mail_from.clone(),
        recipients: incoming.recipients.iter().map(|(to, _)| to.clone()).collect(),
        from_email: from.clone(),
        from_name,
        subject: incoming.read.subject.clone(),
        message_id: incoming.read.message_id.clone(),
        spf: incoming.verdicts.spf.clone(),
        dkim: incoming.verdicts.dkim.clone(),
        dmarc: incoming.verdicts.dmarc.clone(),
        size: incoming.raw.len() as i64,
        contact_id: contact.clone(),
        email_id: answered.as_ref().map(|e| e.id.clone()),
        stored,
        received_at: now,
        expires_at: now.saturating_add(retention_ms),
    };
    rows::insert_message(tx, &message, stored.then_some(incoming.raw.as_slice()))?;
    let data = json!({
        "inboundId": message.id,
        "from": message.from_email,
        "to": message.recipients,
        "subject": message.subject,
        "messageId": message.message_id,
        "spf": message.spf,
        "dkim": message.dkim,
        "dmarc": message.dmarc,
        "dmarcFailed": incoming.verdicts.dmarc_failed(),
        "replyToEmailId": message.email_id,
    });
    events::emit(tx, project, contact.as_deref(), RECEIVED, &data, now)?;
    if let Some(email) = &answered {
        emails::mark_replied(tx, &email.id, now)?;
        let mut data = email_data(email, &email.subject);
        data["inboundId"] = json!(message.id);
        events::emit(tx, project, email.contact_id.as_deref(), REPLIED, &data, now)?;
    }
    let mut payload = Some(payload);
    let mut body: Option<String> = None;
    for (to, action) in incoming.actions() {
        match action {
            Action::Webhook { endpoint_id, .. } => {
                if let Some(endpoint) = crate::db::webhooks::get(tx, project, &endpoint_id)? {
                    if body.is_none() {
                        body = payload.take().map(|make| make(&message));
                    }
                    let body = body.as_deref().unwrap_or_default();
                    webhooks::queue(tx, &endpoint, RECEIVED, body, now)?;
                }
            }
            Action::Forward { to: target } => forward(tx, &incoming, to, &target, now)?,
            Action::Store => {}
        }
    }
    Ok(message)
}

/// The sender's contact: found, or made unsubscribed (so no marketing goes to a stranger who
/// wrote in). None for a From that is no address, or when the project may hold no more contacts.
fn sender(tx: &Tx, project: &str, from: &str, now: i64) -> Result<Option<String>> {
    let Ok(address) = crate::core::email::normalize(from) else { return Ok(None) };
    let mut fields = FieldChanges::default();
    let upsert = Upsert {
        email: &address,
        subscribed: None,
        default_subscribed: false,
        data: &DataPatch::default(),
        source: "inbound",
        indexing: Indexing::AtCommit,
        new_likely: false,
    };
    match core_contacts::upsert(tx, project, &upsert, &mut fields, now) {
        Ok(upserted) => {
            fields.save(tx, project)?;
            Ok(Some(upserted.contact.id))
        }
        Err(Error::OverLimit(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Queues the message to `target` as it was received, marked as resent (RFC 5322 §3.6.6) by the
/// address `by` that took it: the original headers and body untouched, so the sender's DKIM
/// signature still holds; the forward leaves from `by`'s domain, signed with its key.
fn forward(tx: &Tx, incoming: &Incoming, by: &str, target: &str, now: i64) -> Result<()> {
    let project = incoming.project.as_str();
    let resent_id = crate::core::compose::message_id(by);
    let mut content = format!(
        "Resent-From: <{by}>\r\nResent-To: <{target}>\r\nResent-Date: {date}\r\nResent-Message-ID: {resent_id}\r\n",
        date = crate::clock::rfc2822(now),
    )
    .into_bytes();
    content.extend_from_slice(&incoming.raw);
    let raw = email_parts::insert_raw_message(tx, project, &RawMessage { content, track: Vec::new() }, now)?;
    let draft = Draft {
        project_id: project.to_string(),
        to: (target.to_string(), None),
        from: (by.to_string(), None),
        subject: incoming.read.subject.clone(),
        kind: EmailKind::Headless.as_str().to_string(),
        message_id: Some(resent_id),
        raw_message: Some(raw),
        ..Draft::default()
    };
    outbound::queue(tx, EmailSource::Transactional, draft, now)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::looped;

    #[test]
    fn a_message_through_too_many_servers_is_a_loop() {
        let hops = |n: usize| {
            format!("{}Subject: x\r\n\r\nReceived: in the body\r\n", "Received: from a\r\n".repeat(n))
        };
        assert!(!looped(hops(50).as_bytes()));
        assert!(looped(hops(51).as_bytes()));
        assert!(!looped(b"Subject: x\r\n\r\n"));
    }
}
