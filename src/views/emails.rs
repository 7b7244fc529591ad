//! Emails as the API lists them: their state, never their body or one-off variables.

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::emails::Email as Row;

/// One email to one contact.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Email {
    pub id: String,
    #[schema(format = Email)]
    pub to: String,
    #[schema(format = Email)]
    pub from: String,
    pub subject: String,
    /// `TRANSACTIONAL`, `MARKETING` or `HEADLESS`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `TRANSACTIONAL` (`/v1/send`), `CAMPAIGN`, `WORKFLOW` or `TEST`.
    pub source_type: String,
    pub template_id: Option<String>,
    pub campaign_id: Option<String>,
    pub workflow_id: Option<String>,
    /// `QUEUED`, `SENT`, `DELIVERED`, `OPENED`, `CLICKED`, `BOUNCED`, `COMPLAINED` or `FAILED`.
    pub status: String,
    /// Delivery attempts so far.
    pub attempts: u32,
    /// The last attempt's failure, if any.
    pub error: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub sent_at: Option<String>,
    #[schema(format = DateTime)]
    pub opened_at: Option<String>,
    #[schema(format = DateTime)]
    pub clicked_at: Option<String>,
}

impl From<&Row> for Email {
    fn from(e: &Row) -> Self {
        Email {
            id: e.id.clone(),
            to: e.to_email.clone(),
            from: e.from_email.clone(),
            subject: e.subject.clone(),
            kind: e.kind.clone(),
            source_type: e.source_type.clone(),
            template_id: e.template_id.clone(),
            campaign_id: e.campaign_id.clone(),
            workflow_id: e.workflow_id.clone(),
            status: e.status.clone(),
            attempts: e.attempts,
            error: e.last_error.clone(),
            created_at: iso(e.created_at),
            sent_at: e.sent_at.map(iso),
            opened_at: e.opened_at.map(iso),
            clicked_at: e.clicked_at.map(iso),
        }
    }
}
