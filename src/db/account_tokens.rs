//! Single-use tokens mailed to a user (address verification, password reset), found by digest.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// What a token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    VerifyEmail,
    ResetPassword,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Purpose::VerifyEmail => "verify_email",
            Purpose::ResetPassword => "reset_password",
        }
    }
}

/// A token that was still valid when it was taken.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub user_id: String,
    /// The address the token was mailed to.
    pub email: String,
}

/// Records a token for `user`, replacing the user's earlier ones of the same purpose (only the
/// newest link works).
pub fn issue(
    conn: &Connection,
    digest: &str,
    user: &str,
    purpose: Purpose,
    email: &str,
    now: i64,
    expires_at: i64,
) -> Result<()> {
    conn.execute(
        "DELETE FROM account_tokens WHERE user_id = ?1 AND purpose = ?2",
        params![user, purpose.as_str()],
    )?;
    conn.execute(
        "INSERT INTO account_tokens (digest, user_id, purpose, email, created_at, expires_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![digest, user, purpose.as_str(), email, now, expires_at],
    )?;
    Ok(())
}

/// Takes a token: deletes it and returns whom it was for, when it exists for `purpose` and has
/// not expired. A token is used once whatever happens next in the caller's transaction commits.
pub fn take(conn: &Connection, digest: &str, purpose: Purpose, now: i64) -> Result<Option<Taken>> {
    let found = conn
        .query_row(
            "DELETE FROM account_tokens WHERE digest = ?1 AND purpose = ?2 RETURNING user_id, email, expires_at",
            params![digest, purpose.as_str()],
            |r| Ok((Taken { user_id: r.get(0)?, email: r.get(1)? }, r.get::<_, i64>(2)?)),
        )
        .optional()?;
    Ok(found.filter(|(_, expires_at)| *expires_at > now).map(|(taken, _)| taken))
}

/// Ends every token of a user for `purpose` (a reset link stops working once the password is
/// changed some other way).
pub fn end_all(conn: &Connection, user: &str, purpose: Purpose) -> Result<usize> {
    Ok(conn.execute(
        "DELETE FROM account_tokens WHERE user_id = ?1 AND purpose = ?2",
        params![user, purpose.as_str()],
    )?)
}

/// Deletes expired tokens; returns how many.
pub fn sweep(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM account_tokens WHERE expires_at <= ?1", [now])?)
}
