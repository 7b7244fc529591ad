//! Outbound webhook endpoints and their deliveries, as stored (migration V15).

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::fair;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Endpoint {
    pub id: String,
    pub project_id: String,
    pub url: String,
    /// Names and prefixes (`email.*`).
    pub events: Vec<String>,
    pub enabled: bool,
    pub description: Option<String>,
    pub secret: String,
    pub failing_since: Option<i64>,
    pub disabled_reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str =
    "id, project_id, url, events, enabled, description, secret, failing_since, disabled_reason,
     created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Endpoint> {
    let events: String = r.get(3)?;
    Ok(Endpoint {
        id: r.get(0)?,
        project_id: r.get(1)?,
        url: r.get(2)?,
        events: serde_json::from_str(&events).unwrap_or_default(),
        enabled: r.get(4)?,
        description: r.get(5)?,
        secret: r.get(6)?,
        failing_since: r.get(7)?,
        disabled_reason: r.get(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
    })
}

pub fn insert(conn: &Connection, e: &Endpoint) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO webhook_endpoints ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
        ),
        params![
            e.id,
            e.project_id,
            e.url,
            serde_json::to_string(&e.events).unwrap_or_default(),
            e.enabled,
            e.description,
            e.secret,
            e.failing_since,
            e.disabled_reason,
            e.created_at,
            e.updated_at
        ],
    )?;
    Ok(())
}

/// Writes what may change: url, events, enabled, description, the failure state.
pub fn update(conn: &Connection, e: &Endpoint) -> Result<()> {
    conn.prepare_cached(
        "UPDATE webhook_endpoints SET url = ?2, events = ?3, enabled = ?4, description = ?5, failing_since = ?6,
             disabled_reason = ?7, updated_at = ?8 WHERE id = ?1",
    )?
    .execute(params![
        e.id,
        e.url,
        serde_json::to_string(&e.events).unwrap_or_default(),
        e.enabled,
        e.description,
        e.failing_since,
        e.disabled_reason,
        e.updated_at
    ])?;
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Endpoint>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints WHERE id = ?1 AND project_id = ?2"
        ))?
        .query_row([id, project], from_row)
        .optional()?)
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Endpoint>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM webhook_endpoints WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM webhook_endpoints WHERE id = ?1", [id])? > 0)
}

/// A project's endpoints, oldest first.
pub fn list(conn: &Connection, project: &str) -> Result<Vec<Endpoint>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints WHERE project_id = ?1 ORDER BY created_at, id"
        ))?
        .query_map([project], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A project's enabled endpoints (read for every event it records).
pub fn enabled(conn: &Connection, project: &str) -> Result<Vec<Endpoint>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM webhook_endpoints WHERE project_id = ?1 AND enabled = 1"
        ))?
        .query_map([project], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A delivery: one event for one endpoint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Delivery {
    pub id: String,
    pub endpoint_id: String,
    pub project_id: String,
    pub event_type: String,
    pub payload: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<i64>,
    pub created_at: i64,
    pub completed_at: Option<i64>,
}

const DELIVERY_COLUMNS: &str =
    "id, endpoint_id, project_id, event_type, payload, status, attempts, last_status_code,
     last_error, next_attempt_at, created_at, completed_at";

fn delivery_from_row(r: &Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        endpoint_id: r.get(1)?,
        project_id: r.get(2)?,
        event_type: r.get(3)?,
        payload: r.get(4)?,
        status: r.get(5)?,
        attempts: r.get(6)?,
        last_status_code: r.get(7)?,
        last_error: r.get(8)?,
        next_attempt_at: r.get(9)?,
        created_at: r.get(10)?,
        completed_at: r.get(11)?,
    })
}

pub fn insert_delivery(conn: &Connection, d: &Delivery) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO webhook_deliveries (id, endpoint_id, project_id, event_type, payload, status, next_attempt_at, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)",
    )?
    .execute(params![d.id, d.endpoint_id, d.project_id, d.event_type, d.payload, d.created_at])?;
    Ok(())
}

/// Leases up to `limit` due deliveries, round-robin across projects within their room in
/// `turns` ([`fair`]), each project's longest due first.
pub fn claim(
    conn: &Connection,
    now: i64,
    limit: usize,
    lease_ms: i64,
    turns: &mut fair::Turns,
) -> Result<Vec<Delivery>> {
    let due: Vec<Delivery> =
        fair::claim(conn, &Pending { now }, turns, limit)?.into_iter().map(|(_, d)| d).collect();
    let mut lease = conn.prepare_cached("UPDATE webhook_deliveries SET locked_until = ?2 WHERE id = ?1")?;
    for d in &due {
        lease.execute(params![d.id, now + lease_ms])?;
    }
    Ok(due)
}

/// The deliveries due at `now`, for [`fair::claim`].
struct Pending {
    now: i64,
}

impl fair::Queue for Pending {
    type Row = Delivery;

    fn owners(
        &self,
        conn: &Connection,
        after: Option<&fair::Owner>,
        limit: usize,
    ) -> Result<Vec<fair::Owner>> {
        fair::projects_with(conn, "webhook_deliveries", "status = 'pending'", after, limit)
    }

    fn due(
        &self,
        conn: &Connection,
        owner: &fair::Owner,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<Delivery>> {
        Ok(conn
            .prepare_cached(&format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
             WHERE status = 'pending' AND project_id = ?1 AND next_attempt_at <= ?2
               AND (locked_until IS NULL OR locked_until <= ?2)
             ORDER BY next_attempt_at LIMIT ?3 OFFSET ?4"
            ))?
            .query_map(params![owner, self.now, limit as i64, offset as i64], delivery_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// When the next pending delivery not leased at `now` falls due.
pub fn next_due(conn: &Connection, now: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT next_attempt_at FROM webhook_deliveries WHERE status = 'pending'
           AND (locked_until IS NULL OR locked_until <= ?1) ORDER BY next_attempt_at LIMIT 1",
        )?
        .query_row([now], |r| r.get(0))
        .optional()?)
}

/// Records a try: `next_at` for another one, or the final status.
pub fn record(
    conn: &Connection,
    id: &str,
    status: &str,
    code: Option<i64>,
    error: Option<&str>,
    next_at: Option<i64>,
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE webhook_deliveries SET status = ?2, attempts = attempts + 1, last_status_code = ?3, last_error = ?4,
             next_attempt_at = ?5, locked_until = NULL, completed_at = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?6 END
         WHERE id = ?1",
    )?
    .execute(params![id, status, code, error, next_at, now])?;
    Ok(())
}

/// Ends the leases of deliveries a stopping worker still held.
/// Deletes a delivery unsent (its project is being reset or deleted).
pub fn drop_delivery(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("DELETE FROM webhook_deliveries WHERE id = ?1", [id])?;
    Ok(())
}

pub fn release(conn: &Connection, ids: &[String]) -> Result<()> {
    let mut release =
        conn.prepare_cached("UPDATE webhook_deliveries SET locked_until = NULL WHERE id = ?1")?;
    for id in ids {
        release.execute([id])?;
    }
    Ok(())
}

/// Frees deliveries a dead process left leased.
pub fn take_back_leases(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.prepare_cached(
        "UPDATE webhook_deliveries SET locked_until = NULL WHERE locked_until > ?1 AND status = 'pending'",
    )?
    .execute([now])?)
}

/// An endpoint's deliveries, newest first.
pub fn deliveries(
    conn: &Connection,
    endpoint: &str,
    (limit, offset): (i64, i64),
) -> Result<(Vec<Delivery>, i64)> {
    Ok(super::paged(
        conn,
        ("webhook_deliveries", DELIVERY_COLUMNS, " WHERE endpoint_id = ?1", "created_at DESC, id DESC"),
        vec![endpoint.to_string().into()],
        (limit, offset),
        delivery_from_row,
    )?)
}
