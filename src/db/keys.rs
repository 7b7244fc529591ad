//! API keys, found by the SHA-256 digest of the whole key.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

use super::projects::{COLUMN_COUNT, COLUMNS, Project, from_row};
use crate::clock;

/// Which of a project's two keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Public,
    Secret,
}

impl KeyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyKind::Public => "public",
            KeyKind::Secret => "secret",
        }
    }
}

/// Replaces the project's keys by a public key (kept whole) and a secret key (digest only).
pub fn replace(
    conn: &Connection,
    project: &str,
    public_key: &str,
    public_digest: &str,
    secret_digest: &str,
) -> Result<()> {
    let now = clock::now_ms();
    conn.execute("DELETE FROM api_keys WHERE project_id = ?1", [project])?;
    conn.execute(
        "INSERT INTO api_keys (digest, project_id, kind, public_value, created_at) VALUES (?1, ?2, 'public', ?3, ?4)",
        params![public_digest, project, public_key, now],
    )?;
    conn.execute(
        "INSERT INTO api_keys (digest, project_id, kind, public_value, created_at) VALUES (?1, ?2, 'secret', NULL, ?3)",
        params![secret_digest, project, now],
    )?;
    Ok(())
}

/// The project's public key.
pub fn public_key(conn: &Connection, project: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT public_value FROM api_keys WHERE project_id = ?1 AND kind = 'public'",
            [project],
            |r| r.get(0),
        )
        .optional()?)
}

/// The project a key digest belongs to, and the key's kind.
pub fn find(conn: &Connection, digest: &str) -> Result<Option<(Project, KeyKind)>> {
    // Every API request asks this: the statement stays in the connection's cache.
    Ok(conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, k.kind FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.digest = ?1"
    ))?
    .query_row([digest], |r| {
        let kind: String = r.get(COLUMN_COUNT)?;
        Ok((from_row(r)?, if kind == "public" { KeyKind::Public } else { KeyKind::Secret }))
    })
    .optional()?)
}
