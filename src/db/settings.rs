//! Instance-wide settings, among them the secrets generated on first start.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

use crate::clock;

/// The value of `key`, if set.
pub fn get(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0)).optional()?)
}

/// The number stored under `key`, or `default` when it is unset or not a number.
pub fn number(conn: &Connection, key: &str, default: i64) -> Result<i64> {
    let value: Option<String> = conn
        .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(default))
}

/// The value of `key`, storing `make()` first when it is not set. Two processes racing here agree
/// on one value: the insert is ignored when the row exists and the stored value is read back.
pub fn get_or_insert(conn: &Connection, key: &str, make: impl FnOnce() -> String) -> Result<String> {
    if let Some(value) = get(conn, key)? {
        return Ok(value);
    }
    conn.execute(
        "INSERT INTO settings (key, value, created_at) VALUES (?1, ?2, ?3) ON CONFLICT(key) DO NOTHING",
        params![key, make(), clock::now_ms()],
    )?;
    Ok(conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0))?)
}

/// Sets `key` to `value`, whatever it was.
pub fn set(conn: &Connection, key: &str, value: &str) -> Result<()> {
    Ok(conn
        .execute(
            "INSERT INTO settings (key, value, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value, clock::now_ms()],
        )
        .map(drop)?)
}
