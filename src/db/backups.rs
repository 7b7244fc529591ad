//! The record of backups (V45), and the copy itself: `VACUUM INTO` on a connection of its own,
//! checked by SQLite's integrity check on the copy.

use std::path::Path;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::error::Result;

/// A backup as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Backup {
    pub id: i64,
    pub path: String,
    pub scheduled: bool,
    pub status: String,
    pub bytes: Option<i64>,
    pub uploads: Option<i64>,
    pub error: Option<String>,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, path, scheduled, status, bytes, uploads, error, started_at, finished_at";

fn row(r: &rusqlite::Row) -> rusqlite::Result<Backup> {
    Ok(Backup {
        id: r.get(0)?,
        path: r.get(1)?,
        scheduled: r.get(2)?,
        status: r.get(3)?,
        bytes: r.get(4)?,
        uploads: r.get(5)?,
        error: r.get(6)?,
        started_at: r.get(7)?,
        finished_at: r.get(8)?,
    })
}

/// Records a backup being made; its id.
pub fn start(conn: &Connection, path: &str, scheduled: bool, now: i64) -> Result<i64> {
    conn.execute(
        "INSERT INTO backups (path, scheduled, status, started_at) VALUES (?1, ?2, 'running', ?3)",
        params![path, scheduled, now],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Records how backup `id` ended: checked and kept (`Ok((bytes, uploads))`) or not.
pub fn finish(
    conn: &Connection,
    id: i64,
    outcome: std::result::Result<(i64, i64), &str>,
    now: i64,
) -> Result<()> {
    let (status, bytes, uploads, error) = match outcome {
        Ok((bytes, uploads)) => ("ok", Some(bytes), Some(uploads), None),
        Err(e) => ("failed", None, None, Some(e)),
    };
    conn.execute(
        "UPDATE backups SET status = ?2, bytes = ?3, uploads = ?4, error = ?5, finished_at = ?6 WHERE id = ?1",
        params![id, status, bytes, uploads, error, now],
    )?;
    Ok(())
}

/// Records that backup `id`'s files were removed (rotated out).
pub fn removed(conn: &Connection, id: i64, now: i64) -> Result<()> {
    conn.execute("UPDATE backups SET status = 'removed', finished_at = ?2 WHERE id = ?1", params![id, now])?;
    Ok(())
}

/// The newest backups first, at most `limit`.
pub fn recent(conn: &Connection, limit: usize) -> Result<Vec<Backup>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM backups ORDER BY started_at DESC, id DESC LIMIT ?1"
    ))?;
    let rows = statement.query_map([limit as i64], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The scheduled backups that are kept (checked), newest first.
pub fn kept_scheduled(conn: &Connection) -> Result<Vec<Backup>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM backups WHERE scheduled = 1 AND status = 'ok' ORDER BY started_at DESC, id DESC"
    ))?;
    let rows = statement.query_map([], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When the newest scheduled backup that ended `status` started.
pub fn last_scheduled(conn: &Connection, status: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT max(started_at) FROM backups WHERE scheduled = 1 AND status = ?1")?
        .query_row([status], |r| r.get(0))
        .optional()?
        .flatten())
}

/// When the newest backup that was checked and kept (of either kind) started.
pub fn last_ok(conn: &Connection) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached("SELECT max(started_at) FROM backups WHERE status IN ('ok', 'removed')")?
        .query_row([], |r| r.get(0))?)
}

/// Backups left `running` by a process that died: failed.
pub fn abandon_running(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE backups SET status = 'failed', error = 'the server stopped while it was made', finished_at = ?1
         WHERE status = 'running'",
        [now],
    )?)
}

/// What SQLite's integrity check says of the database file at `path` (`ok` when sound), read
/// without changing it; an error when it is no SQLite database at all.
pub fn integrity(path: &Path) -> Result<String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let mut statement = conn.prepare("PRAGMA integrity_check")?;
    let lines: Vec<String> = statement.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(lines.join("; "))
}

/// The newest migration applied to the database file at `path` (0 when it has none).
pub fn schema_version(path: &Path) -> Result<i64> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    super::migrate::applied(&conn)
}
