//! A data subject's requests (issue 35, item 6): a contact's data as one document, and an
//! erasure as recorded.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::contacts::Contact;
use crate::clock::iso;
use crate::core::erasure::Export;
use crate::db::erasure::Erasure;

/// Everything the project holds about a contact, at `exportedAt`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactExport {
    #[schema(format = DateTime)]
    pub exported_at: String,
    pub contact: Contact,
    /// Each consent the contact gave: how, when, from where, and its confirmation.
    #[schema(value_type = Vec<Object>)]
    pub consents: Vec<Value>,
    pub events: Vec<ExportedEvent>,
    pub emails: Vec<ExportedEmail>,
    /// Mail the contact sent the project.
    pub inbound: Vec<ExportedInbound>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedEvent {
    pub id: String,
    pub name: String,
    #[schema(value_type = Object)]
    pub data: Value,
    #[schema(format = DateTime)]
    pub created_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedEmail {
    pub id: String,
    pub to: String,
    pub from: String,
    pub subject: String,
    pub status: String,
    /// `TRANSACTIONAL`, `CAMPAIGN`, `WORKFLOW`, ...
    pub source: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub sent_at: Option<String>,
    pub opened_at: Option<String>,
    pub clicked_at: Option<String>,
    /// The body (as written, Liquid), its one-off variables and headers; `null` once the
    /// project's retention removed them (a campaign's emails read the campaign's).
    pub content: Option<ExportedContent>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedContent {
    pub body: String,
    #[schema(value_type = Object)]
    pub variables: Value,
    #[schema(value_type = Object)]
    pub headers: Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedInbound {
    pub id: String,
    pub from: String,
    pub subject: String,
    #[schema(format = DateTime)]
    pub received_at: String,
}

impl ContactExport {
    pub fn of(e: &Export, now: i64) -> ContactExport {
        ContactExport {
            exported_at: iso(now),
            contact: (&e.contact).into(),
            consents: e.consents.clone(),
            events: e
                .events
                .iter()
                .map(|(id, name, data, at)| ExportedEvent {
                    id: id.clone(),
                    name: name.clone(),
                    data: data.clone(),
                    created_at: iso(*at),
                })
                .collect(),
            emails: e
                .emails
                .iter()
                .map(|m| ExportedEmail {
                    id: m.id.clone(),
                    to: m.to_email.clone(),
                    from: m.from_email.clone(),
                    subject: m.subject.clone(),
                    status: m.status.clone(),
                    source: m.source_type.clone(),
                    created_at: iso(m.created_at),
                    sent_at: m.sent_at.map(iso),
                    opened_at: m.opened_at.map(iso),
                    clicked_at: m.clicked_at.map(iso),
                    content: m.content.as_ref().map(|(body, variables, headers)| ExportedContent {
                        body: body.clone(),
                        variables: variables.clone(),
                        headers: headers.clone(),
                    }),
                })
                .collect(),
            inbound: e
                .inbound
                .iter()
                .map(|(id, from, subject, at)| ExportedInbound {
                    id: id.clone(),
                    from: from.clone(),
                    subject: subject.clone(),
                    received_at: iso(*at),
                })
                .collect(),
        }
    }
}

/// An erasure: no personal data, only its contact's former id, when, and how much went.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasureView {
    pub id: String,
    pub contact_id: String,
    /// `running` (a job finishes it) or `done`.
    pub status: String,
    /// Rows deleted or emptied.
    pub rows: i64,
    #[schema(format = DateTime)]
    pub requested_at: String,
    pub finished_at: Option<String>,
}

impl From<&Erasure> for ErasureView {
    fn from(e: &Erasure) -> Self {
        ErasureView {
            id: e.id.clone(),
            contact_id: e.contact_id.clone(),
            status: e.status.clone(),
            rows: e.rows,
            requested_at: iso(e.requested_at),
            finished_at: e.finished_at.map(iso),
        }
    }
}
