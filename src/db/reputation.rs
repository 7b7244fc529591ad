//! Sender reputation: the per-day counters migration V14 keeps as emails change
//! (`sending_days`), and the suspensions they caused.

use super::error::Result;
use rusqlite::{Connection, params};

use super::new_id;

/// Sent mail, hard bounces and complaints of `project` counted from day `since` on.
pub fn totals_since(conn: &Connection, project: &str, since: i64) -> Result<(i64, i64, i64)> {
    Ok(conn
        .prepare_cached(
            "SELECT coalesce(sum(sent), 0), coalesce(sum(hard_bounces), 0), coalesce(sum(complaints), 0)
             FROM sending_days WHERE project_id = ?1 AND day >= ?2",
        )?
        .query_row(params![project, since], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?)
}

/// A suspension as recorded: why, the figures that caused it, and when it was lifted.
#[derive(Debug, Clone, PartialEq)]
pub struct Suspension {
    pub id: String,
    pub reason: String,
    pub sent: i64,
    pub hard_bounces: i64,
    pub complaints: i64,
    pub created_at: i64,
    pub lifted_at: Option<i64>,
}

/// Disables `project` and records why, unless it is disabled already. Whether it was suspended.
pub fn suspend(
    conn: &Connection,
    project: &str,
    reason: &str,
    figures: (i64, i64, i64),
    now: i64,
) -> Result<bool> {
    let disabled = conn.execute(
        "UPDATE projects SET disabled = 1, updated_at = ?2 WHERE id = ?1 AND disabled = 0",
        params![project, now],
    )?;
    if disabled == 0 {
        return Ok(false);
    }
    let (sent, hard_bounces, complaints) = figures;
    conn.execute(
        "INSERT INTO suspensions (id, project_id, reason, sent, hard_bounces, complaints, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![new_id(), project, reason, sent, hard_bounces, complaints, now],
    )?;
    Ok(true)
}

/// Ends the project's open suspension.
pub fn lift(conn: &Connection, project: &str, now: i64) -> Result<()> {
    conn.execute(
        "UPDATE suspensions SET lifted_at = ?2 WHERE project_id = ?1 AND lifted_at IS NULL",
        params![project, now],
    )?;
    Ok(())
}

/// The project's latest `limit` suspensions, newest first.
pub fn recent(conn: &Connection, project: &str, limit: usize) -> Result<Vec<Suspension>> {
    Ok(conn
        .prepare_cached(
            "SELECT id, reason, sent, hard_bounces, complaints, created_at, lifted_at FROM suspensions
             WHERE project_id = ?1 ORDER BY created_at DESC LIMIT ?2",
        )?
        .query_map(params![project, limit as i64], |row| {
            Ok(Suspension {
                id: row.get(0)?,
                reason: row.get(1)?,
                sent: row.get(2)?,
                hard_bounces: row.get(3)?,
                complaints: row.get(4)?,
                created_at: row.get(5)?,
                lifted_at: row.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}
