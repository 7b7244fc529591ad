//! Contacts as the API shows them, and the bodies that create, change and look them up.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::contacts::Contact as Row;
use crate::db::suppressions::Suppression as SuppressionRow;

/// A contact of the project.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "id": "0193a5c2-7e0b-7c4e-9d51-2f6a8e1b3c70", "email": "ada@example.com", "subscribed": true,
    "snoozedUntil": null, "data": { "plan": "pro", "firstName": "Ada" },
    "createdAt": "2026-11-24T12:00:00.000Z", "updatedAt": "2026-11-24T12:00:00.000Z",
}))]
pub struct Contact {
    pub id: String,
    /// Unique within the project, lower-cased.
    #[schema(format = Email)]
    pub email: String,
    /// Whether marketing mail (campaigns, workflow emails) may go to the contact.
    pub subscribed: bool,
    /// Until when campaigns and workflows hold off mailing the contact.
    #[schema(format = DateTime)]
    pub snoozed_until: Option<String>,
    /// Custom fields: numbers, booleans, strings, dates (ISO 8601 strings) and objects.
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for Contact {
    fn from(c: &Row) -> Self {
        Contact {
            id: c.id.clone(),
            email: c.email.clone(),
            subscribed: c.subscribed,
            snoozed_until: c.snoozed_until.map(iso),
            data: c.data.clone(),
            created_at: iso(c.created_at),
            updated_at: iso(c.updated_at),
        }
    }
}

/// Why marketing mail no longer goes to a contact: a hard bounce or a complaint.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    /// `hard_bounce` or `complaint`.
    pub reason: String,
    /// The email that bounced or was complained about.
    pub email_id: Option<String>,
    /// What the source said: the bounce's diagnostic, the complaint's feedback type.
    pub detail: Option<String>,
    #[schema(format = DateTime)]
    pub since: String,
}

impl From<&SuppressionRow> for Suppression {
    fn from(s: &SuppressionRow) -> Self {
        Suppression {
            reason: s.reason.clone(),
            email_id: s.email_id.clone(),
            detail: s.detail.clone(),
            since: iso(s.created_at),
        }
    }
}

/// A contact with its suppression (`null` when marketing mail may reach it), as read one at a
/// time or listed; read one at a time, also its state for each topic of the project.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListedContact {
    #[serde(flatten)]
    pub contact: Contact,
    pub suppression: Option<Suppression>,
    /// Read one at a time: each topic's id, and whether the contact is subscribed to it (its
    /// own choice, else the topic's `defaultOptIn`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topics: Option<BTreeMap<String, bool>>,
    /// Read one at a time: the subscription waiting for the contact's confirmation, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<super::consent::PendingConfirmation>,
}

impl ListedContact {
    pub fn new(contact: &Row, suppression: Option<&SuppressionRow>) -> Self {
        ListedContact {
            contact: contact.into(),
            suppression: suppression.map(Suppression::from),
            topics: None,
            pending: None,
        }
    }
}

/// A contact as changed, with its state for each topic of the project.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChangedContact {
    #[serde(flatten)]
    pub contact: Contact,
    /// Each topic's id, and whether the contact is subscribed to it.
    pub topics: BTreeMap<String, bool>,
}

/// `POST /contacts`: the contact, and whether the call made it or changed it.
#[derive(Debug, Serialize, ToSchema)]
pub struct UpsertedContact {
    #[serde(flatten)]
    pub contact: Contact,
    #[serde(rename = "_meta")]
    pub meta: UpsertMeta,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpsertMeta {
    pub is_new: bool,
    pub is_update: bool,
}

/// `POST /contacts`: upserts by email.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "email": "ada@example.com", "subscribed": true, "data": { "firstName": "Ada", "plan": "pro" } }))]
pub struct NewContact {
    /// Required (a missing one is a 400 with the short `{error}` body).
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
    /// Default `true` for a new contact; an existing one keeps its state unless this is given.
    pub subscribed: Option<bool>,
    /// Patched into the contact's custom fields: only the keys sent change, `null` deletes a
    /// key, an empty string is ignored, and `{value, persistent: false}` is not stored.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Double opt-in: the contact is subscribed only when it follows the link of the
    /// confirmation mail this queues (a new contact waits unsubscribed; one already subscribed
    /// gets no mail). Not with `subscribed: false`.
    pub confirm: Option<bool>,
    /// The proof of consent to keep with the subscription.
    pub consent: Option<super::consent::ConsentBody>,
}

/// `PATCH /contacts/{id}`: every field optional.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactChanges {
    /// 409 when another contact of the project has it.
    #[schema(format = Email)]
    pub email: Option<String>,
    /// Flipping it emits `contact.subscribed` or `contact.unsubscribed`.
    pub subscribed: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// Topic ids and whether the contact is subscribed to each; a change emits
    /// `contact.topic_subscribed` or `contact.topic_unsubscribed`. Topics left out keep their state.
    pub topics: Option<BTreeMap<String, bool>>,
    /// Pauses marketing mail until this time (at most 365 days ahead); `null` resumes it. A
    /// change emits `contact.snoozed` or `contact.unsnoozed`.
    #[serde(default, rename = "snoozedUntil", deserialize_with = "super::present")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub snoozed_until: Option<Option<String>>,
}

/// `POST /contacts/lookup`: which of these addresses are contacts.
#[derive(Debug, Deserialize, ToSchema)]
pub struct Lookup {
    /// At most 500.
    #[schema(required, value_type = Vec<String>, max_items = 500)]
    pub emails: Option<Vec<String>>,
}

/// One address of a lookup.
#[derive(Debug, Serialize, ToSchema)]
pub struct LookedUp {
    /// Normalized when it parses, as sent otherwise.
    pub email: String,
    pub exists: bool,
    pub id: Option<String>,
    pub subscribed: Option<bool>,
}

/// The answer of `POST /contacts/lookup`, in the order asked.
#[derive(Debug, Serialize, ToSchema)]
pub struct LookupResult {
    pub data: Vec<LookedUp>,
    /// How many exist.
    pub found: usize,
    pub total: usize,
}
