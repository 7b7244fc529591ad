//! The use cases on a workflow's executions that come from a person rather than an event:
//! starting one by hand, cancelling one, and cancelling the active ones a batch at a time.

use serde_json::{Map, Value, json};

use super::edit::find;
use super::start::start;
use super::status::ExecutionStatus;
use crate::core::error::{Error, FieldError, Result};
use crate::core::ids::{ExecutionId, WorkflowId};
use crate::db::Tx;
use crate::db::contacts;
use crate::db::executions::{self, Execution};

/// The execution `id` of workflow `workflow` of `project`.
pub fn find_execution(tx: &Tx, project: &str, workflow: &WorkflowId, id: &ExecutionId) -> Result<Execution> {
    let w = find(tx, project, workflow)?;
    executions::get(tx, &w.id, id)?.ok_or_else(|| ExecutionId::missing(id))
}

/// The contact an execution started by hand is for.
#[derive(Debug, Clone)]
pub enum ContactNamed {
    Id(String),
    /// A checked address.
    Email(String),
}

/// Starts an execution of the enabled workflow `id` for a contact of the project, with
/// `context` at the top of its context.
pub fn start_by_hand(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    who: &ContactNamed,
    context: Map<String, Value>,
    now: i64,
) -> Result<Execution> {
    let w = find(tx, project, id)?;
    if !w.enabled {
        return Err(Error::malformed(
            "the workflow is disabled: enable it (PATCH enabled: true) to start executions",
        ));
    }
    let contact = match who {
        ContactNamed::Id(contact) => contacts::by_id(tx, project, contact)?,
        ContactNamed::Email(email) => contacts::by_email(tx, project, email)?,
    };
    let Some(contact) = contact else {
        let (field, given) = match who {
            ContactNamed::Id(id) => ("contactId", id),
            ContactNamed::Email(email) => ("email", email),
        };
        return Err(Error::Invalid(vec![
            FieldError::new(field, "not_found", "no contact of this project").received(json!(given)),
        ]));
    };
    if !w.allow_reentry && executions::exists_for(tx, &w.id, &contact.id)? {
        return Err(Error::conflict(
            "the contact already had an execution of this workflow, which does not allow re-entry",
        ));
    }
    Ok(start(tx, &w, &contact.id, Value::Object(context), json!({ "manual": true }), None, now)?)
}

/// Cancels a RUNNING or WAITING execution.
pub fn cancel(
    tx: &Tx,
    project: &str,
    workflow: &WorkflowId,
    id: &ExecutionId,
    now: i64,
) -> Result<Execution> {
    let mut ex = find_execution(tx, project, workflow, id)?;
    if !super::engine::cancel(tx, &mut ex, now)? {
        return Err(Error::malformed(format!(
            "only a {} or {} execution can be cancelled; this one is {}",
            ExecutionStatus::Running.as_str(),
            ExecutionStatus::Waiting.as_str(),
            ex.status
        )));
    }
    Ok(ex)
}

/// Cancels up to `limit` of the workflow's active executions; how many it cancelled.
pub fn cancel_some(tx: &Tx, workflow: &str, limit: usize, now: i64) -> Result<usize> {
    let mut cancelled = 0;
    for id in executions::active_ids(tx, workflow, limit)? {
        if let Some(mut ex) = executions::by_id(tx, &id)? {
            cancelled += usize::from(super::engine::cancel(tx, &mut ex, now)?);
        }
    }
    Ok(cancelled)
}
