//! A data subject's requests (issue 35, item 6): everything the project holds about a contact,
//! as one JSON document ([`export`]), and the erasure of it ([`start`], then
//! [`crate::db::erasure::step`] until done). What stays names no one: the erasure's record
//! (when, and how many rows), the emails' counts, and a digest of the address on the
//! suppression list ([`digest`]), so no mail goes to it and an import skips it until the
//! operator lifts the entry.

use sha2::{Digest, Sha256};

use super::error::{Error, Limit, Result};
use super::ids::ContactId;
use crate::db::Tx;
use crate::db::contacts::Contact;
use crate::db::erasure::{EmailRecord, Erasure};

/// The most events, emails or received messages one export holds.
pub const EXPORT_ROWS: usize = 100_000;

/// The digest of an erased `address` (normalised, lower case) on `project`'s suppression list:
/// hex SHA-256 of the project's id, a colon and the address.
pub fn digest(project: &str, address: &str) -> String {
    let hash = Sha256::new()
        .chain_update(project)
        .chain_update(b":")
        .chain_update(address.to_ascii_lowercase())
        .finalize();
    format!("{hash:x}")
}

/// The addresses erased from one project whose entries the operator has not lifted, for checking
/// many addresses in one write (an import batch): a project that has none, as most have, costs
/// one query for the whole batch instead of a digest and a query an address.
pub struct Erased<'a> {
    project: &'a str,
    any: bool,
}

impl<'a> Erased<'a> {
    pub fn of(tx: &Tx, project: &'a str) -> crate::db::Result<Self> {
        Ok(Erased { project, any: crate::db::suppression_list::has_kind(tx, project, "erased")? })
    }

    /// Whether `address` is one of them.
    pub fn contains(&self, tx: &Tx, address: &str) -> crate::db::Result<bool> {
        if !self.any {
            return Ok(false);
        }
        let digest = digest(self.project, address);
        Ok(crate::db::suppression_list::entry(tx, self.project, "erased", &digest)?.is_some())
    }
}

/// Starts erasing `contact` of `project`: records the erasure, suppresses the address by its
/// digest, and queues the job that finishes it (see [`crate::db::erasure::step`]). Asking again
/// while it runs gives the same erasure. 404 for a contact the project does not have.
pub fn start(tx: &Tx, project: &str, contact: &ContactId, now: i64) -> Result<Erasure> {
    let found = super::contacts::find(tx, project, contact)?;
    if let Some(running) = crate::db::erasure::running_of(tx, project, &found.id)? {
        return Ok(running);
    }
    let erasure = Erasure {
        id: crate::db::ids::new_id(),
        project_id: project.to_string(),
        contact_id: found.id.clone(),
        status: "running".into(),
        rows: 0,
        requested_at: now,
        finished_at: None,
    };
    crate::db::erasure::insert(tx, &erasure)?;
    crate::db::suppression_list::insert(
        tx,
        &crate::db::suppression_list::Entry {
            id: crate::db::ids::new_id(),
            project_id: project.to_string(),
            kind: "erased".into(),
            value: digest(project, &found.email),
            source: "erasure".into(),
            reason: Some("erased at the person's request".into()),
            created_at: now,
        },
    )?;
    crate::db::jobs::enqueue(tx, &super::jobs::contact_erasure(project, &erasure.id))?;
    Ok(erasure)
}

/// Everything the project holds about one contact.
#[derive(Debug, Clone)]
pub struct Export {
    pub contact: Contact,
    pub consents: Vec<serde_json::Value>,
    pub events: Vec<(String, String, serde_json::Value, i64)>,
    pub emails: Vec<EmailRecord>,
    pub inbound: Vec<(String, String, String, i64)>,
}

/// `contact`'s data in `project`. 404 for a contact the project does not have; 413 when it has
/// more than [`EXPORT_ROWS`] events, emails or received messages.
pub fn export(conn: &Tx, project: &str, contact: &ContactId) -> Result<Export> {
    let found = super::contacts::find(conn, project, contact)?;
    let too_many = |n: usize| n > EXPORT_ROWS;
    let events = crate::db::erasure::events_of(conn, &found.id, EXPORT_ROWS + 1)?;
    let emails = crate::db::erasure::emails_of(conn, &found.id, EXPORT_ROWS + 1)?;
    let inbound = crate::db::erasure::inbound_of(conn, &found.id, EXPORT_ROWS + 1)?;
    if too_many(events.len()) || too_many(emails.len()) || too_many(inbound.len()) {
        return Err(Error::OverLimit(Limit::Rows {
            rows: EXPORT_ROWS,
            what: "contact",
            suggestion: "This contact has more than 100,000 events, emails or received messages: export the project instead",
        }));
    }
    Ok(Export {
        consents: crate::db::erasure::consents_of(conn, found.seq)?,
        contact: found,
        events,
        emails,
        inbound,
    })
}
