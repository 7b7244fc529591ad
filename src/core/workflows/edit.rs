//! The use cases that change a workflow and its graph: make, change and delete a workflow, add,
//! change and delete a step, join and part two steps. Each runs in the caller's write
//! transaction and checks its change against the graph as it is there, so two editors cannot
//! break a rule between them; each rewrites the workflow's row in the references registry.

use super::graph::{auto_connect, branches, check_transition, splice};
use super::rules::{MAX_STEPS, MAX_WORKFLOWS, invalid};
use super::step::{StepConfig, StepRefs, Trigger};
use crate::core::conditions::resolve::resolve;
use crate::core::error::{Error, FieldError, Result};
use crate::core::ids::{StepId, TransitionId, WorkflowId};
use crate::db::Tx;
use crate::db::refs::{self, Owner};
use crate::db::workflows::{self, Step, Transition, Workflow};
use crate::db::{new_id, templates};

/// The workflow `id` of `project`.
pub fn find(tx: &Tx, project: &str, id: &WorkflowId) -> Result<Workflow> {
    workflows::get(tx, project, id)?.ok_or_else(|| WorkflowId::missing(id))
}

/// The step `id` of `workflow`.
pub fn find_step(tx: &Tx, workflow: &Workflow, id: &StepId) -> Result<Step> {
    workflows::step(tx, &workflow.id, id)?.ok_or_else(|| StepId::missing(id))
}

/// How a workflow is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerType {
    /// By the event its TRIGGER step names.
    Event,
    /// Through the API only.
    Manual,
}

impl TriggerType {
    pub fn parse(name: &str) -> Option<TriggerType> {
        match name {
            "EVENT" => Some(Self::Event),
            "MANUAL" => Some(Self::Manual),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Event => "EVENT",
            Self::Manual => "MANUAL",
        }
    }
}

/// Refuses an enabled EVENT workflow that names no event to start it (`field` is the input
/// that should name it).
fn startable(w: &Workflow, field: &str) -> Result<()> {
    if w.enabled && w.trigger_type == TriggerType::Event.as_str() && w.trigger_event.is_none() {
        return Err(Error::invalid(
            field,
            "required",
            "an enabled EVENT workflow names the event that starts it",
        ));
    }
    Ok(())
}

/// Refuses a change of the graph while executions are active: only step configs may change
/// then, and the workflow stays.
fn structure_unlocked(tx: &Tx, w: &Workflow) -> Result<()> {
    let active = workflows::active_executions(tx, &w.id)?;
    if active > 0 {
        return Err(Error::Conflict {
            message: format!(
                "the workflow has {active} active execution(s): while they run only step configs may change \
                 and the workflow cannot be deleted; cancel them or wait for them to finish"
            ),
            details: Some(serde_json::json!({ "activeExecutions": active })),
        });
    }
    Ok(())
}

/// Checks what a step's config names against the project (templates, segments).
fn check_step_refs(tx: &Tx, project: &str, refs: &mut StepRefs) -> Result<()> {
    if let Some(template) = &refs.template
        && templates::get(tx, project, template)?.is_none()
    {
        return Err(Error::Invalid(vec![
            FieldError::new("config.templateId", "not_found", "no template of this project has this id")
                .received(serde_json::json!(template)),
        ]));
    }
    if let Some(condition) = &mut refs.condition {
        resolve(tx, project, condition, None, "config.condition")?;
    }
    Ok(())
}

/// Rewrites the registry rows of a workflow from its stored steps.
fn save_refs(tx: &Tx, w: &Workflow) -> Result<()> {
    let mut names: Vec<(&'static str, String)> = Vec::new();
    for step in workflows::steps(tx, &w.id)? {
        let Some(config) = StepConfig::stored(&step.kind, &step.config) else { continue };
        let refs = config.references();
        names.extend(refs.events.into_iter().map(|e| ("event", e)));
        names.extend(refs.template.map(|t| ("template", t)));
        if let Some(condition) = refs.condition {
            let found = condition.references();
            names.extend(found.pairs().into_iter().map(|(kind, name)| (kind, name.to_string())));
        }
    }
    let pairs: Vec<(&str, &str)> = names.iter().map(|(k, n)| (*k, n.as_str())).collect();
    refs::set(tx, Owner::Workflow, &w.id, &w.project_id, &pairs)?;
    Ok(())
}

/// A new workflow, its fields checked.
#[derive(Debug, Clone)]
pub struct NewWorkflow {
    pub name: String,
    pub description: Option<String>,
    pub trigger: Trigger,
    pub enabled: bool,
    pub allow_reentry: bool,
}

/// Refuses one more workflow in a project that has [`MAX_WORKFLOWS`].
fn room_for_one(tx: &Tx, project: &str) -> Result<()> {
    if workflows::count(tx, project)? >= MAX_WORKFLOWS {
        return Err(Error::malformed(format!(
            "a project has at most {MAX_WORKFLOWS} workflows: delete one you no longer use"
        )));
    }
    Ok(())
}

/// Makes an EVENT workflow of `project` with its TRIGGER step (at most [`MAX_WORKFLOWS`]).
pub fn create(tx: &Tx, project: &str, new: NewWorkflow, now: i64) -> Result<Workflow> {
    room_for_one(tx, project)?;
    let workflow = Workflow {
        id: new_id(),
        project_id: project.to_string(),
        name: new.name,
        description: new.description,
        trigger_type: TriggerType::Event.as_str().into(),
        trigger_event: new.trigger.event_name.clone(),
        enabled: new.enabled,
        allow_reentry: new.allow_reentry,
        created_at: now,
        updated_at: now,
    };
    startable(&workflow, "eventName")?;
    workflows::insert(tx, &workflow)?;
    let step = Step {
        id: new_id(),
        workflow_id: workflow.id.clone(),
        kind: "TRIGGER".into(),
        name: Some("Trigger".into()),
        config: StepConfig::Trigger(new.trigger).to_config().to_string(),
        position: None,
        created_at: now,
        updated_at: now,
    };
    workflows::insert_step(tx, &step)?;
    save_refs(tx, &workflow)?;
    Ok(workflow)
}

/// What a change of a workflow sets; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct WorkflowChanges {
    pub name: Option<String>,
    /// `Some(None)` clears the description.
    pub description: Option<Option<String>>,
    pub trigger_type: Option<TriggerType>,
    pub trigger: Option<Trigger>,
    pub enabled: Option<bool>,
    pub allow_reentry: Option<bool>,
}

/// Changes a workflow's fields and its trigger (allowed while executions run).
pub fn update(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    changes: WorkflowChanges,
    now: i64,
) -> Result<Workflow> {
    let mut w = find(tx, project, id)?;
    if let Some(name) = changes.name {
        w.name = name;
    }
    if let Some(description) = changes.description {
        w.description = description;
    }
    if let Some(kind) = changes.trigger_type {
        w.trigger_type = kind.as_str().into();
    }
    if let Some(reentry) = changes.allow_reentry {
        w.allow_reentry = reentry;
    }
    if let Some(enabled) = changes.enabled {
        w.enabled = enabled;
    }
    if let Some(trigger) = changes.trigger {
        w.trigger_event = trigger.event_name.clone();
        let Some(mut step) = workflows::trigger_step(tx, &w.id)? else {
            return Err(Error::permanent(format!("workflow {} has no TRIGGER step", w.id)));
        };
        step.config = StepConfig::Trigger(trigger).to_config().to_string();
        step.updated_at = now;
        workflows::update_step(tx, &step)?;
    }
    startable(&w, "triggerConfig.eventName")?;
    w.updated_at = now;
    workflows::update(tx, &w)?;
    save_refs(tx, &w)?;
    Ok(w)
}

/// Deletes a workflow; refused while executions are active.
pub fn remove(tx: &Tx, project: &str, id: &WorkflowId) -> Result<()> {
    let w = find(tx, project, id)?;
    structure_unlocked(tx, &w)?;
    workflows::delete(tx, &w.id)?;
    Ok(())
}

/// A step to add: its config checked for its type ([`super::config::check_config`]).
#[derive(Debug, Clone)]
pub struct NewStep {
    pub config: StepConfig,
    pub refs: StepRefs,
    pub name: Option<String>,
    /// `{x, y}` as JSON text.
    pub position: Option<String>,
    /// Joined after the last step that leads nowhere yet.
    pub connect: bool,
}

/// Adds a step to workflow `id`; refused while executions are active.
pub fn add_step(tx: &Tx, project: &str, id: &WorkflowId, mut new: NewStep, now: i64) -> Result<Step> {
    let w = find(tx, project, id)?;
    structure_unlocked(tx, &w)?;
    let steps = workflows::steps(tx, &w.id)?;
    if steps.len() >= MAX_STEPS {
        return Err(Error::malformed(format!("a workflow holds at most {MAX_STEPS} steps")));
    }
    check_step_refs(tx, project, &mut new.refs)?;
    let step = Step {
        id: new_id(),
        workflow_id: w.id.clone(),
        kind: new.config.kind().into(),
        name: new.name,
        config: new.config.to_config().to_string(),
        position: new.position,
        created_at: now,
        updated_at: now,
    };
    workflows::insert_step(tx, &step)?;
    if new.connect {
        let mut transitions = workflows::transitions(tx, &w.id)?;
        let mut all = steps;
        let ways = auto_connect(&all, &transitions);
        all.push(step.clone());
        for (from, branch) in ways {
            check_transition(&all, &transitions, &from, &step.id, branch.as_deref())?;
            let transition = Transition::new(&w.id, (from, step.id.clone()), branch, now);
            workflows::insert_transition(tx, &transition)?;
            transitions.push(transition);
        }
    }
    workflows::touch(tx, &w.id, now)?;
    save_refs(tx, &w)?;
    Ok(step)
}

/// What a change of a step sets; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct StepChanges {
    /// The config, checked for the step's type (which never changes).
    pub config: Option<(StepConfig, StepRefs)>,
    pub name: Option<String>,
    /// `Some(None)` takes the position away.
    pub position: Option<Option<String>>,
}

/// Changes a step's config, name or position: allowed while executions run.
pub fn update_step(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    step_id: &StepId,
    changes: StepChanges,
    now: i64,
) -> Result<Step> {
    let mut w = find(tx, project, id)?;
    let mut step = find_step(tx, &w, step_id)?;
    if let Some((config, mut refs)) = changes.config {
        if config.kind() != step.kind {
            return Err(Error::malformed(format!(
                "the step is a {} step; its type does not change",
                step.kind
            )));
        }
        check_step_refs(tx, project, &mut refs)?;
        if let StepConfig::Trigger(trigger) = &config {
            w.trigger_event = trigger.event_name.clone();
            startable(&w, "config.eventName")?;
        }
        step.config = config.to_config().to_string();
    }
    if let Some(name) = changes.name {
        step.name = Some(name);
    }
    if let Some(position) = changes.position {
        step.position = position;
    }
    step.updated_at = now;
    workflows::update_step(tx, &step)?;
    w.updated_at = now;
    workflows::update(tx, &w)?;
    save_refs(tx, &w)?;
    Ok(step)
}

/// Deletes a step (not the TRIGGER), joining its way in to its way out when `splice`; refused
/// while executions are active.
pub fn remove_step(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    step_id: &StepId,
    splice_it: bool,
    now: i64,
) -> Result<()> {
    let w = find(tx, project, id)?;
    let step = find_step(tx, &w, step_id)?;
    if step.kind == "TRIGGER" {
        return Err(Error::malformed("the TRIGGER step cannot be deleted"));
    }
    structure_unlocked(tx, &w)?;
    let reconnect = if splice_it {
        splice(&workflows::steps(tx, &w.id)?, &workflows::transitions(tx, &w.id)?, &step.id)?
    } else {
        Vec::new()
    };
    workflows::delete_step(tx, &step.id)?;
    for (from, to, branch) in reconnect {
        workflows::insert_transition(tx, &Transition::new(&w.id, (from, to), branch, now))?;
    }
    workflows::touch(tx, &w.id, now)?;
    save_refs(tx, &w)?;
    Ok(())
}

/// Joins step `from` to step `to` on `branch`; refused while executions are active.
pub fn add_transition(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    (from, to): (String, String),
    branch: Option<String>,
    now: i64,
) -> Result<Transition> {
    let w = find(tx, project, id)?;
    structure_unlocked(tx, &w)?;
    let steps = workflows::steps(tx, &w.id)?;
    let transitions = workflows::transitions(tx, &w.id)?;
    let branch = check_transition(&steps, &transitions, &from, &to, branch.as_deref())?;
    let transition = Transition::new(&w.id, (from, to), branch, now);
    workflows::insert_transition(tx, &transition)?;
    workflows::touch(tx, &w.id, now)?;
    Ok(transition)
}

/// Deletes a transition; refused while executions are active.
pub fn remove_transition(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    transition_id: &TransitionId,
    now: i64,
) -> Result<()> {
    let w = find(tx, project, id)?;
    structure_unlocked(tx, &w)?;
    if !workflows::delete_transition(tx, &w.id, transition_id)? {
        return Err(TransitionId::missing(transition_id));
    }
    workflows::touch(tx, &w.id, now)?;
    Ok(())
}

/// Puts a new step in the middle of transition `transition_id`: A → B becomes A → new → B, the
/// new step taking the transition's branch from A and leading on to B on its first branch
/// (`yes` for a CONDITION, `event` for a WAIT_FOR_EVENT). An EXIT cannot lead on, so it is
/// refused here; refused (409) while executions are active.
pub fn insert_step(
    tx: &Tx,
    project: &str,
    id: &WorkflowId,
    transition_id: &TransitionId,
    mut new: NewStep,
    now: i64,
) -> Result<Step> {
    let w = find(tx, project, id)?;
    structure_unlocked(tx, &w)?;
    let Some(old) = workflows::transitions(tx, &w.id)?.into_iter().find(|t| t.id == transition_id.as_str())
    else {
        return Err(TransitionId::missing(transition_id));
    };
    if new.config.kind() == "EXIT" {
        return Err(invalid(
            "type",
            "invalid_step",
            "an EXIT step ends the execution, so nothing could follow it here: add it after the last step",
        ));
    }
    new.connect = false;
    let step = add_step(tx, project, id, new, now)?;
    workflows::delete_transition(tx, &w.id, &old.id)?;
    let steps = workflows::steps(tx, &w.id)?;
    let mut transitions = workflows::transitions(tx, &w.id)?;
    let onward = branches(&step.kind).map(|b| b[0].to_string());
    for (from, to, branch) in
        [(old.from_step_id, step.id.clone(), old.branch), (step.id.clone(), old.to_step_id, onward)]
    {
        let branch = check_transition(&steps, &transitions, &from, &to, branch.as_deref())?;
        let transition = Transition::new(&w.id, (from, to), branch, now);
        workflows::insert_transition(tx, &transition)?;
        transitions.push(transition);
    }
    Ok(step)
}

/// The name of a copy: `name (copy)`, cut to fit the 200 characters a name may have.
fn copy_name(name: &str) -> String {
    const SUFFIX: &str = " (copy)";
    let kept: String = name.chars().take(200 - SUFFIX.chars().count()).collect();
    format!("{}{SUFFIX}", kept.trim_end())
}

/// A copy of workflow `id`: its settings, steps (with their positions) and transitions, under
/// new ids, disabled and without executions (at most [`MAX_WORKFLOWS`] in the project).
pub fn duplicate(tx: &Tx, project: &str, id: &WorkflowId, now: i64) -> Result<Workflow> {
    let w = find(tx, project, id)?;
    room_for_one(tx, project)?;
    let copy = Workflow {
        id: new_id(),
        name: copy_name(&w.name),
        enabled: false,
        created_at: now,
        updated_at: now,
        ..w.clone()
    };
    workflows::insert(tx, &copy)?;
    let mut ids = std::collections::HashMap::new();
    for step in workflows::steps(tx, &w.id)? {
        let made = Step {
            id: new_id(),
            workflow_id: copy.id.clone(),
            created_at: now,
            updated_at: now,
            ..step.clone()
        };
        workflows::insert_step(tx, &made)?;
        ids.insert(step.id, made.id);
    }
    for t in workflows::transitions(tx, &w.id)? {
        let (Some(from), Some(to)) = (ids.get(&t.from_step_id), ids.get(&t.to_step_id)) else { continue };
        workflows::insert_transition(
            tx,
            &Transition::new(&copy.id, (from.clone(), to.clone()), t.branch, now),
        )?;
    }
    save_refs(tx, &copy)?;
    Ok(copy)
}
