//! A contact's history as the API gives it (`GET /contacts/:id/timeline`).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::{events, topics};
use crate::db::timeline::{Entry, Position};

/// One entry of a contact's history. `kind` says which fields it has:
/// - `email`: `subject`, `status`, `sourceType`, `campaignId`, `workflowId`, `templateId`, `error`;
/// - `subscription` (the `contact.subscribed`, `contact.unsubscribed` and
///   `contact.topic_(un)subscribed` events): `subscribed`, `source` (`api`, `bulk`, `import`,
///   `unsubscribe_link`, ...) and, for a topic, `topic` (its name) and `topicId`;
/// - `event` (every other event, tracked or emitted): `name` and `data`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// `email`, `event` or `subscription`.
    pub kind: &'static str,
    /// The email's or event's id.
    pub id: String,
    /// When the email was queued or the event happened.
    #[schema(format = DateTime)]
    pub at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The email's furthest status: `QUEUED`, `SENT`, `DELIVERED`, `OPENED`, `CLICKED`,
    /// `BOUNCED`, `COMPLAINED` or `FAILED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `TRANSACTIONAL`, `CAMPAIGN`, `WORKFLOW` or `TEST`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// Why the email failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The event's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the event carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Whether the change subscribed the contact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscribed: Option<bool>,
    /// What made the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The topic a subscription change was about (none: marketing mail as a whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
}

impl TimelineEntry {
    pub fn new(entry: Entry, position: &Position) -> Self {
        let mut out = TimelineEntry {
            kind: "event",
            id: String::new(),
            at: iso(position.at),
            subject: None,
            status: None,
            source_type: None,
            campaign_id: None,
            workflow_id: None,
            template_id: None,
            error: None,
            name: None,
            data: None,
            subscribed: None,
            source: None,
            topic: None,
            topic_id: None,
        };
        match entry {
            Entry::Email(mail) => {
                out.kind = "email";
                out.id = mail.id;
                out.subject = Some(mail.subject);
                out.status = Some(mail.status);
                out.source_type = Some(mail.source_type);
                out.campaign_id = mail.campaign_id;
                out.workflow_id = mail.workflow_id;
                out.template_id = mail.template_id;
                out.error = mail.error;
            }
            Entry::Event(event) => {
                out.id = event.id;
                let subscribed = match event.name.as_str() {
                    events::CONTACT_SUBSCRIBED | topics::TOPIC_SUBSCRIBED => Some(true),
                    events::CONTACT_UNSUBSCRIBED | topics::TOPIC_UNSUBSCRIBED => Some(false),
                    _ => None,
                };
                if let Some(subscribed) = subscribed {
                    let text = |key: &str| event.data.get(key).and_then(Value::as_str).map(str::to_string);
                    out.kind = "subscription";
                    out.subscribed = Some(subscribed);
                    out.source = text("source");
                    out.topic = text("topic");
                    out.topic_id = text("topicId");
                } else {
                    out.data = Some(event.data);
                }
                out.name = Some(event.name);
            }
        }
        out
    }
}
