//! A workflow's steps and transitions (appliance.md §11): each change checked against the graph
//! as it is, in the write that saves it.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, patch, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use super::workflows::{check_step_refs, find, save_refs, startable, structure_unlocked};
use crate::clock;
use crate::core::workflows::{self as core_workflows, STEP_TYPES};
use crate::db::workflows::{self, Step, Transition};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::workflows::{
    NewStep, NewTransition, Step as StepView, StepPatch, Transition as TransitionView,
};

documented_routes!(add_step, update_step, remove_step, add_transition, remove_transition);

/// `{x, y}` numbers, where the editor draws the step.
fn check_position(position: Option<Value>) -> Result<Option<String>, ApiError> {
    match position {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(p))
            if p.len() == 2
                && p.get("x").is_some_and(Value::is_number)
                && p.get("y").is_some_and(Value::is_number) =>
        {
            Ok(Some(Value::Object(p).to_string()))
        }
        Some(_) => {
            Err(ApiError::invalid_field("position", "invalid_type", "position is {x, y} with two numbers"))
        }
    }
}

/// Adds a step, after the last step that leads nowhere yet unless `autoConnect` is `false`;
/// refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "addWorkflowStep",
    request_body = NewStep,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The step", body = StepView)),
)]
#[post("/workflows/<id>/steps", data = "<body>")]
async fn add_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<NewStep, Small>,
) -> Result<Json<StepView>, ApiError> {
    let body = body.0;
    let kind = body.kind.ok_or_else(|| ApiError::invalid_field("type", "required", "type is required"))?;
    if !STEP_TYPES.contains(&kind.as_str()) {
        return Err(ApiError::validation(vec![
            FieldError::new(
                "type",
                "invalid_enum_value",
                format!(
                    "type is one of {} (the TRIGGER step comes with the workflow)",
                    STEP_TYPES.join(", ")
                ),
            )
            .received(json!(kind)),
        ]));
    }
    let name = body.name.as_deref().map(|n| core_workflows::check_name(n, "name")).transpose()?;
    let config = core_workflows::with_template(
        &kind,
        body.config.unwrap_or_else(|| json!({})),
        body.template_id.map(Some),
    )?;
    // Templates parse here: off the executor, as in update_step.
    let (kind, (config, mut step_refs)) =
        super::blocking(move || core_workflows::check_config(&kind, &config, "config").map(|c| (kind, c)))
            .await??;
    let position = check_position(body.position)?;
    let connect = body.auto_connect.unwrap_or(true);
    let (project, id) = (access.project.id, id.to_string());
    let view = state
        .db
        .write(move |tx| {
            let w = find(tx, &project, &id)?;
            structure_unlocked(tx, &w)?;
            let steps = workflows::steps(tx, &w.id)?;
            if steps.len() >= core_workflows::MAX_STEPS {
                return Err(ApiError::bad_request(format!(
                    "a workflow holds at most {} steps",
                    core_workflows::MAX_STEPS
                )));
            }
            check_step_refs(tx, &project, &mut step_refs)?;
            let now = clock::now_ms();
            let step = Step {
                id: crate::db::new_id(),
                workflow_id: w.id.clone(),
                kind,
                name,
                config: config.to_string(),
                position,
                created_at: now,
                updated_at: now,
            };
            workflows::insert_step(tx, &step)?;
            if connect {
                let mut transitions = workflows::transitions(tx, &w.id)?;
                let mut all = steps;
                let ways = core_workflows::auto_connect(&all, &transitions);
                all.push(step.clone());
                for (from, branch) in ways {
                    core_workflows::check_transition(&all, &transitions, &from, &step.id, branch.as_deref())?;
                    let transition = Transition::new(&w.id, (from, step.id.clone()), branch, now);
                    workflows::insert_transition(tx, &transition)?;
                    transitions.push(transition);
                }
            }
            workflows::touch(tx, &w.id, now)?;
            save_refs(tx, &w)?;
            Ok::<_, ApiError>(StepView::from(&step))
        })
        .await?;
    Ok(Json(view))
}

/// Changes a step's config (its type stays), name, position or template: allowed while
/// executions run.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "updateWorkflowStep",
    request_body = StepPatch,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The step", body = StepView)),
)]
#[patch("/workflows/<id>/steps/<step_id>", data = "<body>")]
async fn update_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    step_id: &str,
    body: JsonBody<StepPatch, Small>,
) -> Result<Json<StepView>, ApiError> {
    let body = body.0;
    let name = body.name.as_deref().map(|n| core_workflows::check_name(n, "name")).transpose()?;
    let position = body.position.clone().map(|p| check_position(Some(p))).transpose()?;
    let (project, id, step_id) = (access.project.id, id.to_string(), step_id.to_string());
    // The config is checked for the step's type (templates parse) before the write, not in it:
    // a step's type never changes, so the one read here still holds there.
    let checked = if body.config.is_none() && body.template_id.is_none() {
        None
    } else {
        let (project, id, step_id) = (project.clone(), id.clone(), step_id.clone());
        let step = state
            .db
            .run(move |conn| {
                let w = find(conn, &project, &id)?;
                workflows::step(conn, &w.id, &step_id)?.ok_or_else(|| ApiError::not_found("Step not found"))
            })
            .await?;
        let config = match body.config {
            Some(config) => config,
            None => serde_json::from_str(&step.config).unwrap_or_else(|_| json!({})),
        };
        let config = core_workflows::with_template(&step.kind, config, body.template_id)?;
        Some(super::blocking(move || core_workflows::check_config(&step.kind, &config, "config")).await??)
    };
    let view = state
        .db
        .write(move |tx| {
            let mut w = find(tx, &project, &id)?;
            let mut step =
                workflows::step(tx, &w.id, &step_id)?.ok_or_else(|| ApiError::not_found("Step not found"))?;
            let now = clock::now_ms();
            if let Some((config, mut step_refs)) = checked {
                check_step_refs(tx, &project, &mut step_refs)?;
                if step.kind == "TRIGGER" {
                    w.trigger_event = config.get("eventName").and_then(Value::as_str).map(str::to_string);
                    startable(&w, "config.eventName")?;
                }
                step.config = config.to_string();
            }
            if let Some(name) = name {
                step.name = Some(name);
            }
            if let Some(position) = position {
                step.position = position;
            }
            step.updated_at = now;
            workflows::update_step(tx, &step)?;
            w.updated_at = now;
            workflows::update(tx, &w)?;
            save_refs(tx, &w)?;
            Ok::<_, ApiError>(StepView::from(&step))
        })
        .await?;
    Ok(Json(view))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct SpliceParams<'r> {
    /// `true`: the step's one way in is joined to its one way out; default `false`.
    #[param(value_type = Option<bool>)]
    splice: Option<&'r str>,
}

/// Deletes a step (not the TRIGGER); refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "deleteWorkflowStep",
    params(SpliceParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/workflows/<id>/steps/<step_id>?<params..>")]
async fn remove_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    step_id: &str,
    params: SpliceParams<'_>,
) -> Result<Status, ApiError> {
    let splice = match params.splice {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!("splice is true or false (found {other:?})")));
        }
    };
    let (project, id, step_id) = (access.project.id, id.to_string(), step_id.to_string());
    state
        .db
        .write(move |tx| {
            let w = find(tx, &project, &id)?;
            let step =
                workflows::step(tx, &w.id, &step_id)?.ok_or_else(|| ApiError::not_found("Step not found"))?;
            if step.kind == "TRIGGER" {
                return Err(ApiError::bad_request("the TRIGGER step cannot be deleted"));
            }
            structure_unlocked(tx, &w)?;
            let now = clock::now_ms();
            let reconnect = if splice {
                core_workflows::splice(
                    &workflows::steps(tx, &w.id)?,
                    &workflows::transitions(tx, &w.id)?,
                    &step.id,
                )?
            } else {
                Vec::new()
            };
            workflows::delete_step(tx, &step.id)?;
            for (from, to, branch) in reconnect {
                workflows::insert_transition(tx, &Transition::new(&w.id, (from, to), branch, now))?;
            }
            workflows::touch(tx, &w.id, now)?;
            save_refs(tx, &w)?;
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(Status::NoContent)
}

/// Joins two steps; one way out per branch, and no loop without a wait.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "addWorkflowTransition",
    request_body = NewTransition,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The transition", body = TransitionView)),
)]
#[post("/workflows/<id>/transitions", data = "<body>")]
async fn add_transition(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<NewTransition, Small>,
) -> Result<Json<TransitionView>, ApiError> {
    let body = body.0;
    let from = body
        .from_step_id
        .ok_or_else(|| ApiError::invalid_field("fromStepId", "required", "fromStepId is required"))?;
    let to = body
        .to_step_id
        .ok_or_else(|| ApiError::invalid_field("toStepId", "required", "toStepId is required"))?;
    let named = core_workflows::branch_named(
        body.branch.as_deref(),
        body.condition.as_ref(),
        body.wait_outcome.as_deref(),
    )?;
    if body.priority.is_some_and(|p| p < 0) {
        return Err(ApiError::invalid_field("priority", "too_small", "priority is a whole number from 0"));
    }
    let (project, id) = (access.project.id, id.to_string());
    let view = state
        .db
        .write(move |tx| {
            let w = find(tx, &project, &id)?;
            structure_unlocked(tx, &w)?;
            let steps = workflows::steps(tx, &w.id)?;
            let transitions = workflows::transitions(tx, &w.id)?;
            let branch =
                core_workflows::check_transition(&steps, &transitions, &from, &to, named.as_deref())?;
            let now = clock::now_ms();
            let transition = Transition::new(&w.id, (from, to), branch, now);
            workflows::insert_transition(tx, &transition)?;
            workflows::touch(tx, &w.id, now)?;
            Ok::<_, ApiError>(TransitionView::from(&transition))
        })
        .await?;
    Ok(Json(view))
}

/// Deletes a transition; refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "deleteWorkflowTransition",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/workflows/<id>/transitions/<transition_id>")]
async fn remove_transition(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    transition_id: &str,
) -> Result<Status, ApiError> {
    let (project, id, transition_id) = (access.project.id, id.to_string(), transition_id.to_string());
    state
        .db
        .write(move |tx| {
            let w = find(tx, &project, &id)?;
            structure_unlocked(tx, &w)?;
            if !workflows::delete_transition(tx, &w.id, &transition_id)? {
                return Err(ApiError::not_found("Transition not found"));
            }
            workflows::touch(tx, &w.id, clock::now_ms())?;
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(Status::NoContent)
}
