//! `/v1/track`: recording a custom event for a contact, upserting the contact, in the caller's
//! transaction.

use crate::db::Tx;
use serde_json::{Value, json};

use super::contacts::{self as core_contacts, Upsert};
use super::data::DataPatch;
use super::events;
use super::fields::FieldChanges;
use crate::core::error::{Error, FieldError, Result};
use crate::db::contacts::Indexing;

/// Longest event name.
pub const MAX_NAME: usize = super::conditions::MAX_EVENT_NAME;

/// Whether `name` is one the service emits itself (appliance.md section 11): `email.*`,
/// `contact.subscribed`, `contact.unsubscribed`, `contact.snoozed`, `contact.unsnoozed`,
/// `contact.topic_subscribed`, `contact.topic_unsubscribed`, `contact.confirmed`,
/// `contact.confirmation_requested`, `segment.<slug>.entry` and
/// `.exit`. Compared without letter case, so `Email.Sent` cannot pass for a service event either.
pub fn is_reserved(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let segment = name
        .strip_prefix("segment.")
        .and_then(|rest| rest.strip_suffix(".entry").or_else(|| rest.strip_suffix(".exit")))
        .is_some_and(|slug| !slug.is_empty());
    let contact = [
        super::events::CONTACT_SUBSCRIBED,
        super::events::CONTACT_UNSUBSCRIBED,
        super::events::CONTACT_SNOOZED,
        super::events::CONTACT_UNSNOOZED,
        super::events::CONTACT_CONFIRMED,
        super::events::CONTACT_CONFIRMATION_REQUESTED,
        super::topics::TOPIC_SUBSCRIBED,
        super::topics::TOPIC_UNSUBSCRIBED,
    ]
    .contains(&name.as_str());
    name.starts_with("email.") || contact || segment
}

/// Checks a custom event name: 1 to 200 characters without control characters, and not
/// reserved (422 with an item of code `reserved_event`).
pub fn check_name(name: &str, field: &str) -> Result<String> {
    let trimmed = name.trim();
    if trimmed.is_empty() || trimmed.chars().count() > MAX_NAME || trimmed.chars().any(char::is_control) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                field,
                "invalid_string",
                format!("an event name is 1 to {MAX_NAME} characters without control characters"),
            )
            .received(json!(name.chars().take(300).collect::<String>())),
        ]));
    }
    if is_reserved(trimmed) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                field,
                "reserved_event",
                format!(
                    "{trimmed:?} is reserved for events the service emits (email.*, contact.subscribed, \
                     contact.unsubscribed, segment.<slug>.entry and .exit); choose another name"
                ),
            )
            .received(json!(trimmed)),
        ]));
    }
    Ok(trimmed.to_string())
}

/// A checked track request.
#[derive(Debug, Clone)]
pub struct Track {
    /// Normalised.
    pub email: String,
    pub event: String,
    pub subscribed: Option<bool>,
    pub data: DataPatch,
    /// Double opt-in and the proof of consent.
    pub consent: super::confirmations::Consenting,
}

/// What was stored.
#[derive(Debug, Clone)]
pub struct Tracked {
    pub contact_id: String,
    pub event_id: String,
    pub at: i64,
}

/// Upserts the contact (new contacts subscribed unless `subscribed` says otherwise; a change
/// emits the contact event) and stores a new event carrying every value of `data`, including
/// the non-persistent ones the contact does not keep. With `confirm`, the subscription waits
/// for the contact's confirmation (`mailer` sends the mail).
pub fn track(
    conn: &Tx,
    project: &str,
    request: &Track,
    mailer: &super::confirmations::Mailer<'_>,
    now: i64,
) -> Result<Tracked> {
    let mut fields = FieldChanges::default();
    let (subscribed, default_subscribed) = request.consent.upsert_subscription(request.subscribed)?;
    let upsert = Upsert {
        email: &request.email,
        subscribed,
        default_subscribed,
        data: &request.data,
        source: "api",
        indexing: Indexing::AtCommit,
        new_likely: false,
    };
    let contact = core_contacts::upsert(conn, project, &upsert, &mut fields, now)?.contact;
    fields.save(conn, project)?;
    request.consent.apply(conn, mailer, &contact, now)?;
    let data = Value::Object(request.data.event_data());
    let event_id = events::emit(conn, project, Some(&contact.id), &request.event, &data, now)?;
    Ok(Tracked { contact_id: contact.id, event_id, at: now })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names() {
        for name in [
            "email.sent",
            "email.anything",
            "Email.Opened",
            "contact.subscribed",
            "contact.unsubscribed",
            "CONTACT.Unsubscribed",
            "segment.vip.entry",
            "segment.power-users.exit",
            "segment.a.b.entry",
        ] {
            assert!(is_reserved(name), "{name}");
            assert_eq!(check_name(name, "event").unwrap_err().fields()[0].code, "reserved_event");
        }
        for name in
            ["signup", "emailed", "contact.created", "segment.entry", "segment..exit", "segments.vip.entry"]
        {
            assert!(!is_reserved(name), "{name}");
        }
        assert_eq!(check_name("  ", "event").unwrap_err().fields()[0].code, "invalid_string");
        assert_eq!(check_name(&"x".repeat(201), "event").unwrap_err().fields()[0].code, "invalid_string");
        assert_eq!(check_name(" order placed ", "event").unwrap(), "order placed");
    }
}
