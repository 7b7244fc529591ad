//! Workflows: the graph (workflow, steps, transitions) as stored. Checking a graph change is
//! `core::workflows`'; executions live in their own tables (migration V12).

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A workflow's own row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workflow {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub description: Option<String>,
    /// `EVENT` or `MANUAL`.
    pub trigger_type: String,
    /// The event that starts executions, as the trigger step's config names it.
    pub trigger_event: Option<String>,
    pub enabled: bool,
    pub allow_reentry: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One step of a workflow's graph.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    pub id: String,
    pub workflow_id: String,
    /// `TRIGGER`, `SEND_EMAIL`, `DELAY`, `WAIT_FOR_EVENT`, `CONDITION`, `WEBHOOK`,
    /// `UPDATE_CONTACT` or `EXIT`.
    pub kind: String,
    pub name: Option<String>,
    /// JSON text of the step's config.
    pub config: String,
    /// JSON text of `{x, y}`, where the editor draws it.
    pub position: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// An edge of the graph: after `from_step_id` (on `branch` for the steps that branch) comes
/// `to_step_id`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transition {
    pub id: String,
    pub workflow_id: String,
    pub from_step_id: String,
    pub to_step_id: String,
    pub branch: Option<String>,
    pub created_at: i64,
}

impl Transition {
    /// A new transition of `workflow` from `from` to `to` on `branch`, made at `now`.
    pub fn new(workflow: &str, (from, to): (String, String), branch: Option<String>, now: i64) -> Self {
        Transition {
            id: super::ids::new_id(),
            workflow_id: workflow.to_string(),
            from_step_id: from,
            to_step_id: to,
            branch,
            created_at: now,
        }
    }
}

const COLUMNS: &str =
    "id, project_id, name, description, trigger_type, trigger_event, enabled, allow_reentry,
     created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Workflow> {
    Ok(Workflow {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        trigger_type: r.get(4)?,
        trigger_event: r.get(5)?,
        enabled: r.get(6)?,
        allow_reentry: r.get(7)?,
        created_at: r.get(8)?,
        updated_at: r.get(9)?,
    })
}

const STEP_COLUMNS: &str = "id, workflow_id, type, name, config, position, created_at, updated_at";

fn step_from_row(r: &Row<'_>) -> rusqlite::Result<Step> {
    Ok(Step {
        id: r.get(0)?,
        workflow_id: r.get(1)?,
        kind: r.get(2)?,
        name: r.get(3)?,
        config: r.get(4)?,
        position: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

const TRANSITION_COLUMNS: &str = "id, workflow_id, from_step_id, to_step_id, branch, created_at";

fn transition_from_row(r: &Row<'_>) -> rusqlite::Result<Transition> {
    Ok(Transition {
        id: r.get(0)?,
        workflow_id: r.get(1)?,
        from_step_id: r.get(2)?,
        to_step_id: r.get(3)?,
        branch: r.get(4)?,
        created_at: r.get(5)?,
    })
}

pub fn insert(conn: &Connection, w: &Workflow) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO workflows ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
        params![
            w.id,
            w.project_id,
            w.name,
            w.description,
            w.trigger_type,
            w.trigger_event,
            w.enabled,
            w.allow_reentry,
            w.created_at,
            w.updated_at
        ],
    )?;
    Ok(())
}

/// Writes a workflow's own fields (name, description, trigger, switches).
pub fn update(conn: &Connection, w: &Workflow) -> Result<()> {
    conn.execute(
        "UPDATE workflows SET name = ?2, description = ?3, trigger_type = ?4, trigger_event = ?5, enabled = ?6,
             allow_reentry = ?7, updated_at = ?8
         WHERE id = ?1",
        params![
            w.id,
            w.name,
            w.description,
            w.trigger_type,
            w.trigger_event,
            w.enabled,
            w.allow_reentry,
            w.updated_at
        ],
    )?;
    Ok(())
}

/// Marks the workflow changed (its graph was).
pub fn touch(conn: &Connection, id: &str, now: i64) -> Result<()> {
    conn.prepare_cached("UPDATE workflows SET updated_at = ?2 WHERE id = ?1")?.execute(params![id, now])?;
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Workflow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM workflows WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM workflows WHERE id = ?1", [id])? > 0)
}

/// One page of a project's workflows (search in name and description).
pub fn page(conn: &Connection, q: &super::ListQuery) -> Result<(Vec<Workflow>, i64)> {
    Ok(super::list_page(conn, ("workflows", COLUMNS, &["name", "description"]), q, from_row)?)
}

/// The steps of a workflow, oldest first (the trigger step first of all).
pub fn steps(conn: &Connection, workflow: &str) -> Result<Vec<Step>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = ?1
         ORDER BY type <> 'TRIGGER', created_at, id"
        ))?
        .query_map([workflow], step_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn step(conn: &Connection, workflow: &str, id: &str) -> Result<Option<Step>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {STEP_COLUMNS} FROM workflow_steps WHERE id = ?1 AND workflow_id = ?2"
        ))?
        .query_row([id, workflow], step_from_row)
        .optional()?)
}

pub fn insert_step(conn: &Connection, s: &Step) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO workflow_steps ({STEP_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![s.id, s.workflow_id, s.kind, s.name, s.config, s.position, s.created_at, s.updated_at],
    )?;
    Ok(())
}

/// Writes a step's name, config and position (its type never changes).
pub fn update_step(conn: &Connection, s: &Step) -> Result<()> {
    conn.execute(
        "UPDATE workflow_steps SET name = ?2, config = ?3, position = ?4, updated_at = ?5 WHERE id = ?1",
        params![s.id, s.name, s.config, s.position, s.updated_at],
    )?;
    Ok(())
}

/// Deletes a step; its transitions go with it.
pub fn delete_step(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM workflow_steps WHERE id = ?1", [id])? > 0)
}

/// The transitions of a workflow, oldest first.
pub fn transitions(conn: &Connection, workflow: &str) -> Result<Vec<Transition>> {
    Ok(conn.prepare_cached(&format!(
        "SELECT {TRANSITION_COLUMNS} FROM workflow_transitions WHERE workflow_id = ?1 ORDER BY created_at, id"
    ))?
    .query_map([workflow], transition_from_row)?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn insert_transition(conn: &Connection, t: &Transition) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO workflow_transitions ({TRANSITION_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
        params![t.id, t.workflow_id, t.from_step_id, t.to_step_id, t.branch, t.created_at],
    )?;
    Ok(())
}

pub fn delete_transition(conn: &Connection, workflow: &str, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM workflow_transitions WHERE id = ?1 AND workflow_id = ?2", [id, workflow])?
        > 0)
}

/// How many workflows a project has.
pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM workflows WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// How many of a workflow's executions are RUNNING or WAITING.
pub fn active_executions(conn: &Connection, workflow: &str) -> Result<i64> {
    Ok(conn.prepare_cached(
        "SELECT count(*) FROM workflow_executions WHERE workflow_id = ?1 AND status IN ('RUNNING', 'WAITING')",
    )?
    .query_row([workflow], |r| r.get(0))?)
}

/// The enabled EVENT workflows of a project that `event` starts.
pub fn triggered_by(conn: &Connection, project: &str, event: &str) -> Result<Vec<Workflow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM workflows
         WHERE project_id = ?1 AND trigger_event = ?2 AND enabled = 1 AND trigger_type = 'EVENT'"
        ))?
        .query_map([project, event], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A workflow by id alone (the runner's executions name theirs).
pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Workflow>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM workflows WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

/// A step by id alone.
pub fn step_by_id(conn: &Connection, id: &str) -> Result<Option<Step>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {STEP_COLUMNS} FROM workflow_steps WHERE id = ?1"))?
        .query_row([id], step_from_row)
        .optional()?)
}

/// The workflow's TRIGGER step.
pub fn trigger_step(conn: &Connection, workflow: &str) -> Result<Option<Step>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {STEP_COLUMNS} FROM workflow_steps WHERE workflow_id = ?1 AND type = 'TRIGGER'"
        ))?
        .query_row([workflow], step_from_row)
        .optional()?)
}

/// The step that comes after `from` on `branch` (none for the steps that do not branch).
pub fn next_step(conn: &Connection, from: &str, branch: Option<&str>) -> Result<Option<String>> {
    Ok(conn.prepare_cached(
        "SELECT to_step_id FROM workflow_transitions WHERE from_step_id = ?1 AND ifnull(branch, '') = ifnull(?2, '')",
    )?
    .query_row(params![from, branch], |r| r.get(0))
    .optional()?)
}

/// How many executions each step of a workflow holds now (RUNNING or WAITING there) and how
/// many completed or failed it, kept as runs are written (migration V38): `(step, active,
/// completed, failed)`, for every step.
pub fn step_counts(conn: &Connection, workflow: &str) -> Result<Vec<(String, i64, i64, i64)>> {
    let mut active = std::collections::HashMap::<String, i64>::new();
    let mut at = conn.prepare_cached(
        "SELECT current_step_id, count(*) FROM workflow_executions
         WHERE workflow_id = ?1 AND status IN ('RUNNING', 'WAITING') AND current_step_id IS NOT NULL
         GROUP BY current_step_id",
    )?;
    for row in at.query_map([workflow], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
        let (step, count) = row?;
        active.insert(step, count);
    }
    let mut counted = conn.prepare_cached(
        "SELECT s.id, coalesce(c.completed, 0), coalesce(c.failed, 0)
         FROM workflow_steps s LEFT JOIN workflow_step_counts c ON c.step_id = s.id
         WHERE s.workflow_id = ?1 ORDER BY s.type <> 'TRIGGER', s.created_at, s.id",
    )?;
    let rows = counted.query_map([workflow], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (step, completed, failed) = row?;
        let now = active.get(&step).copied().unwrap_or(0);
        out.push((step, now, completed, failed));
    }
    Ok(out)
}
