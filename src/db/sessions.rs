//! Dashboard sessions: a row per signed-in browser, found by the digest of the session id its
//! cookie carries. Deleting the row ends the session whatever the cookie says.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

use super::users::{self, User};

/// Records a new session of `user` until `expires_at`.
pub fn insert(conn: &Connection, digest: &str, user: &str, now: i64, expires_at: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO sessions (digest, user_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4)",
        params![digest, user, now, expires_at],
    )?;
    Ok(())
}

/// The user of a live session: the row exists, belongs to `user` and has not expired.
pub fn user(conn: &Connection, digest: &str, user: &str, now: i64) -> Result<Option<User>> {
    let live: Option<String> = conn
        .prepare_cached(
            "SELECT user_id FROM sessions WHERE digest = ?1 AND user_id = ?2 AND expires_at > ?3",
        )?
        .query_row(params![digest, user, now], |r| r.get(0))
        .optional()?;
    match live {
        Some(id) => users::by_id(conn, &id),
        None => Ok(None),
    }
}

/// Ends one session.
pub fn delete(conn: &Connection, digest: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM sessions WHERE digest = ?1", [digest])? > 0)
}

/// Ends every session of a user (password change or reset); returns how many.
pub fn delete_for_user(conn: &Connection, user: &str) -> Result<usize> {
    Ok(conn.execute("DELETE FROM sessions WHERE user_id = ?1", [user])?)
}

/// Deletes expired sessions; returns how many.
pub fn sweep(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM sessions WHERE expires_at <= ?1", [now])?)
}
