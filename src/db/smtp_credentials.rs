//! Credentials for the submission listener, as stored (migration V26).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::Result;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Credential {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub username: String,
    pub password_digest: String,
    /// `None`: any verified domain of the project.
    pub allowed_from_domains: Option<Vec<String>>,
    /// What mail sent with it tracks by default: `opens`, `clicks`.
    pub track: Vec<String>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

const COLUMNS: &str =
    "id, project_id, name, username, password_digest, allowed_from_domains, track, created_at, last_used_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Credential> {
    let allowed: Option<String> = r.get(5)?;
    let track: String = r.get(6)?;
    Ok(Credential {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        username: r.get(3)?,
        password_digest: r.get(4)?,
        allowed_from_domains: allowed.and_then(|a| serde_json::from_str(&a).ok()),
        track: serde_json::from_str(&track).unwrap_or_default(),
        created_at: r.get(7)?,
        last_used_at: r.get(8)?,
    })
}

pub fn insert(conn: &Connection, c: &Credential) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO smtp_credentials ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
        params![
            c.id,
            c.project_id,
            c.name,
            c.username,
            c.password_digest,
            c.allowed_from_domains.as_ref().map(|a| serde_json::to_string(a).unwrap_or_default()),
            serde_json::to_string(&c.track).unwrap_or_default(),
            c.created_at,
            c.last_used_at,
        ],
    )?;
    Ok(())
}

/// A project's credentials, newest first.
pub fn list(conn: &Connection, project: &str) -> Result<Vec<Credential>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM smtp_credentials WHERE project_id = ?1 ORDER BY created_at DESC, id"
    ))?;
    let rows = statement.query_map([project], from_row)?.collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 =
        conn.query_row("SELECT count(*) FROM smtp_credentials WHERE project_id = ?1", [project], |r| {
            r.get(0)
        })?;
    Ok(n.max(0) as u64)
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Credential>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM smtp_credentials WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// The credential a username names, in any project.
pub fn by_username(conn: &Connection, username: &str) -> Result<Option<Credential>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM smtp_credentials WHERE username = ?1"))?
        .query_row([username], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, project: &str, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM smtp_credentials WHERE id = ?1 AND project_id = ?2", [id, project])? > 0)
}

/// Records a sign-in with the credential at `now` (at most once a minute is written).
pub fn touch(conn: &Connection, id: &str, now: i64) -> Result<()> {
    conn.execute(
        "UPDATE smtp_credentials SET last_used_at = ?2
         WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2 - 60000)",
        params![id, now],
    )?;
    Ok(())
}
