//! A project's delivery windows (V40): its time zone, and the quiet hours and days when its
//! marketing mail waits.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// As stored; [`Settings::default`] for a project that never set them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// An IANA name (`Europe/Berlin`), checked when set.
    pub timezone: String,
    /// Minutes of the day from `start` to `end` (over midnight when `start` > `end`).
    pub quiet_hours: Option<(u16, u16)>,
    /// Monday = 1, Tuesday = 2, ... Sunday = 64.
    pub quiet_days: u8,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { timezone: "UTC".into(), quiet_hours: None, quiet_days: 0 }
    }
}

pub fn get(conn: &Connection, project: &str) -> Result<Settings> {
    Ok(conn
        .prepare_cached(
            "SELECT timezone, quiet_start, quiet_end, quiet_days FROM sending_settings WHERE project_id = ?1",
        )?
        .query_row([project], |r| {
            let (start, end): (Option<u16>, Option<u16>) = (r.get(1)?, r.get(2)?);
            Ok(Settings { timezone: r.get(0)?, quiet_hours: start.zip(end), quiet_days: r.get(3)? })
        })
        .optional()?
        .unwrap_or_default())
}

pub fn put(conn: &Connection, project: &str, s: &Settings, now: i64) -> Result<()> {
    let (start, end) = s.quiet_hours.unzip();
    conn.prepare_cached(
        "INSERT INTO sending_settings (project_id, timezone, quiet_start, quiet_end, quiet_days, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(project_id) DO UPDATE SET timezone = ?2, quiet_start = ?3, quiet_end = ?4, quiet_days = ?5,
             updated_at = ?6",
    )?
    .execute(params![project, s.timezone, start, end, s.quiet_days, now])?;
    Ok(())
}

/// The `data.timezone` of each of the contacts `ids` that has one (a string), by id.
pub fn timezones(conn: &Connection, ids: &[&str]) -> Result<Vec<(String, String)>> {
    let list = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut statement = conn.prepare_cached(
        "SELECT id, data ->> '$.timezone' FROM contacts
         WHERE id IN (SELECT value FROM json_each(?1)) AND json_type(data, '$.timezone') = 'text'",
    )?;
    let rows = statement.query_map([list], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
