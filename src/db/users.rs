//! Dashboard users.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::clock;

/// A user as stored.
#[derive(Debug, Clone)]
pub struct User {
    pub id: String,
    pub email: String,
    pub password_hash: String,
    pub email_verified: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, email, password_hash, email_verified, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: r.get(0)?,
        email: r.get(1)?,
        password_hash: r.get(2)?,
        email_verified: r.get(3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
    })
}

/// Inserts a user; `email` must already be normalised. Fails on a taken email (unique constraint).
pub fn insert(conn: &Connection, email: &str, password_hash: &str) -> Result<User> {
    let id = super::ids::new_id();
    let now = clock::now_ms();
    conn.execute(
        "INSERT INTO users (id, email, password_hash, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)",
        params![id, email, password_hash, now],
    )?;
    Ok(User {
        id,
        email: email.into(),
        password_hash: password_hash.into(),
        email_verified: false,
        created_at: now,
        updated_at: now,
    })
}

/// Whether any account exists.
pub fn any(conn: &Connection) -> Result<bool> {
    Ok(conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM users)")?.query_row([], |r| r.get(0))?)
}

/// The id of the first account made: the instance's owner.
pub fn first_id(conn: &Connection) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT id FROM users ORDER BY created_at, id LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

pub fn by_email(conn: &Connection, email: &str) -> Result<Option<User>> {
    Ok(conn
        .query_row(&format!("SELECT {COLUMNS} FROM users WHERE email = ?1"), [email], from_row)
        .optional()?)
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<User>> {
    Ok(conn.query_row(&format!("SELECT {COLUMNS} FROM users WHERE id = ?1"), [id], from_row).optional()?)
}

/// Sets a new password hash.
pub fn set_password(conn: &Connection, id: &str, password_hash: &str) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE users SET password_hash = ?2, updated_at = ?3 WHERE id = ?1",
        params![id, password_hash, clock::now_ms()],
    )? > 0)
}

/// Marks the user's address as verified (a link mailed to it was opened).
pub fn set_verified(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE users SET email_verified = 1, updated_at = ?2 WHERE id = ?1 AND email_verified = 0",
        params![id, clock::now_ms()],
    )? > 0)
}
