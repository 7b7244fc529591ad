//! `POST /v1/send`: its body and answer. `to`, `from` and the attachments are read by hand (each
//! problem gets its own field path), so their types here describe what is accepted.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::{iso, now_ms};
use crate::core::send::Queued;

/// An address with a display name.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct Mailbox {
    name: Option<String>,
    #[schema(format = Email)]
    email: String,
}

/// An address, bare or with a name.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum Address {
    #[schema(format = Email)]
    Bare(String),
    Named(Mailbox),
}

/// One recipient, or several (each gets its own contact upsert and its own email).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum Recipients {
    One(Address),
    Many(Vec<Address>),
}

/// A file sent with the email.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct Attachment {
    /// A plain name: no path, no control characters.
    filename: String,
    /// The file, base64.
    #[schema(content_encoding = "base64")]
    content: String,
    /// Default `application/octet-stream`.
    content_type: Option<String>,
    /// The part's `Content-ID`, which the HTML names as `cid:<contentId>` (1 to 255 visible
    /// ASCII characters, no `<`, `>` or quotes); required with `inline`.
    content_id: Option<String>,
    /// `attachment` (the default) or `inline`: an image shown in the body, as Plunk's clients
    /// send it.
    #[schema(value_type = Option<Disposition>)]
    disposition: Option<String>,
}

/// How an attachment is shown.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum Disposition {
    #[schema(rename = "attachment")]
    Attachment,
    #[schema(rename = "inline")]
    Inline,
}

/// A transactional email to one or more recipients, each upserted as a contact.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "to": "ada@example.com", "from": { "name": "Acme", "email": "hello@acme.test" },
    "subject": "Welcome, {{ firstName ?? \"there\" }}", "body": "<p>Thanks for signing up.</p>",
    "data": { "firstName": "Ada" },
}))]
pub struct SendBody {
    #[schema(required, value_type = Recipients)]
    pub to: Option<Value>,
    /// 1 to 998 characters, no line break; required without a template.
    pub subject: Option<String>,
    /// HTML (a plain-text part is made from it); required without a template.
    pub body: Option<String>,
    /// A template's id: its subject, body, sender and reply-to, unless given here.
    pub template: Option<String>,
    /// The sender, on a verified domain; required unless the template has one.
    #[schema(value_type = Option<Address>)]
    pub from: Option<Value>,
    /// The sender's display name when `from` is a bare address (deprecated).
    pub name: Option<String>,
    /// A new contact is subscribed unless this says otherwise.
    pub subscribed: Option<bool>,
    /// Template variables, and custom fields to patch into the contact.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Extra headers: names and values without line breaks, values at most 998 characters.
    #[schema(value_type = Option<std::collections::HashMap<String, String>>)]
    pub headers: Option<Value>,
    /// Reply-to address.
    #[schema(format = Email)]
    pub reply: Option<String>,
    /// At most 10, within the attachment size limit together.
    #[schema(value_type = Option<Vec<Attachment>>, max_items = 10)]
    pub attachments: Option<Vec<Value>>,
}

/// The contact an email went to.
#[derive(Debug, Serialize, ToSchema)]
pub struct Recipient {
    pub id: String,
    #[schema(format = Email)]
    pub email: String,
}

/// One email queued.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuedEmail {
    pub contact: Recipient,
    /// The email's id (its events and `GET /contacts/{id}/emails` name it).
    pub email: String,
}

/// What `POST /v1/send` queued, one email per recipient.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sent {
    pub emails: Vec<QueuedEmail>,
    #[schema(format = DateTime)]
    pub timestamp: String,
}

impl From<&[Queued]> for Sent {
    /// What was queued, stamped now.
    fn from(queued: &[Queued]) -> Self {
        let emails = queued
            .iter()
            .map(|q| QueuedEmail {
                contact: Recipient { id: q.contact_id.clone(), email: q.contact_email.clone() },
                email: q.email_id.clone(),
            })
            .collect();
        Sent { emails, timestamp: iso(now_ms()) }
    }
}
