//! The capture outbox: messages the capture transport kept instead of sending (the delivery
//! worker writes them), read by `GET /outbox` and `tidings outbox`.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A captured message.
#[derive(Debug, Clone)]
pub struct Captured {
    pub id: i64,
    pub project_id: String,
    pub email_id: Option<String>,
    pub message_id: String,
    /// The envelope sender a relay would have been given.
    pub from: String,
    pub to: String,
    pub subject: String,
    pub size: i64,
    pub created_at: i64,
}

const COLUMNS: &str =
    "id, project_id, email_id, message_id, envelope_from, envelope_to, subject, length(raw), created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Captured> {
    Ok(Captured {
        id: r.get(0)?,
        project_id: r.get(1)?,
        email_id: r.get(2)?,
        message_id: r.get(3)?,
        from: r.get(4)?,
        to: r.get(5)?,
        subject: r.get(6)?,
        size: r.get(7)?,
        created_at: r.get(8)?,
    })
}

/// Newest first: up to `limit` messages with an id below `before`, of `project` (every project's
/// when `None`) and to `to` (anyone when `None`).
pub fn list(
    conn: &Connection,
    project: Option<&str>,
    to: Option<&str>,
    before: Option<i64>,
    limit: usize,
) -> Result<Vec<Captured>> {
    Ok(conn
        .prepare_cached(&list_sql(project.is_some()))?
        .query_map(params![project, to, before, limit as i64], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The query of [`list`], spelled out for either case: `?1 IS NULL OR project_id = ?1` would
/// keep SQLite off the project's index.
fn list_sql(of_project: bool) -> String {
    let project = if of_project { "project_id = ?1" } else { "?1 IS NULL" };
    format!(
        "SELECT {COLUMNS} FROM outbox WHERE {project} AND (?2 IS NULL OR envelope_to = ?2)
           AND (?3 IS NULL OR id < ?3) ORDER BY id DESC LIMIT ?4"
    )
}

pub fn count(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn.query_row("SELECT count(*) FROM outbox WHERE project_id = ?1", [project], |r| r.get(0))?)
}

/// One message and its source, when it is `project`'s (any project's when `None`).
/// A captured message's row without its bytes (its `size` says how large they are).
pub fn head(conn: &Connection, id: i64, project: Option<&str>) -> Result<Option<Captured>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM outbox WHERE id = ?1 AND (?2 IS NULL OR project_id = ?2)"),
            params![id, project],
            from_row,
        )
        .optional()?)
}

pub fn get(conn: &Connection, id: i64, project: Option<&str>) -> Result<Option<(Captured, Vec<u8>)>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS}, raw FROM outbox WHERE id = ?1 AND (?2 IS NULL OR project_id = ?2)"),
            params![id, project],
            |r| Ok((from_row(r)?, r.get(9)?)),
        )
        .optional()?)
}

/// Keeps a message the capture transport took in place of a relay.
pub fn insert(
    conn: &Connection,
    email: &super::emails::Email,
    (envelope_from, subject, raw): (&str, &str, &[u8]),
    now: i64,
) -> Result<()> {
    conn.execute(
        "INSERT INTO outbox (project_id, email_id, message_id, envelope_from, envelope_to, subject, raw, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![email.project_id, email.id, email.message_id, envelope_from, email.to_email, subject, raw, now],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A project's page of the outbox walks its index, however large the others' are.
    #[test]
    fn a_projects_messages_are_found_by_its_index() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::list_sql(true)))
            .unwrap()
            .query_map(rusqlite::params!["p", None::<String>, None::<i64>, 10], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(plan.iter().all(|step| !step.starts_with("SCAN")), "{plan:?}");
    }
}
