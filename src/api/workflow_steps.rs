//! A workflow's steps and transitions (appliance.md §11): the use cases are
//! `core::workflows::edit`'s, each change checked against the graph as it is in the write that
//! saves it.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, patch, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::ids::{StepId, TransitionId, WorkflowId};
use crate::core::workflows::edit::{self, StepChanges, find, find_step};
use crate::core::workflows::{self as core_workflows, STEP_TYPES};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::workflows::{
    NewStep, NewTransition, Step as StepView, StepPatch, Transition as TransitionView,
};

documented_routes!(add_step, insert_step, update_step, remove_step, add_transition, remove_transition);

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

/// A step to add, from the request: its type, name, config (with a top-level `templateId`)
/// and position checked.
async fn new_step(body: NewStep, connect: bool) -> Result<edit::NewStep, ApiError> {
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
    let (config, refs) =
        crate::core::blocking::blocking(move || core_workflows::check_config(&kind, &config, "config"))
            .await??;
    Ok(edit::NewStep { config, refs, name, position: check_position(body.position)?, connect })
}

/// Adds a step, after the last step that leads nowhere yet unless `autoConnect` is `false`;
/// refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "addWorkflowStep",
    params(("id" = String, Path)),
    request_body = NewStep,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The step", body = StepView)),
)]
#[post("/workflows/<id>/steps", data = "<body>")]
async fn add_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    body: JsonBody<NewStep, Small>,
) -> Result<Json<StepView>, ApiError> {
    let id = id?;
    let body = body.0;
    let connect = body.auto_connect.unwrap_or(true);
    let new = new_step(body, connect).await?;
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let step = edit::add_step(tx, &project, &id, new, clock::now_ms())?;
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
    params(("id" = String, Path), ("step_id" = String, Path)),
    request_body = StepPatch,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The step", body = StepView)),
)]
#[patch("/workflows/<id>/steps/<step_id>", data = "<body>")]
async fn update_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    step_id: Param<StepId>,
    body: JsonBody<StepPatch, Small>,
) -> Result<Json<StepView>, ApiError> {
    let (id, step_id) = (id?, step_id?);
    let body = body.0;
    let name = body.name.as_deref().map(|n| core_workflows::check_name(n, "name")).transpose()?;
    let position = body.position.clone().map(|p| check_position(Some(p))).transpose()?;
    let project = access.project.id;
    // The config is checked for the step's type (templates parse) before the write, not in it:
    // a step's type never changes, so the one read here still holds there.
    let checked = if body.config.is_none() && body.template_id.is_none() {
        None
    } else {
        let (project, id, step_id) = (project.clone(), id.clone(), step_id.clone());
        let step = state.db.run(move |conn| find_step(conn, &find(conn, &project, &id)?, &step_id)).await?;
        let config = match body.config {
            Some(config) => config,
            None => serde_json::from_str(&step.config).unwrap_or_else(|_| json!({})),
        };
        let config = core_workflows::with_template(&step.kind, config, body.template_id)?;
        Some(
            crate::core::blocking::blocking(move || {
                core_workflows::check_config(&step.kind, &config, "config")
            })
            .await??,
        )
    };
    let changes = StepChanges { config: checked, name, position };
    let view = state
        .db
        .write(move |tx| {
            let step = edit::update_step(tx, &project, &id, &step_id, changes, clock::now_ms())?;
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
    params(SpliceParams, ("id" = String, Path), ("step_id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/workflows/<id>/steps/<step_id>?<params..>")]
async fn remove_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    step_id: Param<StepId>,
    params: SpliceParams<'_>,
) -> Result<Status, ApiError> {
    let (id, step_id) = (id?, step_id?);
    let splice = match params.splice {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!("splice is true or false (found {other:?})")));
        }
    };
    let project = access.project.id;
    state.db.write(move |tx| edit::remove_step(tx, &project, &id, &step_id, splice, clock::now_ms())).await?;
    Ok(Status::NoContent)
}

/// Joins two steps; one way out per branch, and no loop without a wait.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "addWorkflowTransition",
    params(("id" = String, Path)),
    request_body = NewTransition,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The transition", body = TransitionView)),
)]
#[post("/workflows/<id>/transitions", data = "<body>")]
async fn add_transition(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    body: JsonBody<NewTransition, Small>,
) -> Result<Json<TransitionView>, ApiError> {
    let id = id?;
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
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let transition = edit::add_transition(tx, &project, &id, (from, to), named, clock::now_ms())?;
            Ok::<_, ApiError>(TransitionView::from(&transition))
        })
        .await?;
    Ok(Json(view))
}

/// Deletes a transition; refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "deleteWorkflowTransition",
    params(("id" = String, Path), ("transition_id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/workflows/<id>/transitions/<transition_id>")]
async fn remove_transition(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    transition_id: Param<TransitionId>,
) -> Result<Status, ApiError> {
    let (id, transition_id) = (id?, transition_id?);
    let project = access.project.id;
    state
        .db
        .write(move |tx| edit::remove_transition(tx, &project, &id, &transition_id, clock::now_ms()))
        .await?;
    Ok(Status::NoContent)
}

/// Puts a new step in the middle of a transition: A → B becomes A → new → B (the new step
/// leads on to B on its first branch, `yes` or `event`). The body is that of adding a step
/// (`autoConnect` aside); an EXIT step is refused here, and so is any change while executions
/// are active (409).
#[utoipa::path(
    tag = "Workflows",
    operation_id = "insertWorkflowStep",
    params(("id" = String, Path), ("transition_id" = String, Path)),
    request_body = NewStep,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The step", body = StepView)),
)]
#[post("/workflows/<id>/transitions/<transition_id>/insert-step", data = "<body>")]
async fn insert_step(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    transition_id: Param<TransitionId>,
    body: JsonBody<NewStep, Small>,
) -> Result<Json<StepView>, ApiError> {
    let (id, transition_id) = (id?, transition_id?);
    let new = new_step(body.0, false).await?;
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let step = edit::insert_step(tx, &project, &id, &transition_id, new, clock::now_ms())?;
            Ok::<_, ApiError>(StepView::from(&step))
        })
        .await?;
    Ok(Json(view))
}
