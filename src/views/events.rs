//! Events as the API lists them, their names and stats.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::events::Listed;

/// The contact an event happened to.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventContact {
    pub id: String,
    /// `null` when the contact has been deleted since.
    #[schema(format = Email)]
    pub email: Option<String>,
}

/// An event: tracked by the app, or recorded by the server (`email.*`, `contact.*`,
/// `segment.*`). Outbound webhooks carry the same shape.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub id: String,
    pub name: String,
    /// `null` for events of no contact.
    pub contact: Option<EventContact>,
    /// What the event carried.
    #[schema(value_type = Object)]
    pub data: Value,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<&Listed> for Event {
    fn from(e: &Listed) -> Self {
        Event {
            id: e.id.clone(),
            name: e.name.clone(),
            contact: e.contact_id.as_ref().map(|id| EventContact { id: id.clone(), email: e.email.clone() }),
            data: e.data.clone(),
            created_at: iso(e.created_at),
        }
    }
}

/// An event name the project has, with how many events carry it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventName {
    pub name: String,
    pub count: i64,
    #[schema(format = DateTime)]
    pub last_seen_at: String,
    /// A name the server records itself (it cannot be tracked or deleted by name).
    pub reserved: bool,
}

/// Events of one name over the period.
#[derive(Debug, Serialize, ToSchema)]
pub struct NameCount {
    pub name: String,
    pub count: i64,
    /// Distinct contacts.
    pub contacts: i64,
}

/// Events on one UTC day.
#[derive(Debug, Serialize, ToSchema)]
pub struct DayCount {
    /// `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub date: String,
    pub count: i64,
}

/// `GET /events/stats`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventStats {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    pub total: i64,
    pub events: Vec<NameCount>,
    pub days: Vec<DayCount>,
}

/// What deleting the events of a name did: `completed` at once, or `queued` as a background
/// job for many (`deleted` is then 0 and `total` says how many will go).
#[derive(Debug, Serialize, ToSchema)]
pub struct EventDeletion {
    pub name: String,
    pub deleted: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// `completed` or `queued`.
    pub status: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A webhook carries an event in the shape the API lists it.
    #[test]
    fn webhooks_carry_the_listed_shape() {
        for (contact, email) in [(Some("c1"), Some("a@b.test")), (Some("c2"), None), (None, None)] {
            let listed = Listed {
                id: "e1".into(),
                name: "signup".into(),
                contact_id: contact.map(str::to_string),
                email: email.map(str::to_string),
                data: json!({ "plan": "pro" }),
                created_at: 1_700_000_000_000,
            };
            let view = serde_json::to_value(Event::from(&listed)).unwrap();
            assert_eq!(view, crate::core::webhooks::event_data(&listed));
        }
    }
}
