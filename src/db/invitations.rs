//! Invitations to a project for an email with no account yet; the link's token is kept as its
//! digest.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::projects::Role;

/// An invitation as stored (without its digest).
#[derive(Debug, Clone, PartialEq)]
pub struct Invitation {
    pub id: String,
    pub project_id: String,
    pub email: String,
    pub role: Role,
    pub invited_by: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
}

const COLUMNS: &str = "id, project_id, email, role, invited_by, created_at, expires_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Invitation> {
    Ok(Invitation {
        id: r.get(0)?,
        project_id: r.get(1)?,
        email: r.get(2)?,
        role: r.get(3)?,
        invited_by: r.get(4)?,
        created_at: r.get(5)?,
        expires_at: r.get(6)?,
    })
}

/// Records an invitation, or renews the project's pending one for the same email (new role,
/// new link, new expiry: the earlier link stops working).
pub fn upsert(conn: &Connection, invitation: &Invitation, digest: &str) -> Result<Invitation> {
    Ok(conn.query_row(
        &format!(
            "INSERT INTO invitations (id, project_id, email, role, digest, invited_by, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (project_id, email) DO UPDATE SET role = excluded.role, digest = excluded.digest,
                 invited_by = excluded.invited_by, created_at = excluded.created_at, expires_at = excluded.expires_at
             RETURNING {COLUMNS}"
        ),
        params![
            invitation.id,
            invitation.project_id,
            invitation.email,
            invitation.role.as_str(),
            digest,
            invitation.invited_by,
            invitation.created_at,
            invitation.expires_at
        ],
        from_row,
    )?)
}

/// The pending invitations of a project, newest first.
pub fn for_project(conn: &Connection, project: &str, now: i64) -> Result<Vec<Invitation>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM invitations WHERE project_id = ?1 AND expires_at > ?2 ORDER BY created_at DESC, id"
    ))?;
    Ok(stmt.query_map(params![project, now], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A pending (unexpired) invitation of a project.
pub fn get(conn: &Connection, project: &str, id: &str, now: i64) -> Result<Option<Invitation>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM invitations WHERE project_id = ?1 AND id = ?2 AND expires_at > ?3"
            ),
            params![project, id, now],
            from_row,
        )
        .optional()?)
}

/// The unexpired invitation a token's digest names.
pub fn by_digest(conn: &Connection, digest: &str, now: i64) -> Result<Option<Invitation>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM invitations WHERE digest = ?1 AND expires_at > ?2"),
            params![digest, now],
            from_row,
        )
        .optional()?)
}

/// Deletes one invitation of a project (revoked or accepted); whether it existed.
pub fn delete(conn: &Connection, project: &str, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM invitations WHERE project_id = ?1 AND id = ?2", params![project, id])? > 0)
}

/// Deletes expired invitations; returns how many.
pub fn sweep(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM invitations WHERE expires_at <= ?1", [now])?)
}
