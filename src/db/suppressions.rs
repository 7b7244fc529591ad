//! Suppressed contacts: those that hard-bounced or complained, who get no MARKETING mail again.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// Why and since when a contact is suppressed.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppression {
    pub contact_id: String,
    /// `hard_bounce` or `complaint`.
    pub reason: String,
    /// The email whose bounce or complaint it was.
    pub email_id: Option<String>,
    /// What the source said (the bounce's diagnostic, the complaint's feedback type).
    pub detail: Option<String>,
    pub created_at: i64,
}

/// Suppresses a contact; a complaint replaces a bounce as the reason, never the other way.
pub fn put(conn: &Connection, project: &str, s: &Suppression) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO suppressions (contact_id, project_id, reason, email_id, detail, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (contact_id) DO UPDATE SET reason = excluded.reason, email_id = excluded.email_id,
             detail = excluded.detail, created_at = excluded.created_at
         WHERE suppressions.reason <> 'complaint'",
    )?
    .execute(params![s.contact_id, project, s.reason, s.email_id, s.detail, s.created_at])?;
    Ok(())
}

pub fn get(conn: &Connection, contact: &str) -> Result<Option<Suppression>> {
    Ok(conn
        .prepare_cached(
            "SELECT contact_id, reason, email_id, detail, created_at FROM suppressions WHERE contact_id = ?1",
        )?
        .query_row([contact], |r| {
            Ok(Suppression {
                contact_id: r.get(0)?,
                reason: r.get(1)?,
                email_id: r.get(2)?,
                detail: r.get(3)?,
                created_at: r.get(4)?,
            })
        })
        .optional()?)
}

/// Lifts a contact's suppression.
pub fn delete(conn: &Connection, contact: &str) -> Result<()> {
    conn.execute("DELETE FROM suppressions WHERE contact_id = ?1", [contact])?;
    Ok(())
}
