//! The project's suppression list as stored (migration V32): addresses and domains no mail, or no
//! marketing mail, goes to.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::Result;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Entry {
    pub id: String,
    pub project_id: String,
    /// `address`, `domain`, or `erased` (an erased contact's address as a digest).
    pub kind: String,
    pub value: String,
    /// `bounce`, `complaint`, `manual`, `import` or `erasure`.
    pub source: String,
    pub reason: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, project_id, kind, value, source, reason, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        id: r.get(0)?,
        project_id: r.get(1)?,
        kind: r.get(2)?,
        value: r.get(3)?,
        source: r.get(4)?,
        reason: r.get(5)?,
        created_at: r.get(6)?,
    })
}

/// Adds an entry; false when the project lists that address or domain already (kept as it was).
pub fn insert(conn: &Connection, e: &Entry) -> Result<bool> {
    let n = conn
        .prepare_cached(&format!(
            "INSERT INTO suppression_list ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING"
        ))?
        .execute(params![e.id, e.project_id, e.kind, e.value, e.source, e.reason, e.created_at])?;
    Ok(n == 1)
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Entry>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM suppression_list WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("DELETE FROM suppression_list WHERE id = ?1", [id])?;
    Ok(())
}

/// The entry that lists `address`, its digest `erased` (see V46), or one of `domains` (the
/// address's domain and its parents), an address's own first.
pub fn matching(
    conn: &Connection,
    project: &str,
    address: &str,
    erased: &str,
    domains: &[String],
) -> Result<Option<Entry>> {
    let listed = [("address", address), ("erased", erased)].into_iter();
    for (kind, value) in listed.chain(domains.iter().map(|d| ("domain", d.as_str()))) {
        if let Some(found) = entry(conn, project, kind, value)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The project's entry `kind`, `value`, if listed.
pub fn entry(conn: &Connection, project: &str, kind: &str, value: &str) -> Result<Option<Entry>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM suppression_list WHERE project_id = ?1 AND kind = ?2 AND value = ?3"
    ))?;
    Ok(statement.query_row([project, kind, value], from_row).optional()?)
}

/// Whether the project's list has an entry of `kind`.
pub fn has_kind(conn: &Connection, project: &str, kind: &str) -> Result<bool> {
    let mut statement =
        conn.prepare_cached("SELECT 1 FROM suppression_list WHERE project_id = ?1 AND kind = ?2 LIMIT 1")?;
    Ok(statement.query_row([project, kind], |_| Ok(())).optional()?.is_some())
}

/// A page of the list, newest first: entries before `before` (`created_at`, `id`), whose value
/// contains `search` when given.
pub fn page(
    conn: &Connection,
    project: &str,
    before: Option<(i64, String)>,
    search: Option<&str>,
    limit: usize,
) -> Result<Vec<Entry>> {
    let (at, id) = before.unwrap_or((i64::MAX, String::new()));
    let pattern =
        search.map(|s| format!("%{}%", s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM suppression_list
         WHERE project_id = ?1 AND (created_at < ?2 OR (created_at = ?2 AND (?3 = '' OR id < ?3)))
           AND (?4 IS NULL OR value LIKE ?4 ESCAPE '\\')
         ORDER BY created_at DESC, id DESC LIMIT ?5"
    ))?;
    let rows = statement.query_map(params![project, at, id, pattern, limit as i64], from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM suppression_list WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}
