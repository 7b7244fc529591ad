//! Sender domains.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A domain as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Domain {
    pub id: String,
    pub project_id: String,
    pub domain: String,
    pub status: String,
    pub token: String,
    pub dkim_selector: String,
    /// PKCS#8 PEM; for signing only, never shown.
    pub dkim_private_key: String,
    pub dkim_public_key: String,
    /// JSON of the last check.
    pub checks: Option<String>,
    pub created_at: i64,
    pub verified_at: Option<i64>,
    pub last_checked_at: Option<i64>,
    pub next_check_at: i64,
}

const COLUMNS: &str =
    "id, project_id, domain, status, token, dkim_selector, dkim_private_key, dkim_public_key,
     checks, created_at, verified_at, last_checked_at, next_check_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Domain> {
    Ok(Domain {
        id: r.get(0)?,
        project_id: r.get(1)?,
        domain: r.get(2)?,
        status: r.get(3)?,
        token: r.get(4)?,
        dkim_selector: r.get(5)?,
        dkim_private_key: r.get(6)?,
        dkim_public_key: r.get(7)?,
        checks: r.get(8)?,
        created_at: r.get(9)?,
        verified_at: r.get(10)?,
        last_checked_at: r.get(11)?,
        next_check_at: r.get(12)?,
    })
}

/// Stores a new pending domain; fails on the unique constraint when the project has it.
pub fn insert(conn: &Connection, domain: &Domain) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO domains ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
        ),
        params![
            domain.id,
            domain.project_id,
            domain.domain,
            domain.status,
            domain.token,
            domain.dkim_selector,
            domain.dkim_private_key,
            domain.dkim_public_key,
            domain.checks,
            domain.created_at,
            domain.verified_at,
            domain.last_checked_at,
            domain.next_check_at,
        ],
    )?;
    Ok(())
}

/// A domain of the project (never another project's).
pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Domain>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM domains WHERE id = ?1 AND project_id = ?2"),
            [id, project],
            from_row,
        )
        .optional()?)
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Domain>> {
    Ok(conn.query_row(&format!("SELECT {COLUMNS} FROM domains WHERE id = ?1"), [id], from_row).optional()?)
}

/// The project's domains, oldest first.
pub fn for_project(conn: &Connection, project: &str) -> Result<Vec<Domain>> {
    let mut stmt = conn
        .prepare(&format!("SELECT {COLUMNS} FROM domains WHERE project_id = ?1 ORDER BY created_at, id"))?;
    Ok(stmt.query_map([project], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The project's oldest verified domain's name.
pub fn first_verified(conn: &Connection, project: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT domain FROM domains WHERE project_id = ?1 AND status = 'verified' ORDER BY created_at, id LIMIT 1",
        )?
        .query_row([project], |r| r.get(0))
        .optional()?)
}

/// Ids of domains due for a periodic check.
pub fn due(conn: &Connection, now: i64, limit: usize) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT id FROM domains WHERE next_check_at <= ?1 ORDER BY next_check_at LIMIT ?2")?;
    Ok(stmt.query_map(params![now, limit as i64], |r| r.get(0))?.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Records the outcome of a check.
pub fn save_check(
    conn: &Connection,
    id: &str,
    status: &str,
    verified_at: Option<i64>,
    checks: &str,
    now: i64,
    next_check_at: i64,
) -> Result<()> {
    conn.execute(
        "UPDATE domains SET status = ?2, verified_at = ?3, checks = ?4, last_checked_at = ?5, next_check_at = ?6
         WHERE id = ?1",
        params![id, status, verified_at, checks, now, next_check_at],
    )?;
    Ok(())
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM domains WHERE id = ?1", [id])? > 0)
}

/// Whether one of `names` is a verified domain of the project; returns the one found.
pub fn verified_among(conn: &Connection, project: &str, names: &[String]) -> Result<Option<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT domain FROM domains WHERE domain = ?1 AND project_id = ?2 AND status = 'verified'",
    )?;
    for name in names {
        if let Some(found) = stmt.query_row([name.as_str(), project], |r| r.get(0)).optional()? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The domain whose key signs mail from one of `names` (most specific first): a verified one
/// if there is one, else any.
/// The first of `names` verified in any project: system mail's signing domain (appliance.md
/// §4), since it belongs to no user's project.
pub fn verified_anywhere(conn: &Connection, names: &[String]) -> Result<Option<Domain>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM domains WHERE domain = ?1 AND status = 'verified' ORDER BY created_at LIMIT 1"
    ))?;
    for name in names {
        if let Some(domain) = stmt.query_row([name.as_str()], from_row).optional()? {
            return Ok(Some(domain));
        }
    }
    Ok(None)
}

pub fn for_signing(conn: &Connection, project: &str, names: &[String]) -> Result<Option<Domain>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM domains WHERE domain = ?1 AND project_id = ?2 ORDER BY status = 'verified' DESC LIMIT 1"
    ))?;
    let mut fallback = None;
    for name in names {
        if let Some(domain) = stmt.query_row([name.as_str(), project], from_row).optional()? {
            if domain.status == "verified" {
                return Ok(Some(domain));
            }
            fallback = fallback.or(Some(domain));
        }
    }
    Ok(fallback)
}

/// Whether `project` has the domain `name`.
pub fn exists(conn: &Connection, project: &str, name: &str) -> Result<bool> {
    Ok(conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM domains WHERE project_id = ?1 AND domain = ?2)",
        [project, name],
        |r| r.get(0),
    )?)
}

/// How many domains `project` has.
pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 =
        conn.query_row("SELECT count(*) FROM domains WHERE project_id = ?1", [project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}
