//! Workflows: the workflow with its graph (steps and transitions), its executions, the fields a
//! CONDITION step can test, and the bodies that make and change them (appliance.md §11).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::workflows::status::ExecutionStatus;
use crate::db::executions::{Execution as ExecutionRow, StepRun as StepRunRow};
use crate::db::workflows::{Step as StepRow, Transition as TransitionRow, Workflow as Row};
use crate::views::fields::Field;

/// A graph of steps run per contact: a TRIGGER step, then steps joined by transitions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// `EVENT` (started by an event, the default) or `MANUAL` (started through the API only).
    pub trigger_type: String,
    /// The TRIGGER step's config: `{eventName}`, the event that starts an EVENT workflow.
    #[schema(value_type = Object)]
    pub trigger_config: Value,
    pub enabled: bool,
    /// Whether a contact that already had an execution (in any state) may be entered again.
    pub allow_reentry: bool,
    /// The TRIGGER step first, then by creation.
    pub steps: Vec<Step>,
    pub transitions: Vec<Transition>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl Workflow {
    pub fn new(w: &Row, steps: &[StepRow], transitions: &[TransitionRow]) -> Self {
        let trigger_config = steps
            .iter()
            .find(|s| s.kind == "TRIGGER")
            .and_then(|s| serde_json::from_str::<Value>(&s.config).ok())
            .unwrap_or_else(|| json!({}));
        Workflow {
            id: w.id.clone(),
            name: w.name.clone(),
            description: w.description.clone(),
            trigger_type: w.trigger_type.clone(),
            trigger_config,
            enabled: w.enabled,
            allow_reentry: w.allow_reentry,
            steps: steps.iter().map(Step::from).collect(),
            transitions: transitions.iter().map(Transition::from).collect(),
            created_at: iso(w.created_at),
            updated_at: iso(w.updated_at),
        }
    }
}

/// A step of a workflow.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: String,
    /// `TRIGGER`, `SEND_EMAIL`, `DELAY`, `WAIT_FOR_EVENT`, `CONDITION`, `WEBHOOK`,
    /// `UPDATE_CONTACT` or `EXIT`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: Option<String>,
    /// By type: TRIGGER `{eventName}`; SEND_EMAIL `{templateId, recipient?: {type: CONTACT |
    /// CUSTOM, email?}}`; DELAY `{amount, unit: minutes | hours | days}`; WAIT_FOR_EVENT
    /// `{eventName, timeoutSeconds?}`; CONDITION `{condition}` (a condition tree);
    /// WEBHOOK `{url, method?, headers?, body?}`; UPDATE_CONTACT `{data?, subscribed?}`;
    /// EXIT `{reason?}`.
    #[schema(value_type = Object)]
    pub config: Value,
    /// A SEND_EMAIL step's template (its `config.templateId`).
    pub template_id: Option<String>,
    /// `{x, y}`: where the editor draws the step.
    #[schema(value_type = Option<Position>)]
    pub position: Option<Value>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&StepRow> for Step {
    fn from(s: &StepRow) -> Self {
        let config = config_of(s);
        Step {
            id: s.id.clone(),
            kind: s.kind.clone(),
            name: s.name.clone(),
            template_id: config.get("templateId").and_then(Value::as_str).map(str::to_string),
            config,
            position: s.position.as_deref().and_then(|p| serde_json::from_str(p).ok()),
            created_at: iso(s.created_at),
            updated_at: iso(s.updated_at),
        }
    }
}

/// A step's stored config; a CONDITION's tree in the one form the API shows (rows stored before
/// trees were kept that way included).
fn config_of(s: &StepRow) -> Value {
    let mut config: Value = serde_json::from_str(&s.config).unwrap_or(Value::Null);
    if s.kind == "CONDITION"
        && let Some(tree) = config.get_mut("condition")
    {
        *tree = crate::core::conditions::canonical(tree);
    }
    config
}

/// Where the editor draws a step.
#[derive(Debug, Serialize, ToSchema)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

/// A move from one step to the next.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub id: String,
    pub from_step_id: String,
    pub to_step_id: String,
    /// Leaving a CONDITION step: `yes` or `no`; leaving a WAIT_FOR_EVENT step: `event` or
    /// `timeout`; otherwise `null`.
    pub branch: Option<String>,
    /// The branch as Plunk shows a CONDITION step's: `{branch: "yes" | "no"}`, else `null`.
    #[schema(value_type = Option<Object>)]
    pub condition: Option<Value>,
    /// The branch as Plunk shows a WAIT_FOR_EVENT step's: `EVENT` or `TIMEOUT`, else `null`.
    #[schema(value_type = Option<WaitOutcome>)]
    pub wait_outcome: Option<&'static str>,
}

impl From<&TransitionRow> for Transition {
    fn from(t: &TransitionRow) -> Self {
        let branch = t.branch.as_deref();
        Transition {
            id: t.id.clone(),
            from_step_id: t.from_step_id.clone(),
            to_step_id: t.to_step_id.clone(),
            branch: t.branch.clone(),
            condition: branch.filter(|b| matches!(*b, "yes" | "no")).map(|b| json!({ "branch": b })),
            wait_outcome: match branch {
                Some("event") => Some("EVENT"),
                Some("timeout") => Some("TIMEOUT"),
                _ => None,
            },
        }
    }
}

/// One contact's way through a workflow, with the steps it ran.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub id: String,
    pub workflow_id: String,
    pub contact_id: String,
    /// `null` once the contact is deleted.
    pub contact_email: Option<String>,
    /// `RUNNING`, `WAITING`, `COMPLETED`, `EXITED`, `FAILED` or `CANCELLED`.
    pub status: String,
    pub current_step_id: Option<String>,
    /// The execution's variables: the starting event's data, the given `context`, and what
    /// WAIT_FOR_EVENT and WEBHOOK steps added.
    #[schema(value_type = Object)]
    pub context: Value,
    pub exit_reason: Option<String>,
    /// The event a WAITING execution waits for.
    pub waiting_for: Option<String>,
    /// When a WAITING execution moves on (its delay or timeout ends).
    #[schema(format = DateTime)]
    pub due_at: Option<String>,
    #[schema(format = DateTime)]
    pub started_at: String,
    #[schema(format = DateTime)]
    pub completed_at: Option<String>,
    /// In the order they ran.
    pub steps: Vec<StepRun>,
}

impl Execution {
    pub fn new(ex: &ExecutionRow, email: Option<String>, runs: &[StepRunRow]) -> Self {
        Execution {
            id: ex.id.clone(),
            workflow_id: ex.workflow_id.clone(),
            contact_id: ex.contact_id.clone(),
            contact_email: email,
            status: ex.status.clone(),
            current_step_id: ex.current_step_id.clone(),
            context: serde_json::from_str(&ex.context).unwrap_or_else(|_| json!({})),
            exit_reason: ex.exit_reason.clone(),
            waiting_for: ex.wait_event.clone(),
            due_at: ex.due_at.filter(|_| ExecutionStatus::of(ex) == Some(ExecutionStatus::Waiting)).map(iso),
            started_at: iso(ex.started_at),
            completed_at: ex.completed_at.map(iso),
            steps: runs.iter().map(StepRun::from).collect(),
        }
    }
}

/// A step an execution ran.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepRun {
    pub step_id: String,
    /// `RUNNING`, `WAITING`, `COMPLETED`, `FAILED` or `SKIPPED`.
    pub status: String,
    /// What the step produced (the email it queued, the branch it took, the webhook's answer).
    pub output: Option<Value>,
    pub error: Option<String>,
    #[schema(format = DateTime)]
    pub started_at: String,
    #[schema(format = DateTime)]
    pub completed_at: Option<String>,
}

impl From<&StepRunRow> for StepRun {
    fn from(r: &StepRunRow) -> Self {
        StepRun {
            step_id: r.step_id.clone(),
            status: r.status.clone(),
            output: r.output.as_deref().and_then(|t| serde_json::from_str(t).ok()),
            error: r.error.clone(),
            started_at: iso(r.started_at),
            completed_at: r.completed_at.map(iso),
        }
    }
}

/// `POST /workflows/{id}/executions/cancel-all`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelledAll {
    pub workflow_id: String,
    /// Executions cancelled (those active when asked).
    pub cancelled: usize,
}

/// `GET /workflows/fields`: what a CONDITION step can test.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConditionFields {
    /// The contact fields, standard and custom.
    pub contact: Vec<Field>,
    /// Each event name the project has, with the data keys of its latest events.
    pub events: Vec<EventFields>,
}

/// An event name and the `event.<key>` fields its latest events carry.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventFields {
    pub name: String,
    /// Events of this name recorded.
    pub count: i64,
    pub fields: Vec<EventField>,
}

/// A data key of an event, as a CONDITION step names it.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventField {
    /// `event.<key>`.
    pub field: String,
    pub key: String,
    /// `string`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// How a workflow starts: by its event, or only through the API.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum TriggerType {
    #[schema(rename = "EVENT")]
    Event,
    #[schema(rename = "MANUAL")]
    Manual,
}

/// The step types a workflow can add (its TRIGGER step comes with it).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum StepType {
    #[schema(rename = "SEND_EMAIL")]
    SendEmail,
    #[schema(rename = "DELAY")]
    Delay,
    #[schema(rename = "WAIT_FOR_EVENT")]
    WaitForEvent,
    #[schema(rename = "CONDITION")]
    Condition,
    #[schema(rename = "WEBHOOK")]
    Webhook,
    #[schema(rename = "UPDATE_CONTACT")]
    UpdateContact,
    #[schema(rename = "EXIT")]
    Exit,
}

/// `POST /workflows`: a workflow is made with `triggerType: EVENT` and its TRIGGER step,
/// disabled unless `enabled` says otherwise.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Onboarding", "description": "Welcome new users", "triggerConfig": { "eventName": "signed-up" } }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewWorkflow {
    /// 1 to 200 characters.
    #[schema(required, value_type = String, min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// At most 500 characters.
    pub description: Option<String>,
    /// `{eventName}`: the event that starts it.
    #[schema(value_type = Option<Object>)]
    pub trigger_config: Option<Value>,
    /// `triggerConfig.eventName`, as Plunk's clients send it.
    pub event_name: Option<String>,
    /// Default `false`; an enabled workflow names its event.
    pub enabled: Option<bool>,
    /// Default `false`.
    pub allow_reentry: Option<bool>,
}

/// `PATCH /workflows/{id}`: only what is given changes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkflowPatch {
    pub name: Option<String>,
    pub description: Option<String>,
    /// `EVENT` or `MANUAL`.
    #[schema(value_type = Option<TriggerType>)]
    pub trigger_type: Option<String>,
    /// `{eventName}`.
    #[schema(value_type = Option<Object>)]
    pub trigger_config: Option<Value>,
    /// An enabled EVENT workflow must name its event.
    pub enabled: Option<bool>,
    pub allow_reentry: Option<bool>,
}

/// `POST /workflows/{id}/steps`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "type": "DELAY", "name": "Wait a day", "config": { "amount": 1, "unit": "days" }, "position": { "x": 240, "y": 120 } }))]
#[serde(deny_unknown_fields)]
pub struct NewStep {
    /// `SEND_EMAIL`, `DELAY`, `WAIT_FOR_EVENT`, `CONDITION`, `WEBHOOK`, `UPDATE_CONTACT` or
    /// `EXIT` (the TRIGGER step comes with the workflow).
    #[serde(rename = "type")]
    #[schema(required, value_type = StepType)]
    pub kind: Option<String>,
    pub name: Option<String>,
    /// As the step's type has it (see the `Step` schema); default `{}`. Plunk's forms are taken
    /// too and stored in ours: SEND_EMAIL `recipient.customEmail`, WAIT_FOR_EVENT `timeout`
    /// (seconds), CONDITION `{field, operator, value}`, UPDATE_CONTACT `{updates,
    /// subscriptionAction}`, a DELAY's fractional `amount`.
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    #[schema(value_type = Option<Position>)]
    pub position: Option<Value>,
    /// A SEND_EMAIL step's template (over `config.templateId`), as Plunk's clients send it.
    #[serde(rename = "templateId")]
    pub template_id: Option<String>,
    /// Default `true`: the step follows the last step that leads nowhere yet (a CONDITION on
    /// its `yes` branch, a WAIT_FOR_EVENT on `event`, and on `timeout` too when it has one).
    /// `false` leaves it unconnected.
    #[serde(rename = "autoConnect")]
    pub auto_connect: Option<bool>,
}

/// `PATCH /workflows/{id}/steps/{step_id}`: the config (for the step's type), name or position;
/// the config may change while executions run.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepPatch {
    pub name: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub config: Option<Value>,
    #[schema(value_type = Option<Position>)]
    pub position: Option<Value>,
    /// A SEND_EMAIL step's template (over `config.templateId`), as Plunk's clients send it.
    #[serde(rename = "templateId", default, deserialize_with = "crate::views::present")]
    #[schema(value_type = Option<String>)]
    pub template_id: Option<Option<String>>,
}

/// `POST /workflows/{id}/transitions`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewTransition {
    #[schema(required, value_type = String)]
    pub from_step_id: Option<String>,
    #[schema(required, value_type = String)]
    pub to_step_id: Option<String>,
    /// Required leaving a CONDITION step (`yes` or `no`) or a WAIT_FOR_EVENT step (`event` or
    /// `timeout`), here or as Plunk's `condition` or `waitOutcome`.
    pub branch: Option<String>,
    /// Plunk's form of a CONDITION step's branch: `{branch: "yes" | "no"}` (and of a wait's
    /// timeout: `{branch: "timeout"}` or `{fallback: true}`).
    #[schema(value_type = Option<Object>)]
    pub condition: Option<Value>,
    /// Plunk's form of a WAIT_FOR_EVENT step's branch: `EVENT` or `TIMEOUT`.
    #[schema(value_type = Option<WaitOutcome>)]
    pub wait_outcome: Option<String>,
    /// Accepted and not kept: a step has one way on per branch, so there is no order to keep.
    #[schema(minimum = 0)]
    pub priority: Option<i64>,
}

/// A WAIT_FOR_EVENT step's two ways on, as Plunk names them.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum WaitOutcome {
    #[schema(rename = "EVENT")]
    Event,
    #[schema(rename = "TIMEOUT")]
    Timeout,
}

/// `POST /workflows/{id}/executions`: the contact by id or by email, and the execution's
/// variables.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "email": "ada@example.com", "context": { "coupon": "WELCOME10" } }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewExecution {
    pub contact_id: Option<String>,
    #[schema(format = Email)]
    pub email: Option<String>,
    /// Per-execution variables.
    #[schema(value_type = Option<Object>)]
    pub context: Option<Value>,
}

/// How far a workflow's executions got, step by step.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCounts {
    pub workflow_id: String,
    /// Every step, the TRIGGER first.
    pub steps: Vec<StepCount>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepCount {
    pub step_id: String,
    /// Executions at this step now (running it, or waiting there).
    pub active: i64,
    /// Executions that completed this step, all time.
    pub completed: i64,
    /// Executions that failed at this step, all time.
    pub failed: i64,
}
