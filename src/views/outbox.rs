//! The capture outbox: mail kept instead of sent when no relay is configured.

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::outbox::Captured;

/// A message the capture transport kept.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutboxMessage {
    pub id: i64,
    /// The email it was (none for the server's own mail).
    pub email_id: Option<String>,
    pub message_id: String,
    /// The envelope sender a relay would have been given.
    pub from: String,
    pub to: String,
    pub subject: String,
    /// Bytes.
    pub size: i64,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<&Captured> for OutboxMessage {
    fn from(m: &Captured) -> Self {
        OutboxMessage {
            id: m.id,
            email_id: m.email_id.clone(),
            message_id: m.message_id.clone(),
            from: m.from.clone(),
            to: m.to.clone(),
            subject: m.subject.clone(),
            size: m.size,
            created_at: iso(m.created_at),
        }
    }
}

/// A header of a message, unfolded.
#[derive(Debug, Serialize, ToSchema)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// One message read back: its source and what is read from it.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutboxSource {
    #[serde(flatten)]
    pub message: OutboxMessage,
    /// The whole message as sent (RFC 5322).
    pub raw: String,
    /// In order.
    pub headers: Vec<Header>,
    pub html: Option<String>,
    pub text: Option<String>,
}
