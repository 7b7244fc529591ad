//! Inbound mail: domains with the records to publish, routes, and the messages received (in the
//! API and in the webhook a route posts to).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::inbound::routes::{self, Action};
use crate::core::inbound::{Checks, Purpose, records};
use crate::db::inbound::{Domain as DomainRow, Message as MessageRow, Route as RouteRow};
use crate::mail::read::Read;

/// A DNS record to publish for an inbound domain.
#[derive(Debug, Serialize, ToSchema)]
pub struct InboundRecord {
    /// `MX` or `TXT`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub value: String,
    /// The MX preference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
    /// `mx` (mail comes here) or `ownership` (the domain is this project's).
    #[schema(value_type = String)]
    pub purpose: Purpose,
    /// Whether the last check found it (absent before the first check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<bool>,
    /// Set when DNS gave no answer (`timeout`, `servfail`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A domain the project receives mail for.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundDomain {
    pub id: String,
    pub domain: String,
    /// `pending` until both records are found, then `verified`; rechecked periodically.
    pub status: String,
    pub records: Vec<InboundRecord>,
    /// Why a domain whose records are there is still pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub verified_at: Option<String>,
    #[schema(format = DateTime)]
    pub last_checked_at: Option<String>,
}

impl InboundDomain {
    /// The domain, whose MX is to name `host`.
    pub fn new(domain: &DomainRow, host: &str) -> Self {
        let checks = Checks::read(domain);
        let records = records(domain, host)
            .into_iter()
            .map(|spec| {
                let check = checks.records.iter().find(|c| c.purpose == spec.purpose);
                InboundRecord {
                    kind: spec.kind.into(),
                    name: spec.name,
                    value: spec.value,
                    priority: spec.priority,
                    purpose: spec.purpose,
                    found: check.map(|c| c.found),
                    error: check.and_then(|c| c.error.clone()),
                }
            })
            .collect();
        InboundDomain {
            id: domain.id.clone(),
            domain: domain.domain.clone(),
            status: domain.status.clone(),
            records,
            problem: checks.problem,
            created_at: iso(domain.created_at),
            verified_at: domain.verified_at.map(iso),
            last_checked_at: domain.last_checked_at.map(iso),
        }
    }
}

/// `POST /inbound-domains`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "domain": "in.acme.test" }))]
pub struct NewInboundDomain {
    #[schema(required, value_type = String)]
    pub domain: Option<String>,
}

/// A route's action.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteAction {
    /// `webhook`, `forward` or `store`.
    #[serde(rename = "type")]
    pub kind: String,
    /// A webhook's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The webhook endpoint that posts it (its secret signs the deliveries; `GET /webhooks/:id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint_id: Option<String>,
    /// A forward's address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// What becomes of mail to an address (or every address) of an inbound domain.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundRoute {
    pub id: String,
    /// `support@example.com`, or `*@example.com` for every address.
    #[serde(rename = "match")]
    pub matching: String,
    pub domain_id: String,
    pub actions: Vec<RouteAction>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&RouteRow> for InboundRoute {
    fn from(r: &RouteRow) -> Self {
        let actions = routes::actions(r)
            .into_iter()
            .map(|a| match a {
                Action::Webhook { url, endpoint_id } => RouteAction {
                    kind: "webhook".into(),
                    url: Some(url),
                    endpoint_id: Some(endpoint_id),
                    to: None,
                },
                Action::Forward { to } => {
                    RouteAction { kind: "forward".into(), url: None, endpoint_id: None, to: Some(to) }
                }
                Action::Store => RouteAction { kind: "store".into(), url: None, endpoint_id: None, to: None },
            })
            .collect();
        InboundRoute {
            id: r.id.clone(),
            matching: format!("{}@{}", r.local_part, r.domain),
            domain_id: r.domain_id.clone(),
            actions,
            created_at: iso(r.created_at),
            updated_at: iso(r.updated_at),
        }
    }
}

/// `POST /inbound-routes`, and `PATCH /inbound-routes/:id` (fields given replace the route's).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "match": "support@in.acme.test", "actions": [
    { "type": "webhook", "url": "https://app.acme.test/hooks/inbound" }, { "type": "store" }
] }))]
#[serde(deny_unknown_fields)]
pub struct NewInboundRoute {
    #[serde(rename = "match")]
    #[schema(required, value_type = String)]
    pub matching: Option<String>,
    /// `{type: "webhook", url}`, `{type: "forward", to}`, `{type: "store"}`.
    #[schema(required, value_type = Vec<Object>)]
    pub actions: Option<Value>,
}

/// An address and its display name.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sender {
    pub email: String,
    pub name: Option<String>,
}

/// A message received.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundMessage {
    pub id: String,
    pub from: Sender,
    /// The recipients of this project.
    pub to: Vec<String>,
    pub subject: String,
    pub message_id: Option<String>,
    /// The envelope sender (`MAIL FROM`; empty for a bounce).
    pub mail_from: String,
    /// The sending server's address and the name it greeted with.
    pub remote_address: String,
    pub helo: String,
    /// `pass`, `fail`, `softfail`, `neutral`, `none`, `temperror` or `permerror`.
    pub spf: String,
    pub dkim: String,
    pub dmarc: String,
    /// The From domain's DMARC policy failed: the sender may be forged.
    pub dmarc_failed: bool,
    pub size: i64,
    /// The sender's contact.
    pub contact_id: Option<String>,
    /// The email of ours this replies to.
    pub reply_to_email_id: Option<String>,
    /// Whether the content is kept (a route stores it).
    pub stored: bool,
    #[schema(format = DateTime)]
    pub received_at: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

impl InboundMessage {
    pub fn new(m: &MessageRow) -> Self {
        InboundMessage {
            id: m.id.clone(),
            from: Sender { email: m.from_email.clone(), name: m.from_name.clone() },
            to: m.recipients.clone(),
            subject: m.subject.clone(),
            message_id: m.message_id.clone(),
            mail_from: m.mail_from.clone(),
            remote_address: m.peer.clone(),
            helo: m.helo.clone(),
            spf: m.spf.clone(),
            dkim: m.dkim.clone(),
            dmarc: m.dmarc.clone(),
            dmarc_failed: m.dmarc == "fail",
            size: m.size,
            contact_id: m.contact_id.clone(),
            reply_to_email_id: m.email_id.clone(),
            stored: m.stored,
            received_at: iso(m.received_at),
            expires_at: iso(m.expires_at),
        }
    }
}

/// A header, unfolded.
#[derive(Debug, Serialize, ToSchema)]
pub struct InboundHeader {
    pub name: String,
    pub value: String,
}

/// An attachment of a message received.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundAttachment {
    pub filename: Option<String>,
    pub content_type: String,
    pub size: usize,
    /// Where to download it (with the project's secret key or a session), when the message is
    /// stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Its bytes, base64, in a webhook's payload when the message is not stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What a message says: headers, bodies, attachments.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundContent {
    pub headers: Vec<InboundHeader>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<InboundAttachment>,
    /// In a webhook's body: parts were left out to keep it under 1 MiB (attachments' bytes
    /// first, then the bodies, then the headers); `GET /inbound/:id` has them when stored.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// The most a webhook's body carries of a message's content: deliveries are held in memory
/// while they are posted (64 at a time), so a body never grows with the message's size.
pub const WEBHOOK_CONTENT_MAX: usize = 1 << 20;

impl InboundContent {
    /// The content of stored message `id` as read; attachments link to `base`.
    pub fn new(read: &Read, id: &str, base: &str) -> Self {
        Self::parts(read, (id, base, true), Keep { headers: true, bodies: true, bytes: false })
    }

    /// The content as a route's webhook carries it, serialised: attachments link to `base` when
    /// the message is stored, else carry their bytes; what would take the body past
    /// [`WEBHOOK_CONTENT_MAX`] is left out (judged from the parts' sizes, before any is copied).
    pub fn for_webhook(read: &Read, id: &str, base: &str, stored: bool) -> String {
        let headers: usize = read.headers.iter().map(|h| h.name.len() + h.value.len() + 32).sum();
        let bodies = read.text.as_ref().map_or(0, String::len) + read.html.as_ref().map_or(0, String::len);
        let attached: usize = read.attachments.iter().map(|a| a.content.len() / 3 * 4 + 4).sum();
        // Bodies count twice: JSON escapes may double them.
        let headers_fit = headers < WEBHOOK_CONTENT_MAX;
        let bodies_fit = headers_fit && headers + bodies * 2 < WEBHOOK_CONTENT_MAX;
        let bytes_fit = bodies_fit && headers + bodies * 2 + attached < WEBHOOK_CONTENT_MAX;
        let keep = Keep { headers: headers_fit, bodies: bodies_fit, bytes: !stored && bytes_fit };
        let mut content = Self::parts(read, (id, base, stored), keep);
        content.truncated = !bodies_fit || (!stored && !bytes_fit && !read.attachments.is_empty());
        serde_json::to_string(&content).unwrap_or_else(|_| "null".into())
    }

    /// The content with what `keep` says; attachments link to `base` when message `id` is
    /// `stored`.
    fn parts(read: &Read, (id, base, stored): (&str, &str, bool), keep: Keep) -> Self {
        let attachments = read
            .attachments
            .iter()
            .enumerate()
            .map(|(n, a)| InboundAttachment {
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                size: a.content.len(),
                url: stored.then(|| attachment_url(base, id, n)),
                content: keep.bytes.then(|| STANDARD.encode(&a.content)),
            })
            .collect();
        InboundContent {
            headers: if keep.headers {
                read.headers
                    .iter()
                    .map(|h| InboundHeader { name: h.name.clone(), value: h.value.clone() })
                    .collect()
            } else {
                Vec::new()
            },
            text: read.text.clone().filter(|_| keep.bodies),
            html: read.html.clone().filter(|_| keep.bodies),
            attachments,
            truncated: false,
        }
    }
}

/// Which parts of a message's content are carried.
#[derive(Clone, Copy)]
struct Keep {
    headers: bool,
    bodies: bool,
    /// Attachments' bytes, base64.
    bytes: bool,
}

/// Where attachment `n` of message `id` is downloaded.
pub fn attachment_url(base: &str, id: &str, n: usize) -> String {
    format!("{}/inbound/{id}/attachments/{n}", base.trim_end_matches('/'))
}

/// A stored message with its content (`GET /inbound/:id`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InboundMessageDetail {
    #[serde(flatten)]
    pub message: InboundMessage,
    /// Absent when no route stores the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<InboundContent>,
}

/// The body a route's webhook receives: `{type: "email.received", timestamp, data}`, `data`
/// the message with its content.
pub fn webhook_payload(message: &MessageRow, content: &str) -> String {
    // `content` is already serialised (off the writer's thread), and spliced in as it is.
    let data = serde_json::to_string(&InboundMessage::new(message)).unwrap_or_else(|_| "{}".into());
    let head = data.strip_suffix('}').unwrap_or("{");
    let separator = if head.len() > 1 { "," } else { "" };
    format!(
        r#"{{"type":"email.received","timestamp":"{}","data":{head}{separator}"content":{content}}}}}"#,
        iso(message.received_at)
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::mail::read::{Attachment, Header};

    fn read(text: usize, attached: usize) -> Read {
        Read {
            headers: vec![Header { name: "Subject".into(), value: "Hi".into() }],
            text: Some("x".repeat(text)),
            attachments: vec![Attachment {
                filename: Some("a.bin".into()),
                content_type: "application/octet-stream".into(),
                content: vec![7; attached],
            }],
            ..Read::default()
        }
    }

    #[test]
    fn a_webhook_carries_what_fits_in_a_mebibyte_and_says_what_it_left_out() {
        let small: Value =
            serde_json::from_str(&InboundContent::for_webhook(&read(10, 10), "m", "https://x.test", false))
                .unwrap();
        assert_eq!(
            (small["text"].as_str().map(str::len), small["attachments"][0]["content"].as_str()),
            (Some(10), Some("BwcHBwcHBwcHBw=="))
        );
        assert!(small.get("truncated").is_none() && small["attachments"][0].get("url").is_none());

        let stored: Value =
            serde_json::from_str(&InboundContent::for_webhook(&read(10, 10), "m", "https://x.test", true))
                .unwrap();
        assert_eq!(stored["attachments"][0]["url"], "https://x.test/inbound/m/attachments/0");
        assert!(stored["attachments"][0].get("content").is_none() && stored.get("truncated").is_none());

        let big_file = InboundContent::for_webhook(&read(10, 2 << 20), "m", "https://x.test", false);
        assert!(big_file.len() < 4096, "the bytes are left out");
        let big_file: Value = serde_json::from_str(&big_file).unwrap();
        assert_eq!(
            (big_file["truncated"].clone(), big_file["text"].as_str().map(str::len)),
            (json!(true), Some(10))
        );

        let big_text = InboundContent::for_webhook(&read(3 << 20, 10), "m", "https://x.test", true);
        assert!(big_text.len() < 4096, "the bodies are left out");
        assert!(big_text.contains(r#""truncated":true"#) && big_text.contains("Subject"));
    }
}
