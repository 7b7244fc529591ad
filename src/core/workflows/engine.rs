//! The workflow engine: moving an execution through its steps (starting one is
//! [`super::start`]'s). Everything here runs inside a write transaction, so what a step does (an
//! email queued, a contact changed) and the execution moving past it commit together or not at
//! all: a crash never repeats a step's email and never skips it.
//!
//! - [`advance`] runs an execution's steps until it waits (DELAY, WAIT_FOR_EVENT: a row with a
//!   due time, never a timer in memory), ends, or reaches a WEBHOOK. A webhook's call happens
//!   outside any transaction (the runner makes it, [`crate::scheduler::workflows`]); the step
//!   is recorded as RUNNING before the call and [`finish_webhook`] records its answer and moves
//!   on in one commit. A crash between the call and that commit makes the runner call again
//!   with the same `Idempotency-Key`: the one window, like the relay's for mail (appliance.md
//!   §5), in which a step's effect happens twice.
//! - A step that meets an error the variant says may pass ([`Error::is_retryable`]: the
//!   database) hands it up: the runner rolls the step back and runs it again after its lease.
//!   Any other error (a rule, a limit, a template gone) fails the execution at that step, with
//!   the reason on the step's run.
//!
//! CONDITION steps read `event.<path>` and `workflow.<path>` from the execution's context;
//! emails and webhooks see it as the variables `event` and `workflow`.

use crate::core::outbound::{self, Draft};
use crate::core::vocabulary::EmailSource;
use serde_json::{Map, Value, json};

use super::cause::StepScope;
use super::progress::{context_of, end, is_open, move_on, record};
use super::status::{self, ExecutionStatus, RunStatus};
use super::step::{self as config, Recipient, StepConfig};
use crate::core::conditions::eval::{DbFacts, matches};
use crate::core::conditions::resolve::resolve;
use crate::core::consent::may_send;
use crate::core::contacts::{self as core_contacts, Changes};
use crate::core::data::DataPatch;
use crate::core::domains::require_verified_sender;
use crate::core::error::{Error, Result};
use crate::core::fields::FieldChanges;
use crate::db::Tx;
use crate::db::contacts::{self, Contact};
use crate::db::executions::{self, Execution, StepRun};
use crate::db::workflows::{self, Step};
use crate::db::{projects, templates};

/// Most steps one call of [`advance`] runs: far more than a path through 200 steps without a
/// wait can take (the graph has no loop without a wait), so reaching it means a bug, and the
/// execution fails instead of holding the writer.
const MAX_STEPS_AT_ONCE: usize = 1_000;

/// A webhook the runner is to call for an execution, with what renders its url, headers and
/// body.
#[derive(Debug, Clone)]
pub struct WebhookCall {
    pub execution: String,
    pub workflow: String,
    pub step: String,
    /// The step run's number: with the execution, the call's idempotency key.
    pub seq: i64,
    pub config: config::Webhook,
    /// The variables of the render (the contact's fields, `event`, `workflow`).
    pub variables: Map<String, Value>,
    pub email: String,
    pub contact_id: String,
}

impl WebhookCall {
    /// The same for every try of this step of this execution.
    pub fn key(&self) -> String {
        format!("{}:{}", self.execution, self.seq)
    }
}

/// Where an execution stands after [`advance`].
#[derive(Debug)]
pub enum Advanced {
    /// Waiting, over, gone, or not due: nothing for the runner to do now.
    Idle,
    /// The runner calls this webhook, then [`finish_webhook`].
    Call(Box<WebhookCall>),
}

/// Runs execution `id` from where it stands until it waits, ends or reaches a webhook; the
/// runner's lease then lasts until `lease_until`, through the call.
pub fn advance(conn: &Tx, id: &str, now: i64, lease_until: i64) -> Result<Advanced> {
    let Some(mut ex) = executions::by_id(conn, id)? else { return Ok(Advanced::Idle) };
    if projects::is_wiping(conn, &ex.project_id)? {
        // The project is being reset or deleted: the execution goes now rather than run on.
        executions::delete(conn, id)?;
        return Ok(Advanced::Idle);
    }
    let outcome = run(conn, &mut ex, now)?;
    settle(conn, &mut ex, outcome, now, lease_until)
}

/// Records a webhook's answer (`Ok(output)` for a 2xx, `Err(why)` otherwise), moves the execution
/// on, and runs it further like [`advance`]. Nothing happens when the execution is no longer at
/// that step's run (it was cancelled meanwhile).
pub fn finish_webhook(
    conn: &Tx,
    call: &WebhookCall,
    answer: Result<Value, String>,
    now: i64,
    lease_until: i64,
) -> Result<Advanced> {
    let Some(mut ex) = executions::by_id(conn, &call.execution)? else { return Ok(Advanced::Idle) };
    let open = executions::last_run(conn, &ex.id)?.is_some_and(|r| {
        r.seq == call.seq && r.step_id == call.step && RunStatus::of(&r) == Some(RunStatus::Running)
    });
    let running = ExecutionStatus::of(&ex) == Some(ExecutionStatus::Running);
    if !running || ex.current_step_id.as_deref() != Some(&call.step) || !open {
        return Ok(Advanced::Idle);
    }
    match answer {
        Ok(output) => {
            record(conn, &ex.id, &call.step, RunStatus::Completed, Some(output), None, now)?;
            move_on(conn, &mut ex, &call.step, None, now)?;
        }
        Err(why) => fail(conn, &mut ex, &call.step, &why, now)?,
    }
    let outcome = run(conn, &mut ex, now)?;
    settle(conn, &mut ex, outcome, now, lease_until)
}

/// Saves where the execution stands: leased through a webhook call, free otherwise.
fn settle(conn: &Tx, ex: &mut Execution, outcome: Advanced, now: i64, lease_until: i64) -> Result<Advanced> {
    ex.locked_until = matches!(outcome, Advanced::Call(_)).then_some(lease_until);
    ex.updated_at = now;
    executions::save(conn, ex)?;
    Ok(outcome)
}

/// Cancels an active execution; whether it was active.
pub fn cancel(conn: &Tx, ex: &mut Execution, now: i64) -> crate::db::Result<bool> {
    if !status::is_active(ex) {
        return Ok(false);
    }
    if let Some(open) = executions::last_run(conn, &ex.id)?.filter(is_open) {
        let closed = StepRun {
            status: RunStatus::Skipped.as_str().into(),
            error: Some("the execution was cancelled".into()),
            completed_at: Some(now),
            ..open
        };
        executions::put_run(conn, &closed)?;
    }
    end(ex, ExecutionStatus::Cancelled, now);
    executions::save(conn, ex)?;
    Ok(true)
}

/// The step loop of [`advance`].
fn run(conn: &Tx, ex: &mut Execution, now: i64) -> Result<Advanced> {
    let _scope = StepScope::enter(&ex.workflow_id);
    for _ in 0..MAX_STEPS_AT_ONCE {
        let Some(step_id) = ex.current_step_id.clone() else {
            end(ex, ExecutionStatus::Completed, now);
            return Ok(Advanced::Idle);
        };
        match ExecutionStatus::of(ex) {
            Some(ExecutionStatus::Waiting) => {
                if ex.due_at.is_none_or(|due| due > now) {
                    return Ok(Advanced::Idle);
                }
                // A DELAY ended, or a WAIT_FOR_EVENT timed out.
                let timed_out = ex.wait_event.is_some();
                let output = if timed_out { json!({ "timedOut": true }) } else { json!({}) };
                record(conn, &ex.id, &step_id, RunStatus::Completed, Some(output), None, now)?;
                move_on(conn, ex, &step_id, timed_out.then_some("timeout"), now)?;
            }
            Some(ExecutionStatus::Running) => {
                if ex.due_at.is_some_and(|due| due > now) {
                    return Ok(Advanced::Idle);
                }
                let Some(step) = workflows::step_by_id(conn, &step_id)? else {
                    fail(conn, ex, &step_id, "the step no longer exists", now)?;
                    return Ok(Advanced::Idle);
                };
                if let Some(call) = step_once(conn, ex, &step, now)? {
                    return Ok(Advanced::Call(call));
                }
            }
            _ => return Ok(Advanced::Idle),
        }
    }
    let at = ex.current_step_id.clone().unwrap_or_default();
    fail(conn, ex, &at, "the execution ran too many steps without waiting", now)?;
    Ok(Advanced::Idle)
}

/// Runs one step of a RUNNING execution; a WEBHOOK step returns the call to make.
fn step_once(conn: &Tx, ex: &mut Execution, step: &Step, now: i64) -> Result<Option<Box<WebhookCall>>> {
    let Some(config) = StepConfig::stored(&step.kind, &step.config) else {
        let why = format!("the step's config cannot be read as a {} step", step.kind);
        fail(conn, ex, &step.id, &why, now)?;
        return Ok(None);
    };
    let done = |conn: &Tx, ex: &mut Execution, output: Value| -> Result<()> {
        record(conn, &ex.id, &step.id, RunStatus::Completed, Some(output), None, now)?;
        Ok(move_on(conn, ex, &step.id, None, now)?)
    };
    match config {
        StepConfig::Trigger(_) => move_on(conn, ex, &step.id, None, now)?,
        StepConfig::Delay(delay) => {
            let until = now.saturating_add(delay.millis());
            let output = json!({ "until": crate::clock::iso(until) });
            record(conn, &ex.id, &step.id, RunStatus::Waiting, Some(output), None, now)?;
            wait(ex, Some(until), None);
        }
        StepConfig::WaitForEvent(w) => {
            let until = w.timeout_seconds.map(|s| now.saturating_add(s.saturating_mul(1000)));
            let output = json!({ "eventName": w.event_name, "until": until.map(crate::clock::iso) });
            record(conn, &ex.id, &step.id, RunStatus::Waiting, Some(output), None, now)?;
            wait(ex, until, Some(w.event_name));
        }
        StepConfig::Condition(c) => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match or_fail(condition_holds(conn, ex, &contact, &c, now))? {
                Ok(holds) => {
                    let output = Some(json!({ "result": holds }));
                    record(conn, &ex.id, &step.id, RunStatus::Completed, output, None, now)?;
                    move_on(conn, ex, &step.id, Some(if holds { "yes" } else { "no" }), now)?;
                }
                Err(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        StepConfig::SendEmail(send) => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match or_fail(send_email(conn, ex, &contact, &send, now))? {
                Ok(Sent::Queued(output)) => done(conn, ex, output)?,
                Ok(Sent::Skipped(why)) => {
                    let output = Some(json!({ "reason": why }));
                    record(conn, &ex.id, &step.id, RunStatus::Skipped, output, None, now)?;
                    move_on(conn, ex, &step.id, None, now)?;
                }
                Err(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        StepConfig::UpdateContact(update) => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match or_fail(update_contact(conn, contact, &update, now))? {
                Ok(output) => done(conn, ex, output)?,
                Err(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        StepConfig::Exit(exit) => {
            let output = Some(json!({ "reason": exit.reason }));
            record(conn, &ex.id, &step.id, RunStatus::Completed, output, None, now)?;
            ex.exit_reason = Some(exit.reason.unwrap_or_else(|| "EXIT step".into()));
            end(ex, ExecutionStatus::Exited, now);
        }
        StepConfig::Webhook(webhook) => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            // A run already open for this step is a call interrupted by a crash: the same run
            // (and key) is tried again.
            let seq = match executions::last_run(conn, &ex.id)? {
                Some(run) if run.step_id == step.id && RunStatus::of(&run) == Some(RunStatus::Running) => {
                    run.seq
                }
                _ => record(conn, &ex.id, &step.id, RunStatus::Running, None, None, now)?,
            };
            return Ok(Some(Box::new(WebhookCall {
                execution: ex.id.clone(),
                workflow: ex.workflow_id.clone(),
                step: step.id.clone(),
                seq,
                config: webhook,
                variables: variables(&contact.data, &context_of(ex)),
                email: contact.email.clone(),
                contact_id: contact.id.clone(),
            })));
        }
    }
    Ok(None)
}

/// The execution waits at its step: until `until` (a DELAY, or a wait's timeout) and for
/// `event` (a WAIT_FOR_EVENT).
fn wait(ex: &mut Execution, until: Option<i64>, event: Option<String>) {
    ExecutionStatus::Waiting.set(ex);
    ex.due_at = until;
    ex.wait_event = event;
}

/// What a step's error means for the execution (the module's rule): `Err` for an error that may
/// pass, which goes up to the runner; `Ok(Err(why))` for one that fails the execution.
fn or_fail<T>(result: Result<T>) -> Result<Result<T, String>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) if e.is_retryable() => Err(e),
        Err(e) => Ok(Err(why(&e))),
    }
}

/// The execution's contact; an execution whose contact is gone is failed (the row cascades
/// away with the contact, so this is a contact deleted within this transaction).
fn contact_of(conn: &Tx, ex: &mut Execution, now: i64) -> crate::db::Result<Option<Contact>> {
    let contact = contacts::by_id(conn, &ex.project_id, &ex.contact_id)?;
    if contact.is_none() {
        let at = ex.current_step_id.clone().unwrap_or_default();
        fail(conn, ex, &at, "the contact no longer exists", now)?;
    }
    Ok(contact)
}

fn condition_holds(
    conn: &Tx,
    ex: &Execution,
    contact: &Contact,
    step: &config::ConditionStep,
    now: i64,
) -> Result<bool> {
    let mut condition = step.parse("condition")?;
    resolve(conn, &ex.project_id, &mut condition, None, "condition")?;
    let context = context_of(ex);
    let facts = DbFacts { conn, contact_id: &contact.id, contact_seq: contact.seq, context: Some(&context) };
    Ok(matches(&condition, contact, &facts, now))
}

enum Sent {
    Queued(Value),
    Skipped(String),
}

/// Queues a SEND_EMAIL step's email, the way campaigns and `/v1/send` queue theirs: the
/// template's content, rendered by the delivery worker for the recipient.
fn send_email(
    conn: &Tx,
    ex: &Execution,
    contact: &Contact,
    send: &config::SendEmail,
    now: i64,
) -> Result<Sent> {
    let template_id = &send.template_id;
    let Some(template) = templates::get(conn, &ex.project_id, template_id)? else {
        return Err(Error::not_found(format!("the template {template_id} no longer exists")));
    };
    require_verified_sender(conn, &ex.project_id, &template.from_email)?;
    let context = context_of(ex);
    let (to_email, contact_id, mut vars) = if let Recipient::Custom { email } = &send.recipient {
        // Someone else hears about the contact: the message is not the contact's (no links
        // that act for them, no events on them), but it can name them.
        let mut vars = contact.data.clone();
        vars.insert(
            "contact".into(),
            json!({ "id": contact.id, "email": contact.email, "data": contact.data }),
        );
        (email.clone(), None, vars)
    } else {
        // Suppressions are the delivery worker's to check, when the email goes out.
        if let Err(why) = may_send(&template.kind, contact, None, now) {
            return Ok(Sent::Skipped(why));
        }
        (contact.email.clone(), Some(contact.id.clone()), Map::new())
    };
    vars.insert("event".into(), context.get("event").cloned().unwrap_or_else(|| json!({})));
    vars.insert("workflow".into(), Value::Object(context));
    let draft = Draft {
        project_id: ex.project_id.clone(),
        contact_id,
        to: (to_email.clone(), None),
        from: (template.from_email.clone(), template.from_name.clone()),
        reply_to: template.reply_to.clone(),
        subject: template.subject.clone(),
        body: template.body.clone(),
        variables: Some(Value::Object(vars).to_string()),
        kind: template.kind.clone(),
        template_id: Some(template.id.clone()),
        workflow_id: Some(ex.workflow_id.clone()),
        ..Draft::default()
    };
    // Over the project's monthly cap of workflow emails, the error is over a limit: the step
    // fails with the reason rather than being tried again and again.
    let email = outbound::queue(conn, EmailSource::Workflow, draft, now)?;
    Ok(Sent::Queued(json!({ "emailId": email.id, "to": to_email, "templateId": template.id })))
}

/// An UPDATE_CONTACT step, through the custom-field rules of every other writer of contacts.
fn update_contact(conn: &Tx, contact: Contact, update: &config::UpdateContact, now: i64) -> Result<Value> {
    let patch = DataPatch::parse(update.data.as_ref(), "data")?;
    let project = contact.project_id.clone();
    let mut fields = FieldChanges::default();
    let changes = Changes { email: None, subscribed: update.subscribed, data: &patch };
    let updated = core_contacts::update(conn, contact, &changes, &mut fields, "workflow", now)?;
    fields.save(conn, &project)?;
    Ok(json!({ "subscribed": updated.subscribed, "data": update.data }))
}

/// The variables an email or webhook of the execution renders with: the contact's fields, and
/// `event` and `workflow` from the context.
pub fn variables(data: &Map<String, Value>, context: &Map<String, Value>) -> Map<String, Value> {
    let mut vars = data.clone();
    vars.insert("event".into(), context.get("event").cloned().unwrap_or_else(|| json!({})));
    vars.insert("workflow".into(), Value::Object(context.clone()));
    vars
}

/// What went wrong, in one line for the step's `error`: the first field's message when there is one.
fn why(e: &Error) -> String {
    match e.fields().first() {
        Some(field) => format!("{}: {}", field.field, field.message),
        None => e.to_string(),
    }
}

/// Fails an active execution for good at the step it is at (the quarantine: see
/// `scheduler::inflight`).
pub fn give_up(conn: &Tx, id: &str, why: &str, now: i64) -> crate::db::Result<()> {
    let Some(mut ex) = executions::by_id(conn, id)? else { return Ok(()) };
    if !status::is_active(&ex) {
        return Ok(());
    }
    let step = ex.current_step_id.clone().unwrap_or_default();
    fail(conn, &mut ex, &step, why, now)?;
    executions::save(conn, &ex)
}

/// Fails the execution at `step` with `why`, kept on the step's run.
fn fail(conn: &Tx, ex: &mut Execution, step: &str, why: &str, now: i64) -> crate::db::Result<()> {
    record(conn, &ex.id, step, RunStatus::Failed, None, Some(why.to_string()), now)?;
    end(ex, ExecutionStatus::Failed, now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_error_that_may_pass_goes_up_and_any_other_fails_the_step() {
        assert!(or_fail::<()>(Err(Error::Retryable("busy".into()))).is_err(), "retried by the runner");
        let failed = or_fail::<()>(Err(Error::not_found("the template t1 no longer exists"))).unwrap();
        assert_eq!(failed, Err("the template t1 no longer exists".to_string()));
        let invalid = or_fail::<()>(Err(Error::invalid("data.plan", "invalid_type", "plan is a string")));
        assert_eq!(invalid.unwrap(), Err("data.plan: plan is a string".to_string()));
        let capped = Error::OverLimit(crate::core::error::Limit::Billing { category: "workflow".into() });
        assert!(or_fail::<()>(Err(capped)).unwrap().is_err(), "a monthly cap fails the step for good");
        assert_eq!(or_fail(Ok(3)).unwrap(), Ok(3));
    }
}
