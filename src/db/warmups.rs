//! Sender domains' warm-up plans and what each domain sent per day (V43).

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A warm-up plan as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub domain_id: String,
    pub project_id: String,
    pub start_daily: i64,
    pub target_daily: i64,
    pub days: i64,
    /// `YYYY-MM-DD` in the project's time zone.
    pub starts_on: String,
    pub created_at: i64,
}

const COLUMNS: &str = "domain_id, project_id, start_daily, target_daily, days, starts_on, created_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Plan> {
    Ok(Plan {
        domain_id: r.get(0)?,
        project_id: r.get(1)?,
        start_daily: r.get(2)?,
        target_daily: r.get(3)?,
        days: r.get(4)?,
        starts_on: r.get(5)?,
        created_at: r.get(6)?,
    })
}

/// Sets a domain's plan in place of the one it had (what it sent so far stays counted).
pub fn set(conn: &Connection, plan: &Plan) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO domain_warmups (domain_id, project_id, start_daily, target_daily, days, starts_on, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (domain_id) DO UPDATE SET start_daily = excluded.start_daily,
             target_daily = excluded.target_daily, days = excluded.days, starts_on = excluded.starts_on",
    )?
    .execute(params![
        plan.domain_id,
        plan.project_id,
        plan.start_daily,
        plan.target_daily,
        plan.days,
        plan.starts_on,
        plan.created_at
    ])?;
    Ok(())
}

pub fn get(conn: &Connection, domain_id: &str) -> Result<Option<Plan>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM domain_warmups WHERE domain_id = ?1"))?
        .query_row([domain_id], from_row)
        .optional()?)
}

/// The plan of the first of the project's sender domains `names` (by name, the sender's own
/// domain first, then its parents) that has one.
pub fn for_domain(conn: &Connection, project: &str, names: &[String]) -> Result<Option<Plan>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM domain_warmups
         WHERE domain_id = (SELECT id FROM domains WHERE project_id = ?1 AND domain = ?2)"
    ))?;
    for name in names {
        if let Some(plan) = stmt.query_row([project, name.as_str()], from_row).optional()? {
            return Ok(Some(plan));
        }
    }
    Ok(None)
}

/// Removes a domain's plan and its counts; whether it had one.
pub fn delete(conn: &Connection, domain_id: &str) -> Result<bool> {
    Ok(conn.prepare_cached("DELETE FROM domain_warmups WHERE domain_id = ?1")?.execute([domain_id])? > 0)
}

/// What the domain sent on `day`.
pub fn sent_on(conn: &Connection, domain_id: &str, day: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT sent FROM warmup_days WHERE domain_id = ?1 AND day = ?2")?
        .query_row([domain_id, day], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}

/// Counts a message the domain sent on `day` (nothing when its plan is gone).
pub fn count(conn: &Connection, domain_id: &str, day: &str) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO warmup_days (domain_id, day, sent)
         SELECT ?1, ?2, 1 WHERE EXISTS (SELECT 1 FROM domain_warmups WHERE domain_id = ?1)
         ON CONFLICT (domain_id, day) DO UPDATE SET sent = sent + 1",
    )?
    .execute([domain_id, day])?;
    Ok(())
}

/// The days the domain sent on, latest first, at most `limit`.
pub fn days(conn: &Connection, domain_id: &str, limit: usize) -> Result<Vec<(String, i64)>> {
    Ok(conn
        .prepare_cached("SELECT day, sent FROM warmup_days WHERE domain_id = ?1 ORDER BY day DESC LIMIT ?2")?
        .query_map(params![domain_id, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?)
}
