//! A project's tracking domain (V41): the host its tracked links and open pixel use once
//! verified.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

#[derive(Debug, Clone, PartialEq)]
pub struct TrackingDomain {
    pub project_id: String,
    pub domain: String,
    /// What the TXT record at `_tidings-tracking.<domain>` must hold.
    pub token: String,
    pub verified_at: Option<i64>,
    pub checked_at: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<TrackingDomain> {
    Ok(TrackingDomain {
        project_id: r.get(0)?,
        domain: r.get(1)?,
        token: r.get(2)?,
        verified_at: r.get(3)?,
        checked_at: r.get(4)?,
        last_error: r.get(5)?,
        created_at: r.get(6)?,
    })
}

const COLUMNS: &str = "project_id, domain, token, verified_at, checked_at, last_error, created_at";

pub fn get(conn: &Connection, project: &str) -> Result<Option<TrackingDomain>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM tracking_domains WHERE project_id = ?1"))?
        .query_row([project], from_row)
        .optional()?)
}

/// The project that holds `domain`, if one does.
pub fn holder(conn: &Connection, domain: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT project_id FROM tracking_domains WHERE domain = ?1")?
        .query_row([domain], |r| r.get(0))
        .optional()?)
}

/// Sets the project's domain (unverified), replacing the one it had.
pub fn put(conn: &Connection, d: &TrackingDomain) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO tracking_domains (project_id, domain, token, verified_at, checked_at, last_error, created_at)
         VALUES (?1, ?2, ?3, NULL, NULL, NULL, ?4)
         ON CONFLICT(project_id) DO UPDATE SET domain = ?2, token = ?3, verified_at = NULL, checked_at = NULL,
             last_error = NULL, created_at = ?4",
    )?
    .execute(params![d.project_id, d.domain, d.token, d.created_at])?;
    Ok(())
}

/// Records a check of `project`'s domain `domain`: verified at `now`, or not, with why.
pub fn checked(conn: &Connection, project: &str, domain: &str, error: Option<&str>, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE tracking_domains SET checked_at = ?3, last_error = ?4,
             verified_at = CASE WHEN ?4 IS NULL THEN coalesce(verified_at, ?3) ELSE NULL END
         WHERE project_id = ?1 AND domain = ?2",
    )?
    .execute(params![project, domain, now, error])?;
    Ok(())
}

pub fn delete(conn: &Connection, project: &str) -> Result<bool> {
    Ok(conn.prepare_cached("DELETE FROM tracking_domains WHERE project_id = ?1")?.execute([project])? > 0)
}

/// The project's verified tracking domain, if it has one.
pub fn verified(conn: &Connection, project: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT domain FROM tracking_domains WHERE project_id = ?1 AND verified_at IS NOT NULL",
        )?
        .query_row([project], |r| r.get(0))
        .optional()?)
}
