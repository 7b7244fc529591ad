//! Project exports (V47) as recorded, and the pages of rows an export reads: each page a short
//! read of its own, found from the last row of the page before, so an export of any size holds
//! neither the database nor much memory.

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Result;

#[derive(Debug, Clone, PartialEq)]
pub struct Export {
    pub id: String,
    pub project_id: String,
    /// `queued`, `done` or `failed`.
    pub status: String,
    pub bytes: Option<i64>,
    pub error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, project_id, status, bytes, error, created_at, finished_at";

fn export(r: &rusqlite::Row) -> rusqlite::Result<Export> {
    Ok(Export {
        id: r.get(0)?,
        project_id: r.get(1)?,
        status: r.get(2)?,
        bytes: r.get(3)?,
        error: r.get(4)?,
        created_at: r.get(5)?,
        finished_at: r.get(6)?,
    })
}

pub fn insert(conn: &Connection, e: &Export) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO project_exports ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![e.id, e.project_id, e.status, e.bytes, e.error, e.created_at, e.finished_at],
    )?;
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Export>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM project_exports WHERE id = ?1 AND project_id = ?2"),
            [id, project],
            export,
        )
        .optional()?)
}

/// The project's export still being made, if any.
pub fn queued(conn: &Connection, project: &str) -> Result<Option<Export>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM project_exports WHERE project_id = ?1 AND status = 'queued'"),
            [project],
            export,
        )
        .optional()?)
}

/// Records how export `id` ended; the ids of the project's earlier finished exports, whose
/// files go (one export is kept).
pub fn finish(
    conn: &Connection,
    id: &str,
    outcome: std::result::Result<i64, &str>,
    now: i64,
) -> Result<Vec<String>> {
    let (status, bytes, error) = match outcome {
        Ok(bytes) => ("done", Some(bytes), None),
        Err(e) => ("failed", None, Some(e)),
    };
    conn.execute(
        "UPDATE project_exports SET status = ?2, bytes = ?3, error = ?4, finished_at = ?5 WHERE id = ?1",
        params![id, status, bytes, error, now],
    )?;
    let mut statement = conn.prepare(
        "DELETE FROM project_exports WHERE id != ?1 AND status != 'queued'
           AND project_id = (SELECT project_id FROM project_exports WHERE id = ?1) RETURNING id",
    )?;
    let gone = statement.query_map([id], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(gone)
}

/// A page of the project's contacts after `(created_at, seq)`, oldest first along
/// `contacts_by_created`: `(seq, id, email, subscribed, data, created_at)`.
pub type ContactRow = (i64, String, String, bool, String, i64);

const CONTACTS_PAGE: &str = "SELECT seq, id, email, subscribed, json(data), created_at FROM contacts
         WHERE project_id = ?1 AND (created_at, seq) > (?2, ?3) ORDER BY created_at, seq LIMIT ?4";

pub fn contacts_after(
    conn: &Connection,
    project: &str,
    after: (i64, i64),
    limit: usize,
) -> Result<Vec<ContactRow>> {
    let mut statement = conn.prepare_cached(CONTACTS_PAGE)?;
    let rows = statement.query_map(params![project, after.0, after.1, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A page of the project's events after `(created_at, rowid)`: `(created_at, rowid, id, contact
/// id, name, data)`.
pub type EventRow = (i64, i64, String, Option<String>, String, String);

const EVENTS_PAGE: &str = "SELECT created_at, rowid, id, contact_id, name, data FROM events
         WHERE project_id = ?1 AND (created_at, rowid) > (?2, ?3) ORDER BY created_at, rowid LIMIT ?4";

pub fn events_after(
    conn: &Connection,
    project: &str,
    after: (i64, i64),
    limit: usize,
) -> Result<Vec<EventRow>> {
    let mut statement = conn.prepare_cached(EVENTS_PAGE)?;
    let rows = statement.query_map(params![project, after.0, after.1, limit as i64], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A page of the project's emails after `(created_at, rowid)`: `(created_at, rowid, id, to,
/// from, subject, status, source, sent_at)`.
pub type EmailRow = (i64, i64, String, String, String, String, String, String, Option<i64>);

const EMAILS_PAGE: &str =
    "SELECT created_at, rowid, id, to_email, from_email, subject, status, source_type, sent_at FROM emails
         WHERE project_id = ?1 AND (created_at, rowid) > (?2, ?3) ORDER BY created_at, rowid LIMIT ?4";

pub fn emails_after(
    conn: &Connection,
    project: &str,
    after: (i64, i64),
    limit: usize,
) -> Result<Vec<EmailRow>> {
    let mut statement = conn.prepare_cached(EMAILS_PAGE)?;
    let rows = statement.query_map(params![project, after.0, after.1, limit as i64], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
            r.get(8)?,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each page is a range of an index, in the index's order: a project's export reads every
    /// row once, whatever the other projects hold.
    #[test]
    fn every_page_is_a_range_of_an_index() {
        for sql in [CONTACTS_PAGE, EVENTS_PAGE, EMAILS_PAGE] {
            let plan = crate::db::batches::searches_an_index(sql, &[&"p", &0, &0, &500]);
            assert!(plan.is_ok(), "{sql}: {plan:?}");
        }
    }
}
