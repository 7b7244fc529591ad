//! Events: named occurrences for a contact, tracked by clients or emitted by the service.

use super::error::Result;
use rusqlite::{Connection, params};
use serde_json::Value;

/// Stores an event a person made (`machine` is `None`) or a machine (`machine` names why:
/// `privacy_proxy`, `scanner`, `crawler`); returns its id.
pub fn insert(
    conn: &Connection,
    project: &str,
    contact: Option<&str>,
    name: &str,
    data: &Value,
    now: i64,
    machine: Option<&str>,
) -> Result<String> {
    let id = super::ids::new_id();
    conn.prepare_cached(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, machine)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![id, project, contact, name, data.to_string(), now, machine])?;
    Ok(id)
}

/// Marks as a machine's (`machine` names why) the `name` events of `contact` about email
/// `email` since `since`: a burst found to be a scanner's after its first clicks were stored.
pub fn mark_machine(
    conn: &Connection,
    contact: &str,
    name: &str,
    email: &str,
    since: i64,
    machine: &str,
) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE events SET machine = ?5 WHERE contact_id = ?1 AND created_at >= ?4 AND name = ?2
               AND machine IS NULL AND json_extract(data, '$.emailId') = ?3",
        )?
        .execute(params![contact, name, email, since, machine])?)
}

/// The first and the last time `contact` triggered `name`, if ever; by people only unless
/// `machines`.
pub fn first_and_last(
    conn: &Connection,
    contact: &str,
    name: &str,
    machines: bool,
) -> Result<Option<(i64, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT min(created_at), max(created_at) FROM events
             WHERE contact_id = ?1 AND name = ?2 AND (?3 OR machine IS NULL)",
        )?
        .query_row(params![contact, name, machines], |r| {
            Ok(r.get::<_, Option<i64>>(0)?.zip(r.get::<_, Option<i64>>(1)?))
        })?)
}

/// The names of a contact's events, oldest first (for tests and the activity feed).
pub fn names_for_contact(conn: &Connection, contact: &str) -> Result<Vec<String>> {
    let mut stmt =
        conn.prepare_cached("SELECT name FROM events WHERE contact_id = ?1 ORDER BY created_at, rowid")?;
    Ok(stmt.query_map([contact], |r| r.get(0))?.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// An event as listed, with its contact's email when it has a contact.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: String,
    pub name: String,
    pub contact_id: Option<String>,
    pub email: Option<String>,
    pub data: Value,
    pub created_at: i64,
}

/// Which events a list shows, newest first, after a position.
pub struct ListQuery<'a> {
    pub project: &'a str,
    pub name: Option<&'a str>,
    /// Any of these names (none: no such filter); `*` alone stands for the tracked events (not
    /// the service's `email.*`, `contact.*` and `segment.*`).
    pub names: &'a [&'a str],
    pub contact: Option<&'a str>,
    /// Only events at or after this time (ms).
    pub from: Option<i64>,
    /// Only events before this time (ms).
    pub to: Option<i64>,
    /// The (created_at, rowid) of the last event of the previous page.
    pub after: Option<(i64, i64)>,
    pub limit: usize,
}

const HOUR: i64 = 3_600_000;

/// The conditions on `name` (a column) of a query's name filters, with their arguments added.
fn name_filter(q: &ListQuery<'_>, column: &str, args: &mut Vec<rusqlite::types::Value>) -> String {
    let mut sql = String::new();
    if let Some(name) = q.name {
        args.push(name.to_string().into());
        sql.push_str(&format!(" AND {column} = ?{}", args.len()));
    }
    if !q.names.is_empty() {
        let mut any = Vec::new();
        for name in q.names {
            if *name == "*" {
                any.push(format!(
                    "({column} NOT LIKE 'email.%' AND {column} NOT LIKE 'contact.%' AND {column} NOT LIKE 'segment.%')"
                ));
            } else {
                args.push(name.to_string().into());
                any.push(format!("{column} = ?{}", args.len()));
            }
        }
        sql.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    sql
}

/// The `WHERE` of a query's filters over `events e` (its page position aside), from `?1` on.
fn filters(
    q: &ListQuery<'_>,
    (from, to): (Option<i64>, Option<i64>),
) -> (String, Vec<rusqlite::types::Value>) {
    let mut args: Vec<rusqlite::types::Value> = vec![q.project.to_string().into()];
    let mut sql = String::from(" WHERE e.project_id = ?1");
    if let Some(contact) = q.contact {
        args.push(contact.to_string().into());
        sql.push_str(&format!(" AND e.contact_id = ?{}", args.len()));
    }
    sql.push_str(&name_filter(q, "e.name", &mut args));
    if let Some(from) = from {
        args.push(from.into());
        sql.push_str(&format!(" AND e.created_at >= ?{}", args.len()));
    }
    if let Some(to) = to {
        args.push(to.into());
        sql.push_str(&format!(" AND e.created_at < ?{}", args.len()));
    }
    (sql, args)
}

/// One page of events, newest first, with each row's position for the next page. The order is
/// (created_at, rowid), which the indexes on project, name and contact all carry, so a page
/// reads only its own rows.
pub fn list(conn: &Connection, q: &ListQuery<'_>) -> Result<Vec<(Listed, (i64, i64))>> {
    let (filters, mut args) = filters(q, (q.from, q.to));
    let mut sql = format!(
        "SELECT e.id, e.name, e.contact_id, c.email, e.data, e.created_at, e.rowid
         FROM events e LEFT JOIN contacts c ON c.id = e.contact_id{filters}"
    );
    if let Some((at, rowid)) = q.after {
        args.push(at.into());
        args.push(rowid.into());
        sql.push_str(&format!(" AND (e.created_at, e.rowid) < (?{}, ?{})", args.len() - 1, args.len()));
    }
    args.push((q.limit as i64).into());
    sql.push_str(&format!(" ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?{}", args.len()));
    let mut stmt = conn.prepare_cached(&sql)?;
    Ok(stmt
        .query_map(rusqlite::params_from_iter(args), |r| {
            let data: String = r.get(4)?;
            let created_at = r.get(5)?;
            Ok((
                Listed {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    contact_id: r.get(2)?,
                    email: r.get(3)?,
                    data: serde_json::from_str(&data).unwrap_or(Value::Null),
                    created_at,
                },
                (created_at, r.get(6)?),
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// How many events a list shows in all (its page position aside), without reading more than
/// two hours of a project's events: one contact's events are counted; otherwise the name
/// catalogue keeps the all-time counts, and the hourly rollups the counts of the whole hours
/// of a period, whose partial hours at either end are counted from the events.
pub fn count_listed(conn: &Connection, q: &ListQuery<'_>) -> Result<i64> {
    let exact = |period: (Option<i64>, Option<i64>)| -> Result<i64> {
        let (filters, args) = filters(q, period);
        Ok(conn
            .prepare_cached(&format!("SELECT count(*) FROM events e{filters}"))?
            .query_row(rusqlite::params_from_iter(args), |r| r.get(0))?)
    };
    if q.contact.is_some() {
        return exact((q.from, q.to));
    }
    let (lo, hi) = (
        q.from.map(|f| {
            f.div_euclid(HOUR).saturating_add(i64::from(f.rem_euclid(HOUR) != 0)).saturating_mul(HOUR)
        }),
        q.to.map(|t| t.div_euclid(HOUR).saturating_mul(HOUR)),
    );
    if let (Some(lo), Some(hi)) = (lo, hi)
        && lo >= hi
    {
        return exact((q.from, q.to));
    }
    let mut args: Vec<rusqlite::types::Value> = vec![q.project.to_string().into()];
    let whole = if lo.is_none() && hi.is_none() {
        let names = name_filter(q, "name", &mut args);
        conn.prepare_cached(&format!(
            "SELECT coalesce(sum(events), 0) FROM event_names WHERE project_id = ?1{names}"
        ))?
        .query_row(rusqlite::params_from_iter(args), |r| r.get::<_, i64>(0))?
    } else {
        args.push(lo.unwrap_or(i64::MIN).into());
        args.push(hi.unwrap_or(i64::MAX).into());
        let names = name_filter(q, "name", &mut args);
        conn.prepare_cached(&format!(
            "SELECT coalesce(sum(events), 0) FROM event_hours WHERE project_id = ?1 AND hour >= ?2 AND hour < ?3{names}"
        ))?
        .query_row(rusqlite::params_from_iter(args), |r| r.get::<_, i64>(0))?
    };
    let head = match (q.from, lo) {
        (Some(from), Some(lo)) if from < lo => exact((Some(from), Some(lo)))?,
        _ => 0,
    };
    let tail = match (q.to, hi) {
        (Some(to), Some(hi)) if hi < to => exact((Some(hi), Some(to)))?,
        _ => 0,
    };
    Ok(whole + head + tail)
}

/// A project's event names with how many events carry each and the last time one did.
pub fn names(conn: &Connection, project: &str) -> Result<Vec<(String, i64, i64)>> {
    Ok(conn
        .prepare_cached("SELECT name, events, last_at FROM event_names WHERE project_id = ?1 ORDER BY name")?
        .query_map([project], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Counts per name between `from` (inclusive) and `to` (exclusive): (name, events, contacts).
pub fn stats(conn: &Connection, project: &str, from: i64, to: i64) -> Result<Vec<(String, i64, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT name, count(*), count(DISTINCT contact_id) FROM events
         WHERE project_id = ?1 AND created_at >= ?2 AND created_at < ?3
         GROUP BY name ORDER BY count(*) DESC, name",
        )?
        .query_map(params![project, from, to], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Events per UTC day between `from` and `to`: (day start in ms, events).
pub fn per_day(conn: &Connection, project: &str, from: i64, to: i64) -> Result<Vec<(i64, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT (created_at / 86400000) * 86400000 AS day, count(*) FROM events
         WHERE project_id = ?1 AND created_at >= ?2 AND created_at < ?3 GROUP BY day ORDER BY day",
        )?
        .query_map(params![project, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// How many events of `name` the project has.
pub fn count_named(conn: &Connection, project: &str, name: &str) -> Result<i64> {
    let q = ListQuery {
        project,
        name: Some(name),
        names: &[],
        contact: None,
        from: None,
        to: None,
        after: None,
        limit: 0,
    };
    count_listed(conn, &q)
}

/// Deletes up to `limit` events of `name`; returns how many went.
pub fn delete_named(conn: &Connection, project: &str, name: &str, limit: usize) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM events WHERE rowid IN
             (SELECT rowid FROM events WHERE project_id = ?1 AND name = ?2 LIMIT ?3)",
        )?
        .execute(params![project, name, limit as i64])?)
}

/// The data of the newest `limit` events of `name` whose data is at most `max_bytes`, newest first (samples of what an event
/// carries, for the editor's field lists).
pub fn recent_data(
    conn: &Connection,
    project: &str,
    name: &str,
    (limit, max_bytes): (usize, usize),
) -> Result<Vec<Value>> {
    Ok(conn
        .prepare_cached(
            "SELECT data FROM events WHERE project_id = ?1 AND name = ?2 AND length(data) <= ?4
         ORDER BY created_at DESC LIMIT ?3",
        )?
        .query_map(params![project, name, limit as i64, max_bytes as i64], |r| {
            let data: Option<String> = r.get(0)?;
            Ok(data.and_then(|d| serde_json::from_str(&d).ok()).unwrap_or(Value::Null))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Whether a new event has anything to do beyond being stored: a workflow it starts or an
/// execution of its contact waiting for it, and an enabled webhook endpoint of the project. One
/// statement, so that the common case (nothing) costs one step of SQLite per event.
pub fn interest(conn: &Connection, project: &str, contact: Option<&str>, name: &str) -> Result<(bool, bool)> {
    Ok(conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM workflows WHERE project_id = ?1 AND trigger_event = ?2 AND enabled = 1
                          AND trigger_type = 'EVENT')
                OR EXISTS (SELECT 1 FROM workflow_executions WHERE contact_id = ?3 AND wait_event = ?2
                          AND status = 'WAITING'),
                EXISTS (SELECT 1 FROM webhook_endpoints WHERE project_id = ?1 AND enabled = 1)",
    )?
    .query_row(params![project, name, contact], |r| Ok((r.get(0)?, r.get(1)?)))?)
}
