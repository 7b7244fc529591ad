//! Starting executions: the events that resume the executions waiting for them and start the
//! workflows they trigger ([`on_event`], in the transaction recording the event), a start
//! itself ([`start`]), and the loop caps that bound how often one contact is started.
//!
//! Execution context: an event start keeps the event's data under `event`; a manual start keeps
//! the given context at the top. A WAIT_FOR_EVENT merges the awaited event's data into `event`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use super::cause::cause_of;
use super::progress::{context_of, move_on, record};
use super::status::{self, ExecutionStatus, RunStatus};
use crate::db::effects::{Wake, wake};
use crate::db::executions::{self, Execution};
use crate::db::workflows::{self, Workflow};
use crate::db::{Tx, new_id, settings};

/// Past this size (serialized), an awaited event's data replaces the context's `event` instead
/// of being merged into it.
pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;

/// Resumes the contact's executions waiting for `name` and starts the workflows `name`
/// triggers, in the caller's transaction (the one recording the event).
pub fn on_event(
    conn: &Tx,
    project: &str,
    contact: &str,
    name: &str,
    data: &Value,
    event_id: &str,
    now: i64,
) -> crate::db::Result<()> {
    for mut ex in executions::waiting_for(conn, contact, name)? {
        let Some(step) = ex.current_step_id.clone() else { continue };
        let mut context = context_of(&ex);
        merge_event(&mut context, data);
        let mut text = Value::Object(context.clone()).to_string();
        if text.len() > MAX_CONTEXT_BYTES {
            // A wait in a loop would otherwise grow the context with every event's new keys:
            // past the cap, the awaited event's data replaces what was there.
            context.insert("event".into(), data.clone());
            text = Value::Object(context).to_string();
        }
        ex.context = text;
        let output = json!({ "event": name, "eventId": event_id });
        record(conn, &ex.id, &step, RunStatus::Completed, Some(output), None, now)?;
        move_on(conn, &mut ex, &step, Some("event"), now)?;
        executions::save(conn, &ex)?;
        wake(Wake::Workflows);
    }
    let triggered = workflows::triggered_by(conn, project, name)?;
    if triggered.is_empty() {
        return Ok(());
    }
    let caused_by = cause_of(name, data);
    let hour_ago = now.saturating_sub(3_600_000);
    let per_workflow = settings::number(conn, "workflow_runs_per_contact_hour", 60)?;
    let chained = settings::number(conn, "chained_runs_per_contact_hour", 100)?;
    for workflow in triggered {
        if !workflow.allow_reentry && executions::exists_for(conn, &workflow.id, contact)? {
            continue;
        }
        // Loop caps (issue 29): a workflow that triggers itself, or workflows that trigger one
        // another, stop at a rate however their graphs are drawn.
        if executions::started_since(conn, &workflow.id, contact, hour_ago, per_workflow)? >= per_workflow {
            tracing::debug!(workflow = %workflow.id, contact, "not started: workflow_runs_per_contact_hour reached");
            REFUSED_PER_WORKFLOW.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if caused_by.is_some() && executions::caused_since(conn, contact, hour_ago, chained)? >= chained {
            tracing::debug!(workflow = %workflow.id, contact, "not started: chained_runs_per_contact_hour reached");
            REFUSED_CHAINED.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let context = json!({ "event": data });
        let output = json!({ "event": name, "eventId": event_id });
        start(conn, &workflow, contact, context, output, caused_by.clone(), now)?;
    }
    Ok(())
}

/// Starts the loop caps refused since the process started, by cap (for `GET /metrics`).
static REFUSED_PER_WORKFLOW: AtomicU64 = AtomicU64::new(0);
static REFUSED_CHAINED: AtomicU64 = AtomicU64::new(0);

/// How many starts each loop cap has refused since the process started, by the cap's setting
/// (a start counted in a transaction that then failed is counted all the same).
pub fn refused_starts() -> Vec<(String, u64)> {
    vec![
        ("workflow_runs_per_contact_hour".into(), REFUSED_PER_WORKFLOW.load(Ordering::Relaxed)),
        ("chained_runs_per_contact_hour".into(), REFUSED_CHAINED.load(Ordering::Relaxed)),
    ]
}

/// Starts an execution of `workflow` for `contact`: its TRIGGER step is recorded with `output`
/// and the execution is due at once at the step after it.
pub fn start(
    conn: &Tx,
    workflow: &Workflow,
    contact: &str,
    context: Value,
    output: Value,
    caused_by: Option<String>,
    now: i64,
) -> crate::db::Result<Execution> {
    let Some(trigger) = workflows::trigger_step(conn, &workflow.id)? else {
        return Err(crate::db::DbError::Missing(format!("the TRIGGER step of workflow {}", workflow.id)));
    };
    let mut ex = Execution {
        id: new_id(),
        workflow_id: workflow.id.clone(),
        project_id: workflow.project_id.clone(),
        contact_id: contact.to_string(),
        status: ExecutionStatus::Running.as_str().into(),
        current_step_id: Some(trigger.id.clone()),
        context: context.to_string(),
        started_at: now,
        updated_at: now,
        caused_by,
        ..Execution::default()
    };
    move_on(conn, &mut ex, &trigger.id, None, now)?;
    executions::insert(conn, &ex)?;
    if status::is_active(&ex) {
        wake(Wake::Workflows);
    }
    record(conn, &ex.id, &trigger.id, RunStatus::Completed, Some(output), None, now)?;
    Ok(ex)
}

/// Merges an awaited event's data into the context's `event`.
fn merge_event(context: &mut Map<String, Value>, data: &Value) {
    let event = context.entry("event").or_insert_with(|| json!({}));
    if !event.is_object() {
        *event = json!({});
    }
    if let (Some(event), Some(data)) = (event.as_object_mut(), data.as_object()) {
        event.extend(data.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}
