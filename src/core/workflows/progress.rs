//! An execution's bookkeeping, shared by the step loop and the event starts: its context, the
//! record of each step's run, and moving on to the next step or to the end.

use serde_json::{Map, Value};

use super::status::{ExecutionStatus, RunStatus};
use crate::db::Tx;
use crate::db::executions::{self, Execution, StepRun};
use crate::db::workflows;

/// Whether a step run is still open (running or waiting).
pub(super) fn is_open(run: &StepRun) -> bool {
    RunStatus::of(run).is_some_and(RunStatus::is_open)
}

/// Ends an execution with `status` now: nothing is due or awaited, and its lease goes.
pub(super) fn end(ex: &mut Execution, status: ExecutionStatus, now: i64) {
    status.set(ex);
    ex.completed_at = Some(now);
    ex.due_at = None;
    ex.wait_event = None;
    ex.locked_until = None;
    ex.updated_at = now;
}

/// The execution's context (the starting event and its variables), empty when unreadable.
pub(super) fn context_of(ex: &Execution) -> Map<String, Value> {
    match serde_json::from_str(&ex.context) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// Moves a RUNNING or WAITING execution past `from` on `branch`: to the next step, due now, or
/// to COMPLETED when nothing follows. (Callers outside the runner wake it once they are done.)
pub(super) fn move_on(
    conn: &Tx,
    ex: &mut Execution,
    from: &str,
    branch: Option<&str>,
    now: i64,
) -> crate::db::Result<()> {
    match workflows::next_step(conn, from, branch)? {
        Some(next) => {
            ExecutionStatus::Running.set(ex);
            ex.current_step_id = Some(next);
            ex.due_at = Some(now);
            ex.wait_event = None;
        }
        None => end(ex, ExecutionStatus::Completed, now),
    }
    ex.updated_at = now;
    Ok(())
}

/// Records a step's run: the run open at this step is closed (or updated), otherwise a new run
/// is added. Returns its number.
pub(super) fn record(
    conn: &Tx,
    execution: &str,
    step: &str,
    status: RunStatus,
    output: Option<Value>,
    error: Option<String>,
    now: i64,
) -> crate::db::Result<i64> {
    let last = executions::last_run(conn, execution)?;
    let (seq, started_at) = match &last {
        Some(run) if run.step_id == step && is_open(run) => (run.seq, run.started_at),
        Some(run) => (run.seq + 1, now),
        None => (1, now),
    };
    let done = !status.is_open();
    executions::put_run(
        conn,
        &StepRun {
            execution_id: execution.to_string(),
            seq,
            step_id: step.to_string(),
            status: status.as_str().to_string(),
            output: output.map(|o| o.to_string()),
            error,
            started_at,
            completed_at: done.then_some(now),
        },
    )?;
    Ok(seq)
}
