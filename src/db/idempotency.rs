//! Idempotency records: one per (project, endpoint, key), kept until it expires.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// The first request made with a key.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub key: String,
    pub request: String,
    pub status_code: u16,
    pub created_at: i64,
}

/// Records `key` for this request inside the caller's transaction, or returns the live record of
/// an earlier request. An expired record is replaced. Since the record is written in the same
/// transaction as the request's work, a request that fails leaves no record behind.
pub fn claim(
    conn: &Connection,
    project: &str,
    key: &str,
    request: &str,
    status_code: u16,
    now: i64,
    ttl_ms: i64,
) -> Result<Result<(), Record>> {
    let existing = conn
        .query_row(
            "SELECT key, request, status_code, created_at, expires_at FROM idempotency_keys
             WHERE project_id = ?1 AND request = ?2 AND key = ?3",
            [project, request, key],
            |r| {
                Ok((
                    Record {
                        key: r.get(0)?,
                        request: r.get(1)?,
                        status_code: r.get(2)?,
                        created_at: r.get(3)?,
                    },
                    r.get::<_, i64>(4)?,
                ))
            },
        )
        .optional()?;
    if let Some((record, expires_at)) = existing {
        if expires_at > now {
            return Ok(Err(record));
        }
        conn.execute(
            "DELETE FROM idempotency_keys WHERE project_id = ?1 AND request = ?2 AND key = ?3",
            [project, request, key],
        )?;
    }
    conn.execute(
        "INSERT INTO idempotency_keys (project_id, key, request, status_code, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![project, key, request, status_code, now, now + ttl_ms],
    )?;
    Ok(Ok(()))
}

/// Deletes expired records; returns how many.
pub fn sweep(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM idempotency_keys WHERE expires_at <= ?1", [now])?)
}
