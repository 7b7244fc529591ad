//! The workflow engine: starting executions, resuming the ones waiting for an event, and moving
//! an execution through its steps. Everything here runs inside a write transaction, so what a
//! step does (an email queued, a contact changed) and the execution moving past it commit
//! together or not at all: a crash never repeats a step's email and never skips it.
//!
//! - [`on_event`] runs in the transaction that records every event ([`crate::core::events::emit`]):
//!   it resumes the contact's executions waiting for that event and starts the enabled
//!   workflows it triggers.
//! - [`advance`] runs an execution's steps until it waits (DELAY, WAIT_FOR_EVENT: a row with a
//!   due time, never a timer in memory), ends, or reaches a WEBHOOK. A webhook's call happens
//!   outside any transaction (the runner makes it, [`crate::scheduler::workflows`]); the step
//!   is recorded as RUNNING before the call and [`finish_webhook`] records its answer and moves
//!   on in one commit. A crash between the call and that commit makes the runner call again
//!   with the same `Idempotency-Key`: the one window, like the relay's for mail (appliance.md
//!   §5), in which a step's effect happens twice.
//!
//! Execution context: an event start keeps the event's data under `event`; a manual start keeps
//! the given context at the top. A WAIT_FOR_EVENT merges the awaited event's data into `event`.
//! CONDITION steps read `event.<path>` and `workflow.<path>` from it; emails and webhooks see it
//! as the variables `event` and `workflow`.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::db::Tx;
use serde_json::{Map, Value, json};

use crate::core::compose;
use crate::core::conditions::eval::{DbFacts, matches};
use crate::core::conditions::{Condition, resolve::resolve};
use crate::core::contacts::{self as core_contacts, Changes};
use crate::core::data::DataPatch;
use crate::core::domains::require_verified_sender;
use crate::core::error::{Error, Result};
use crate::core::fields::FieldChanges;
use crate::db::contacts::{self, Contact};
use crate::db::effects::{Wake, wake};
use crate::db::emails::{self, Email};
use crate::db::executions::{self, Execution, StepRun};
use crate::db::workflows::{self, Step, Workflow};
use crate::db::{new_id, projects, settings, templates};

/// Most steps one call of [`advance`] runs: far more than a path through 200 steps without a
/// wait can take (the graph has no loop without a wait), so reaching it means a bug, and the
/// execution fails instead of holding the writer.
const MAX_STEPS_AT_ONCE: usize = 1_000;

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
        record(conn, &ex.id, &step, "COMPLETED", Some(output), None, now)?;
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

thread_local! {
    /// The workflow whose step is running on this thread: events emitted meanwhile (in the
    /// step's transaction) were emitted by it.
    static STEP_OF: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Marks this thread as running a step of `workflow` until dropped.
struct StepScope(Option<String>);

impl StepScope {
    fn enter(workflow: &str) -> StepScope {
        StepScope(STEP_OF.with(|s| s.replace(Some(workflow.to_string()))))
    }
}

impl Drop for StepScope {
    fn drop(&mut self) {
        let before = self.0.take();
        STEP_OF.with(|s| *s.borrow_mut() = before);
    }
}

/// The workflow that emitted event `name`: the one whose step is running, or for the events of
/// an email, the workflow that sent it (`email.*` names are reserved to the service, so their
/// `workflowId` is the service's own).
fn cause_of(name: &str, data: &Value) -> Option<String> {
    STEP_OF.with(|s| s.borrow().clone()).or_else(|| {
        name.starts_with("email.").then(|| data["workflowId"].as_str().map(str::to_string)).flatten()
    })
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
        status: "RUNNING".into(),
        current_step_id: Some(trigger.id.clone()),
        context: context.to_string(),
        started_at: now,
        updated_at: now,
        caused_by,
        ..Execution::default()
    };
    move_on(conn, &mut ex, &trigger.id, None, now)?;
    executions::insert(conn, &ex)?;
    if ex.is_active() {
        wake(Wake::Workflows);
    }
    record(conn, &ex.id, &trigger.id, "COMPLETED", Some(output), None, now)?;
    Ok(ex)
}

/// A webhook the runner is to call for an execution, with what renders its url, headers and
/// body.
#[derive(Debug, Clone)]
pub struct WebhookCall {
    pub execution: String,
    pub workflow: String,
    pub step: String,
    /// The step run's number: with the execution, the call's idempotency key.
    pub seq: i64,
    pub config: Value,
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
    Call(WebhookCall),
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
    let open = executions::last_run(conn, &ex.id)?
        .is_some_and(|r| r.seq == call.seq && r.step_id == call.step && r.status == "RUNNING");
    if ex.status != "RUNNING" || ex.current_step_id.as_deref() != Some(&call.step) || !open {
        return Ok(Advanced::Idle);
    }
    match answer {
        Ok(output) => {
            record(conn, &ex.id, &call.step, "COMPLETED", Some(output), None, now)?;
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
    if !ex.is_active() {
        return Ok(false);
    }
    if let Some(open) = executions::last_run(conn, &ex.id)?.filter(is_open) {
        let closed = StepRun {
            status: "SKIPPED".into(),
            error: Some("the execution was cancelled".into()),
            completed_at: Some(now),
            ..open
        };
        executions::put_run(conn, &closed)?;
    }
    end(ex, "CANCELLED", now);
    executions::save(conn, ex)?;
    Ok(true)
}

fn is_open(run: &StepRun) -> bool {
    run.status == "RUNNING" || run.status == "WAITING"
}

fn end(ex: &mut Execution, status: &str, now: i64) {
    ex.status = status.to_string();
    ex.completed_at = Some(now);
    ex.due_at = None;
    ex.wait_event = None;
    ex.locked_until = None;
    ex.updated_at = now;
}

/// The step loop of [`advance`].
fn run(conn: &Tx, ex: &mut Execution, now: i64) -> Result<Advanced> {
    let _scope = StepScope::enter(&ex.workflow_id);
    for _ in 0..MAX_STEPS_AT_ONCE {
        let Some(step_id) = ex.current_step_id.clone() else {
            end(ex, "COMPLETED", now);
            return Ok(Advanced::Idle);
        };
        match ex.status.as_str() {
            "WAITING" => {
                if ex.due_at.is_none_or(|due| due > now) {
                    return Ok(Advanced::Idle);
                }
                // A DELAY ended, or a WAIT_FOR_EVENT timed out.
                let timed_out = ex.wait_event.is_some();
                let output = if timed_out { json!({ "timedOut": true }) } else { json!({}) };
                record(conn, &ex.id, &step_id, "COMPLETED", Some(output), None, now)?;
                move_on(conn, ex, &step_id, timed_out.then_some("timeout"), now)?;
            }
            "RUNNING" => {
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
fn step_once(conn: &Tx, ex: &mut Execution, step: &Step, now: i64) -> Result<Option<WebhookCall>> {
    let config: Value = serde_json::from_str(&step.config).unwrap_or(Value::Null);
    match step.kind.as_str() {
        "TRIGGER" => move_on(conn, ex, &step.id, None, now)?,
        "DELAY" => {
            let amount = config["amount"].as_i64().unwrap_or(1);
            let unit = match config["unit"].as_str() {
                Some("days") => 86_400_000,
                Some("hours") => 3_600_000,
                Some("seconds") => 1_000,
                _ => 60_000,
            };
            let until = now.saturating_add(amount.saturating_mul(unit));
            record(
                conn,
                &ex.id,
                &step.id,
                "WAITING",
                Some(json!({ "until": crate::clock::iso(until) })),
                None,
                now,
            )?;
            ex.status = "WAITING".into();
            ex.due_at = Some(until);
            ex.wait_event = None;
        }
        "WAIT_FOR_EVENT" => {
            let event = config["eventName"].as_str().unwrap_or_default().to_string();
            let until = config["timeoutSeconds"].as_i64().map(|s| now.saturating_add(s.saturating_mul(1000)));
            let output = json!({ "eventName": event, "until": until.map(crate::clock::iso) });
            record(conn, &ex.id, &step.id, "WAITING", Some(output), None, now)?;
            ex.status = "WAITING".into();
            ex.due_at = until;
            ex.wait_event = Some(event);
        }
        "CONDITION" => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match condition_holds(conn, ex, &contact, &config, now) {
                Ok(holds) => {
                    record(conn, &ex.id, &step.id, "COMPLETED", Some(json!({ "result": holds })), None, now)?;
                    move_on(conn, ex, &step.id, Some(if holds { "yes" } else { "no" }), now)?;
                }
                Err(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        "SEND_EMAIL" => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match send_email(conn, ex, &contact, &config, now)? {
                Sent::Queued(output) => {
                    record(conn, &ex.id, &step.id, "COMPLETED", Some(output), None, now)?;
                    move_on(conn, ex, &step.id, None, now)?;
                }
                Sent::Skipped(why) => {
                    record(conn, &ex.id, &step.id, "SKIPPED", Some(json!({ "reason": why })), None, now)?;
                    move_on(conn, ex, &step.id, None, now)?;
                }
                Sent::Failed(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        "UPDATE_CONTACT" => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            match update_contact(conn, contact, &config, now) {
                Ok(output) => {
                    record(conn, &ex.id, &step.id, "COMPLETED", Some(output), None, now)?;
                    move_on(conn, ex, &step.id, None, now)?;
                }
                Err(why) => fail(conn, ex, &step.id, &why, now)?,
            }
        }
        "EXIT" => {
            let reason = config["reason"].as_str().map(str::to_string);
            record(conn, &ex.id, &step.id, "COMPLETED", Some(json!({ "reason": reason })), None, now)?;
            ex.exit_reason = Some(reason.unwrap_or_else(|| "EXIT step".into()));
            end(ex, "EXITED", now);
        }
        "WEBHOOK" => {
            let Some(contact) = contact_of(conn, ex, now)? else { return Ok(None) };
            // A run already open for this step is a call interrupted by a crash: the same run
            // (and key) is tried again.
            let seq = match executions::last_run(conn, &ex.id)? {
                Some(run) if run.step_id == step.id && run.status == "RUNNING" => run.seq,
                _ => record(conn, &ex.id, &step.id, "RUNNING", None, None, now)?,
            };
            return Ok(Some(WebhookCall {
                execution: ex.id.clone(),
                workflow: ex.workflow_id.clone(),
                step: step.id.clone(),
                seq,
                config,
                variables: variables(&contact.data, &context_of(ex)),
                email: contact.email.clone(),
                contact_id: contact.id.clone(),
            }));
        }
        other => fail(conn, ex, &step.id, &format!("unknown step type {other}"), now)?,
    }
    Ok(None)
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
    config: &Value,
    now: i64,
) -> Result<bool, String> {
    let mut condition =
        Condition::parse_in_workflow(&config["condition"], "condition").map_err(|e| why(&e))?;
    resolve(conn, &ex.project_id, &mut condition, None, "condition").map_err(|e| why(&e))?;
    let context = context_of(ex);
    let facts = DbFacts { conn, contact_id: &contact.id, contact_seq: contact.seq, context: Some(&context) };
    Ok(matches(&condition, contact, &facts, now))
}

enum Sent {
    Queued(Value),
    Skipped(String),
    Failed(String),
}

/// Queues a SEND_EMAIL step's email, the way campaigns and `/v1/send` queue theirs: the
/// template's content, rendered by the delivery worker for the recipient.
fn send_email(conn: &Tx, ex: &Execution, contact: &Contact, config: &Value, now: i64) -> Result<Sent> {
    let template_id = config["templateId"].as_str().unwrap_or_default();
    let Some(template) = templates::get(conn, &ex.project_id, template_id)? else {
        return Ok(Sent::Failed(format!("the template {template_id} no longer exists")));
    };
    if let Err(e) = require_verified_sender(conn, &ex.project_id, &template.from_email) {
        return Ok(Sent::Failed(why(&e)));
    }
    let context = context_of(ex);
    let custom = config["recipient"]["type"] == "CUSTOM";
    let (to_email, contact_id, mut vars) = if custom {
        // Someone else hears about the contact: the message is not the contact's (no links
        // that act for them, no events on them), but it can name them.
        let mut vars = contact.data.clone();
        vars.insert(
            "contact".into(),
            json!({ "id": contact.id, "email": contact.email, "data": contact.data }),
        );
        (config["recipient"]["email"].as_str().unwrap_or_default().to_string(), None, vars)
    } else {
        if template.kind == "MARKETING" && !contact.subscribed {
            return Ok(Sent::Skipped("the contact is unsubscribed from marketing email".into()));
        }
        (contact.email.clone(), Some(contact.id.clone()), Map::new())
    };
    vars.insert("event".into(), context.get("event").cloned().unwrap_or_else(|| json!({})));
    vars.insert("workflow".into(), Value::Object(context));
    let email = Email {
        id: new_id(),
        project_id: ex.project_id.clone(),
        contact_id,
        to_email: to_email.clone(),
        from_email: template.from_email.clone(),
        from_name: template.from_name.clone(),
        reply_to: template.reply_to.clone(),
        subject: template.subject.clone(),
        body: template.body.clone(),
        headers: "{}".into(),
        variables: Value::Object(vars).to_string(),
        kind: template.kind.clone(),
        source_type: "WORKFLOW".into(),
        template_id: Some(template.id.clone()),
        workflow_id: Some(ex.workflow_id.clone()),
        status: "QUEUED".into(),
        message_id: compose::message_id(&template.from_email),
        created_at: now,
        ..Email::default()
    };
    match emails::insert(conn, &email, now) {
        Ok(()) => {}
        // Over the project's monthly cap of workflow emails: the step fails with the reason
        // (not an error, which would have the runner try it again and again).
        Err(e) => match Error::from(e) {
            e if e.over_cap().is_some() => return Ok(Sent::Failed(why(&e))),
            e => return Err(e),
        },
    }
    Ok(Sent::Queued(json!({ "emailId": email.id, "to": to_email, "templateId": template.id })))
}

/// An UPDATE_CONTACT step, through the custom-field rules of every other writer of contacts.
fn update_contact(conn: &Tx, contact: Contact, config: &Value, now: i64) -> Result<Value, String> {
    let patch = DataPatch::parse(config.get("data").filter(|d| !d.is_null()), "data").map_err(|e| why(&e))?;
    let subscribed = config.get("subscribed").and_then(Value::as_bool);
    let project = contact.project_id.clone();
    let mut fields = FieldChanges::default();
    let changes = Changes { email: None, subscribed, data: &patch };
    let updated =
        core_contacts::update(conn, contact, &changes, &mut fields, "workflow", now).map_err(|e| why(&e))?;
    fields.save(conn, &project).map_err(|e| e.to_string())?;
    Ok(json!({ "subscribed": updated.subscribed, "data": config.get("data") }))
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

fn context_of(ex: &Execution) -> Map<String, Value> {
    match serde_json::from_str(&ex.context) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
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

/// Moves a RUNNING or WAITING execution past `from` on `branch`: to the next step, due now, or
/// to COMPLETED when nothing follows. (Callers outside the runner wake it once they are done.)
fn move_on(
    conn: &Tx,
    ex: &mut Execution,
    from: &str,
    branch: Option<&str>,
    now: i64,
) -> crate::db::Result<()> {
    match workflows::next_step(conn, from, branch)? {
        Some(next) => {
            ex.status = "RUNNING".into();
            ex.current_step_id = Some(next);
            ex.due_at = Some(now);
            ex.wait_event = None;
        }
        None => end(ex, "COMPLETED", now),
    }
    ex.updated_at = now;
    Ok(())
}

/// Fails an active execution for good at the step it is at (the quarantine: see
/// `scheduler::inflight`).
pub fn give_up(conn: &Tx, id: &str, why: &str, now: i64) -> crate::db::Result<()> {
    let Some(mut ex) = executions::by_id(conn, id)? else { return Ok(()) };
    if !ex.is_active() {
        return Ok(());
    }
    let step = ex.current_step_id.clone().unwrap_or_default();
    fail(conn, &mut ex, &step, why, now)?;
    executions::save(conn, &ex)
}

/// Fails the execution at `step` with `why`, kept on the step's run.
fn fail(conn: &Tx, ex: &mut Execution, step: &str, why: &str, now: i64) -> crate::db::Result<()> {
    record(conn, &ex.id, step, "FAILED", None, Some(why.to_string()), now)?;
    end(ex, "FAILED", now);
    Ok(())
}

/// Records a step's run: the run open at this step is closed (or updated), otherwise a new run
/// is added. Returns its number.
fn record(
    conn: &Tx,
    execution: &str,
    step: &str,
    status: &str,
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
    let done = status != "RUNNING" && status != "WAITING";
    executions::put_run(
        conn,
        &StepRun {
            execution_id: execution.to_string(),
            seq,
            step_id: step.to_string(),
            status: status.to_string(),
            output: output.map(|o| o.to_string()),
            error,
            started_at,
            completed_at: done.then_some(now),
        },
    )?;
    Ok(seq)
}
