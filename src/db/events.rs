//! Events: named occurrences for a contact, tracked by clients or emitted by the service.

use rusqlite::{Connection, params};
use serde_json::Value;

/// Stores an event; returns its id.
pub fn insert(
    conn: &Connection,
    project: &str,
    contact: Option<&str>,
    name: &str,
    data: &Value,
    now: i64,
) -> rusqlite::Result<String> {
    let id = super::new_id();
    conn.prepare_cached(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![id, project, contact, name, data.to_string(), now])?;
    Ok(id)
}

/// The names of a contact's events, oldest first (for tests and the activity feed).
pub fn names_for_contact(conn: &Connection, contact: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt =
        conn.prepare_cached("SELECT name FROM events WHERE contact_id = ?1 ORDER BY created_at, rowid")?;
    stmt.query_map([contact], |r| r.get(0))?.collect()
}
