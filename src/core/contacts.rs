//! Creating, changing and deleting contacts, with the custom-field rules, the field catalogue
//! and subscription events kept in step. Every writer of contacts (the contacts API, sends,
//! tracking, imports, bulk jobs, workflows) goes through here, inside its own transaction.

use crate::db::Tx;
use serde_json::{Map, json};

use super::data::{DataPatch, NewData};
use super::email;
use super::events;
use super::fields::FieldChanges;
use super::ids::ContactId;
use crate::core::error::{Error, FieldError, Result, on_duplicate};
use crate::db::contacts::{self, Contact, Indexing};

/// The normalised address, or 422 `invalid_string` on `field`.
pub fn parse_email(address: &str, field: &str) -> Result<String> {
    email::normalize(address).map_err(|why| {
        Error::Invalid(vec![
            FieldError::new(field, "invalid_string", format!("Invalid email: the address {why}"))
                .received(json!(address.chars().take(300).collect::<String>())),
        ])
    })
}

/// The contact a test send to `to` is rendered as: the one named by `chosen` (422 on
/// `contactId` when the project has none with that id), else the contact with that address, if
/// any.
pub fn test_recipient(conn: &Tx, project: &str, chosen: Option<&str>, to: &str) -> Result<Option<String>> {
    match chosen.map(str::trim).filter(|c| !c.is_empty()) {
        Some(id) => contacts::by_id(conn, project, id)?.map(|c| Some(c.id)).ok_or_else(|| {
            Error::Invalid(vec![
                FieldError::new("contactId", "not_found", "No contact of this project has this id")
                    .received(json!(id)),
            ])
        }),
        None => Ok(contacts::by_email(conn, project, to)?.map(|c| c.id)),
    }
}

/// An upsert by email.
pub struct Upsert<'a> {
    /// Already normalised (see [`parse_email`]).
    pub email: &'a str,
    /// `None` keeps an existing contact's state and gives a new one `default_subscribed`.
    pub subscribed: Option<bool>,
    pub default_subscribed: bool,
    pub data: &'a DataPatch,
    /// Where the change comes from, recorded on subscription events (`api`, `import`, ...).
    pub source: &'a str,
    /// When a new contact is counted and enters the email search index (batches defer both to
    /// their end).
    pub indexing: Indexing<'a>,
    /// Whether to try the insert first, as a batch does whose last row made a new contact:
    /// right, it saves a lookup; wrong, it costs an insert that writes nothing.
    pub new_likely: bool,
}

/// The contact after an upsert, and whether it was created.
#[derive(Debug, Clone)]
pub struct Upserted {
    pub contact: Contact,
    pub is_new: bool,
}

/// Contact `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &ContactId) -> Result<Contact> {
    contacts::by_id(conn, project, id)?.ok_or_else(|| ContactId::missing(id))
}

/// Each address of `emails` (normalised when it is one) with the contact of `project` that has
/// it, in the order asked.
pub fn lookup(conn: &Tx, project: &str, emails: Vec<String>) -> Result<Vec<(String, Option<Contact>)>> {
    let mut out = Vec::with_capacity(emails.len());
    for address in emails {
        match email::normalize(&address) {
            Ok(normalized) => {
                let found = contacts::by_email(conn, project, &normalized)?;
                out.push((normalized, found));
            }
            Err(_) => out.push((address, None)),
        }
    }
    Ok(out)
}

/// Creates the contact or patches the existing one, as a client asks (`POST /contacts`), with
/// the field catalogue kept in step.
pub fn put(tx: &Tx, project: &str, request: &Upsert<'_>, now: i64) -> Result<Upserted> {
    let mut fields = FieldChanges::default();
    let upserted = upsert(tx, project, request, &mut fields, now)?;
    fields.save(tx, project)?;
    Ok(upserted)
}

/// Changes contact `id` of `project` as a client asks (`source` says who: `api`), with the
/// field catalogue kept in step.
pub fn change(
    tx: &Tx,
    project: &str,
    id: &ContactId,
    changes: &Changes<'_>,
    source: &str,
    now: i64,
) -> Result<Contact> {
    let contact = find(tx, project, id)?;
    let mut fields = FieldChanges::default();
    let contact = update(tx, contact, changes, &mut fields, source, now)?;
    fields.save(tx, project)?;
    Ok(contact)
}

/// Deletes contact `id` of `project` and its events for good.
pub fn remove(tx: &Tx, project: &str, id: &ContactId) -> Result<()> {
    let contact = find(tx, project, id)?;
    let mut fields = FieldChanges::default();
    delete(tx, &contact, &mut fields)?;
    fields.save(tx, project)?;
    Ok(())
}

/// Creates the contact or patches the existing one.
pub fn upsert(
    conn: &Tx,
    project: &str,
    request: &Upsert<'_>,
    fields: &mut FieldChanges,
    now: i64,
) -> Result<Upserted> {
    upsert_made(conn, project, request, None, fields, now)
}

/// [`upsert`], with the data a new contact would get already made from `request.data`
/// (`made`): an import makes it while it reads its file, apart from the writer.
pub fn upsert_made(
    conn: &Tx,
    project: &str,
    request: &Upsert<'_>,
    mut made: Option<NewData>,
    fields: &mut FieldChanges,
    now: i64,
) -> Result<Upserted> {
    if request.new_likely
        && let Ok(contact) = new_contact(project, request, made.take(), now)
        && let Some(contact) = contacts::insert_if_free(conn, contact, request.indexing)?
    {
        return Ok(created(contact, fields));
    }
    match contacts::by_email(conn, project, request.email)? {
        None => {
            let contact =
                contacts::insert_new(conn, new_contact(project, request, made, now)?, request.indexing)?;
            Ok(created(contact, fields))
        }
        Some(existing) => {
            let changes = Changes { email: None, subscribed: request.subscribed, data: request.data };
            let contact = update(conn, existing, &changes, fields, request.source, now)?;
            Ok(Upserted { contact, is_new: false })
        }
    }
}

/// The contact `request` makes when its email is new to the project: its data checked (or
/// `made` already).
fn new_contact<'a>(
    project: &'a str,
    request: &Upsert<'a>,
    made: Option<NewData>,
    now: i64,
) -> Result<contacts::NewContact<'a>> {
    let NewData { map, json } = match made {
        Some(made) => made,
        None => request.data.new_data()?,
    };
    let subscribed = request.subscribed.unwrap_or(request.default_subscribed);
    Ok(contacts::NewContact { project, email: request.email, subscribed, data: map, json, now })
}

/// A contact just inserted, its fields counted.
fn created(contact: Contact, fields: &mut FieldChanges) -> Upserted {
    fields.record(&Map::new(), &contact.data);
    Upserted { contact, is_new: true }
}

/// Changes to one contact.
pub struct Changes<'a> {
    /// Already normalised.
    pub email: Option<String>,
    pub subscribed: Option<bool>,
    pub data: &'a DataPatch,
}

/// Applies `changes`; a subscription flip emits `contact.subscribed` or `contact.unsubscribed`.
/// 409 when the new email belongs to another contact of the project.
pub fn update(
    conn: &Tx,
    mut contact: Contact,
    changes: &Changes<'_>,
    fields: &mut FieldChanges,
    source: &str,
    now: i64,
) -> Result<Contact> {
    let (data, data_changed) = changes.data.applied_to(&contact.data)?;
    let mut changed = data_changed;
    let renamed = changes.email.as_deref().filter(|e| *e != contact.email);
    if let Some(email) = renamed {
        if contacts::by_email(conn, &contact.project_id, email)?.is_some() {
            return Err(Error::conflict("Another contact in this project already uses this email"));
        }
        contact.email = email.to_string();
        changed = true;
    }
    let flipped = changes.subscribed.filter(|s| *s != contact.subscribed);
    if let Some(subscribed) = flipped {
        contact.subscribed = subscribed;
        changed = true;
    }
    if !changed {
        return Ok(contact);
    }
    if data_changed {
        fields.record(&contact.data, &data);
        contact.data = data;
    }
    contact.updated_at = now;
    if renamed.is_some() || flipped.is_some() {
        contacts::update(conn, &contact)
            .map_err(|e| on_duplicate(e, "Another contact in this project already uses this email"))?;
    } else {
        contacts::update_data(conn, &contact)?;
    }
    if let Some(subscribed) = flipped {
        events::subscription_changed(conn, &contact.project_id, &contact.id, subscribed, source, now)?;
    }
    Ok(contact)
}

/// Sets the subscription state; returns whether it changed (and emitted its event).
pub fn set_subscribed(conn: &Tx, contact: Contact, subscribed: bool, source: &str, now: i64) -> Result<bool> {
    if contact.subscribed == subscribed {
        return Ok(false);
    }
    let changes = Changes { email: None, subscribed: Some(subscribed), data: &DataPatch::default() };
    update(conn, contact, &changes, &mut FieldChanges::default(), source, now)?;
    Ok(true)
}

/// Subscribes or unsubscribes `contact` from a page a mailed link opened (source `link`). An
/// unsubscribe that changes something is credited, once, to the email the link came in
/// (`credit`): its campaign counts it.
pub fn set_from_link(
    tx: &Tx,
    contact: Contact,
    subscribed: bool,
    credit: Option<&str>,
    now: i64,
) -> Result<()> {
    let changed = set_subscribed(tx, contact, subscribed, "link", now)?;
    if let Some(email) = credit.filter(|_| changed && !subscribed) {
        crate::db::emails::credit_unsubscribe(tx, email, now)?;
    }
    Ok(())
}

/// Most days a contact may pause marketing mail for.
pub const MAX_SNOOZE_DAYS: i64 = 365;

/// Pauses the contact's marketing mail until `until` (`None`, or a time past: resumes it), and
/// emits `contact.snoozed` (`{until, source}`) or `contact.unsnoozed` (`{source}`) when that
/// changes something. Every sender honours the pause ([`super::consent::may_send`]).
pub fn snooze(tx: &Tx, mut contact: Contact, until: Option<i64>, source: &str, now: i64) -> Result<Contact> {
    let until = until.filter(|u| *u > now);
    if until.is_some_and(|u| u > now + MAX_SNOOZE_DAYS * 86_400_000) {
        return Err(Error::invalid(
            "snoozedUntil",
            "too_big",
            format!("marketing mail is paused for at most {MAX_SNOOZE_DAYS} days"),
        ));
    }
    let was = contact.snoozed_until.filter(|u| *u > now);
    if was == until {
        return Ok(contact);
    }
    contacts::set_snoozed_until(tx, contact.seq, until, now)?;
    contact.snoozed_until = until;
    contact.updated_at = now;
    let (name, data) = match until {
        Some(until) => {
            (events::CONTACT_SNOOZED, json!({ "until": crate::clock::iso(until), "source": source }))
        }
        None => (events::CONTACT_UNSNOOZED, json!({ "source": source })),
    };
    events::emit(tx, &contact.project_id, Some(&contact.id), name, &data, now)?;
    Ok(contact)
}

/// Deletes a contact and its events; its fields leave the catalogue's counts.
pub fn delete(conn: &Tx, contact: &Contact, fields: &mut FieldChanges) -> Result<()> {
    fields.record(&contact.data, &Map::new());
    contacts::delete(conn, contact.seq)?;
    Ok(())
}
