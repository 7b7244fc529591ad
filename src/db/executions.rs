//! Workflow executions as stored: one row per execution (where it stands, its context, when it
//! is due), and one row per step it ran (`workflow_execution_steps`), in order.
//!
//! An execution the runner should look at has a `due_at` at or before now: RUNNING ones are due
//! at once, WAITING ones when their DELAY or WAIT_FOR_EVENT timeout ends (an event wait without
//! a timeout has none, and is found by its contact and event instead). `locked_until` is the
//! runner's lease on the executions it works on.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::fair;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Execution {
    pub id: String,
    pub workflow_id: String,
    pub project_id: String,
    pub contact_id: String,
    pub status: String,
    pub current_step_id: Option<String>,
    /// JSON object text.
    pub context: String,
    pub exit_reason: Option<String>,
    pub due_at: Option<i64>,
    pub wait_event: Option<String>,
    pub locked_until: Option<i64>,
    pub started_at: i64,
    pub completed_at: Option<i64>,
    pub updated_at: i64,
    /// The workflow whose step or email emitted the event that started this execution.
    pub caused_by: Option<String>,
}

/// One step an execution ran (or is running, or waits at).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepRun {
    pub execution_id: String,
    pub seq: i64,
    pub step_id: String,
    /// `RUNNING`, `WAITING`, `COMPLETED`, `FAILED` or `SKIPPED`.
    pub status: String,
    /// JSON text.
    pub output: Option<String>,
    pub error: Option<String>,
    pub started_at: i64,
    pub completed_at: Option<i64>,
}

const COLUMNS: &str =
    "id, workflow_id, project_id, contact_id, status, current_step_id, context, exit_reason,
     due_at, wait_event, locked_until, started_at, completed_at, updated_at, caused_by";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Execution> {
    Ok(Execution {
        id: r.get(0)?,
        workflow_id: r.get(1)?,
        project_id: r.get(2)?,
        contact_id: r.get(3)?,
        status: r.get(4)?,
        current_step_id: r.get(5)?,
        context: r.get(6)?,
        exit_reason: r.get(7)?,
        due_at: r.get(8)?,
        wait_event: r.get(9)?,
        locked_until: r.get(10)?,
        started_at: r.get(11)?,
        completed_at: r.get(12)?,
        updated_at: r.get(13)?,
        caused_by: r.get(14)?,
    })
}

const RUN_COLUMNS: &str = "execution_id, seq, step_id, status, output, error, started_at, completed_at";

fn run_from_row(r: &Row<'_>) -> rusqlite::Result<StepRun> {
    Ok(StepRun {
        execution_id: r.get(0)?,
        seq: r.get(1)?,
        step_id: r.get(2)?,
        status: r.get(3)?,
        output: r.get(4)?,
        error: r.get(5)?,
        started_at: r.get(6)?,
        completed_at: r.get(7)?,
    })
}

pub fn insert(conn: &Connection, e: &Execution) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO workflow_executions ({COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
    ))?
    .execute(params![
        e.id,
        e.workflow_id,
        e.project_id,
        e.contact_id,
        e.status,
        e.current_step_id,
        e.context,
        e.exit_reason,
        e.due_at,
        e.wait_event,
        e.locked_until,
        e.started_at,
        e.completed_at,
        e.updated_at,
        e.caused_by
    ])?;
    Ok(())
}

/// Writes where an execution stands (everything but its identity and start).
pub fn save(conn: &Connection, e: &Execution) -> Result<()> {
    conn.prepare_cached(
        "UPDATE workflow_executions SET status = ?2, current_step_id = ?3, context = ?4, exit_reason = ?5,
             due_at = ?6, wait_event = ?7, locked_until = ?8, completed_at = ?9, updated_at = ?10
         WHERE id = ?1",
    )?
    .execute(params![
        e.id,
        e.status,
        e.current_step_id,
        e.context,
        e.exit_reason,
        e.due_at,
        e.wait_event,
        e.locked_until,
        e.completed_at,
        e.updated_at
    ])?;
    Ok(())
}

pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Execution>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM workflow_executions WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

/// An execution of `workflow`.
pub fn get(conn: &Connection, workflow: &str, id: &str) -> Result<Option<Execution>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM workflow_executions WHERE id = ?1 AND workflow_id = ?2"
        ))?
        .query_row([id, workflow], from_row)
        .optional()?)
}

/// One page of a workflow's executions, newest first, with how many match.
pub fn page(
    conn: &Connection,
    workflow: &str,
    status: Option<&str>,
    (limit, offset): (i64, i64),
) -> Result<(Vec<Execution>, i64)> {
    let mut filter = String::from(" WHERE workflow_id = ?1");
    let mut args: Vec<rusqlite::types::Value> = vec![workflow.to_string().into()];
    if let Some(status) = status {
        args.push(status.to_string().into());
        filter.push_str(" AND status = ?2");
    }
    Ok(super::paged(
        conn,
        ("workflow_executions", COLUMNS, &filter, "started_at DESC, id DESC"),
        args,
        (limit, offset),
        from_row,
    )?)
}

/// Whether the contact has ever had an execution of the workflow (any status).
pub fn exists_for(conn: &Connection, workflow: &str, contact: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM workflow_executions WHERE workflow_id = ?1 AND contact_id = ?2 LIMIT 1",
        )?
        .query_row([workflow, contact], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())?)
}

/// How many executions of `workflow` started for `contact` after `since`, counted up to `cap`.
pub fn started_since(conn: &Connection, workflow: &str, contact: &str, since: i64, cap: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM workflow_executions
         WHERE workflow_id = ?1 AND contact_id = ?2 AND started_at > ?3 LIMIT ?4)",
        )?
        .query_row(params![workflow, contact, since, cap], |r| r.get(0))?)
}

/// How many executions started for `contact` after `since` by events workflows emitted, counted
/// up to `cap`.
pub fn caused_since(conn: &Connection, contact: &str, since: i64, cap: i64) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT 1 FROM workflow_executions
         WHERE contact_id = ?1 AND started_at > ?2 AND caused_by IS NOT NULL LIMIT ?3)",
        )?
        .query_row(params![contact, since, cap], |r| r.get(0))?)
}

/// The contact's executions waiting for `event`.
pub fn waiting_for(conn: &Connection, contact: &str, event: &str) -> Result<Vec<Execution>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM workflow_executions
         WHERE contact_id = ?1 AND wait_event = ?2 AND status = 'WAITING'"
        ))?
        .query_map([contact, event], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Leases up to `limit` due executions, round-robin across projects within their room in
/// `turns` ([`fair`]), each project's longest due first; their ids, with their projects.
pub fn claim(
    conn: &Connection,
    now: i64,
    limit: usize,
    lease_ms: i64,
    turns: &mut fair::Turns,
) -> Result<Vec<(fair::Owner, String)>> {
    let due = fair::claim(conn, &Due { now }, turns, limit)?;
    let mut lease = conn.prepare_cached("UPDATE workflow_executions SET locked_until = ?2 WHERE id = ?1")?;
    for (_, id) in &due {
        lease.execute(params![id, now + lease_ms])?;
    }
    Ok(due)
}

/// The executions due at `now`, for [`fair::claim`].
struct Due {
    now: i64,
}

impl fair::Queue for Due {
    type Row = String;

    fn owners(
        &self,
        conn: &Connection,
        after: Option<&fair::Owner>,
        limit: usize,
    ) -> Result<Vec<fair::Owner>> {
        let pending = "status IN ('RUNNING', 'WAITING') AND due_at IS NOT NULL";
        fair::projects_with(conn, "workflow_executions", pending, after, limit)
    }

    fn due(
        &self,
        conn: &Connection,
        owner: &fair::Owner,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<String>> {
        Ok(conn.prepare_cached(
            "SELECT id FROM workflow_executions
             WHERE status IN ('RUNNING', 'WAITING') AND due_at IS NOT NULL AND project_id = ?1 AND due_at <= ?2
               AND (locked_until IS NULL OR locked_until <= ?2)
             ORDER BY due_at LIMIT ?3 OFFSET ?4",
        )?
        .query_map(params![owner, self.now, limit as i64, offset as i64], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// When the next execution not leased at `now` falls due, if any does (the soonest due come
/// first in the index, so this reads past only the few in hand).
pub fn next_due(conn: &Connection, now: i64) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT due_at FROM workflow_executions
         WHERE status IN ('RUNNING', 'WAITING') AND due_at IS NOT NULL
           AND (locked_until IS NULL OR locked_until <= ?1)
         ORDER BY due_at LIMIT 1",
        )?
        .query_row([now], |r| r.get(0))
        .optional()?)
}

/// Ends the leases of executions this process took and did not finish; returns how many.
pub fn take_back_leases(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.prepare_cached(
        "UPDATE workflow_executions SET locked_until = NULL WHERE locked_until > ?1 AND status IN ('RUNNING', 'WAITING')",
    )?
    .execute([now])?)
}

/// Ends the leases of executions a stopping runner still held, so the next runner takes them
/// at once.
pub fn release(conn: &Connection, ids: &[String]) -> Result<()> {
    let mut release =
        conn.prepare_cached("UPDATE workflow_executions SET locked_until = NULL WHERE id = ?1")?;
    for id in ids {
        release.execute([id])?;
    }
    Ok(())
}

/// Extends the leases of the executions this process works on.
pub fn renew_leases(conn: &Connection, ids: &[String], until: i64) -> Result<()> {
    let mut renew = conn.prepare_cached(
        "UPDATE workflow_executions SET locked_until = ?2 WHERE id = ?1 AND status IN ('RUNNING', 'WAITING')",
    )?;
    for id in ids {
        renew.execute(params![id, until])?;
    }
    Ok(())
}

/// Up to `limit` ids of a workflow's RUNNING or WAITING executions.
pub fn active_ids(conn: &Connection, workflow: &str, limit: usize) -> Result<Vec<String>> {
    Ok(conn.prepare_cached(
        "SELECT id FROM workflow_executions WHERE workflow_id = ?1 AND status IN ('RUNNING', 'WAITING') LIMIT ?2",
    )?
    .query_map(params![workflow, limit as i64], |r| r.get(0))?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The steps an execution ran, in order.
pub fn runs(conn: &Connection, execution: &str) -> Result<Vec<StepRun>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {RUN_COLUMNS} FROM workflow_execution_steps WHERE execution_id = ?1 ORDER BY seq"
        ))?
        .query_map([execution], run_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The last step an execution ran (or runs, or waits at).
pub fn last_run(conn: &Connection, execution: &str) -> Result<Option<StepRun>> {
    Ok(conn.prepare_cached(&format!(
        "SELECT {RUN_COLUMNS} FROM workflow_execution_steps WHERE execution_id = ?1 ORDER BY seq DESC LIMIT 1"
    ))?
    .query_row([execution], run_from_row)
    .optional()?)
}

/// Adds or rewrites a step run.
pub fn put_run(conn: &Connection, run: &StepRun) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO workflow_execution_steps ({RUN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    ))?
    .execute(params![
        run.execution_id,
        run.seq,
        run.step_id,
        run.status,
        run.output,
        run.error,
        run.started_at,
        run.completed_at
    ])?;
    Ok(())
}

/// Deletes an execution (its runs go with it).
pub fn delete(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("DELETE FROM workflow_executions WHERE id = ?1", [id])?;
    Ok(())
}

/// A waiting execution with a due time, and its workflow's name.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub execution_id: String,
    pub workflow_id: String,
    pub workflow_name: String,
    pub contact_id: String,
    pub due_at: i64,
}

/// The project's executions waiting for a delay or timeout, soonest first, at most `limit`.
pub fn waiting_due(conn: &Connection, project: &str, limit: usize) -> Result<Vec<Waiting>> {
    Ok(conn
        .prepare_cached(
            "SELECT e.id, e.workflow_id, w.name, e.contact_id, e.due_at FROM workflow_executions e
             JOIN workflows w ON w.id = e.workflow_id
             WHERE e.project_id = ?1 AND e.status = 'WAITING' AND e.due_at IS NOT NULL
             ORDER BY e.due_at LIMIT ?2",
        )?
        .query_map(params![project, limit as i64], |r| {
            Ok(Waiting {
                execution_id: r.get(0)?,
                workflow_id: r.get(1)?,
                workflow_name: r.get(2)?,
                contact_id: r.get(3)?,
                due_at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?)
}
