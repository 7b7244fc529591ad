//! Workflows: `/workflows` (appliance.md §11); their steps and transitions are
//! `workflow_steps`'. The use cases and the rules a graph change keeps are
//! `core::workflows::edit`'s.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::fields as core_fields;
use crate::core::ids::WorkflowId;
use crate::core::workflows::edit::{self, TriggerType, WorkflowChanges, find};
use crate::core::workflows::{self as core_workflows, step::Trigger};
use crate::db::DbError;
use crate::db::workflows::{self, Workflow};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::workflows::{
    ConditionFields, EventField, EventFields, NewWorkflow, StepCount, StepCounts, Workflow as WorkflowView,
    WorkflowPatch,
};

documented_routes!(list, fields, create, read, update, remove, duplicate, step_counts, step_execution_counts);

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// From 1; default 1.
    #[param(value_type = Option<i64>, minimum = 1)]
    page: Option<&'r str>,
    /// Default 20, at most 100.
    #[field(name = "pageSize")]
    #[param(rename = "pageSize", value_type = Option<i64>, minimum = 1)]
    page_size: Option<&'r str>,
    /// Part of the name or description, any case.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
    /// `name`, `createdAt` (the default) or `updatedAt`.
    #[param(value_type = Option<String>)]
    sort: Option<&'r str>,
    /// `desc` (the default) or `asc`.
    #[param(value_type = Option<String>)]
    dir: Option<&'r str>,
    /// `active` (enabled workflows) or `disabled`; default both.
    #[param(value_type = Option<String>)]
    status: Option<&'r str>,
}

/// The project's workflows with their graphs, a page at a time.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "listWorkflows",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of workflows", body = NumberedPage<WorkflowView>)),
)]
#[get("/workflows?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<NumberedPage<WorkflowView>>, ApiError> {
    let enabled = match params.status.map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some("active") => Some(("enabled", "1".to_string())),
        Some("disabled") => Some(("enabled", "0".to_string())),
        Some(other) => {
            return Err(ApiError::bad_request(format!("status is active or disabled (found {other:?})")));
        }
    };
    let (query, page, page_size) = pagination::list_query(
        access.project.id,
        (params.page, params.page_size),
        params.search,
        (params.sort, params.dir),
        enabled,
    )?;
    let rows = state
        .db
        .run(move |conn| {
            let (rows, total) = workflows::page(conn, &query)?;
            let views = rows.iter().map(|w| full_view(conn, w)).collect::<crate::db::Result<Vec<_>>>()?;
            Ok::<_, DbError>((views, total))
        })
        .await?;
    Ok(Json(NumberedPage::new(rows.0, rows.1, page, page_size)))
}

/// What a CONDITION step can test: the contact's fields (standard and custom, from the
/// catalogue, itself capped by `[limits] fields_per_project`), and for the 100 newest event
/// names, the `event.<key>` fields their newest events carry (sampled: the keys of the last 5
/// of at most 16 KiB, 50 keys a name), with their types.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "listWorkflowFields",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Contact fields and each event name's data keys", body = ConditionFields)),
)]
#[get("/workflows/fields")]
async fn fields(state: &State<AppState>, access: ProjectAccess) -> Result<Json<ConditionFields>, ApiError> {
    let project = access.project.id;
    let (contact, events) = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>((
                core_fields::catalogue(conn, &project)?,
                core_fields::event_keys(conn, &project)?,
            ))
        })
        .await?;
    let events = events
        .into_iter()
        .map(|e| EventFields {
            name: e.name,
            count: e.count,
            fields: e
                .keys
                .into_iter()
                .map(|(key, kind)| EventField { field: format!("event.{key}"), key, kind })
                .collect(),
        })
        .collect();
    Ok(Json(ConditionFields { contact: contact.into_iter().map(Into::into).collect(), events }))
}

/// The workflow with its graph, read in one go.
fn full_view(conn: &crate::db::Tx, w: &Workflow) -> crate::db::Result<WorkflowView> {
    Ok(WorkflowView::new(w, &workflows::steps(conn, &w.id)?, &workflows::transitions(conn, &w.id)?))
}

/// Makes a workflow with `triggerType: EVENT` and its TRIGGER step, disabled unless `enabled`.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "createWorkflow",
    request_body = NewWorkflow,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The workflow", body = WorkflowView)),
)]
#[post("/workflows", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewWorkflow, Small>,
) -> Result<Json<WorkflowView>, ApiError> {
    let body = body.0;
    let name = core_workflows::check_name(body.name.as_deref().unwrap_or_default(), "name")?;
    let description = core_workflows::check_text(body.description, "description")?;
    let mut config = body.trigger_config.filter(|c| !c.is_null());
    let named = config.as_ref().and_then(|c| c.get("eventName")).and_then(Value::as_str).map(str::to_string);
    if let Some(event) =
        super::aliases::field(("triggerConfig.eventName", named), ("eventName", body.event_name))?
    {
        let config = config.get_or_insert_with(|| json!({}));
        if let Value::Object(map) = config {
            map.insert("eventName".into(), Value::String(event));
        }
    }
    let trigger = match &config {
        None => Trigger::default(),
        Some(config) => core_workflows::check_trigger_config(config, "triggerConfig")?,
    };
    let new = edit::NewWorkflow {
        name,
        description,
        trigger,
        enabled: body.enabled.unwrap_or(false),
        allow_reentry: body.allow_reentry.unwrap_or(false),
    };
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let workflow = edit::create(tx, &project, new, clock::now_ms())?;
            Ok::<_, ApiError>(full_view(tx, &workflow)?)
        })
        .await?;
    Ok(Json(view))
}

/// A workflow with its steps and transitions.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "getWorkflow",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The workflow", body = WorkflowView)),
)]
#[get("/workflows/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Json<WorkflowView>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let view = state
        .db
        .run(move |conn| full_view(conn, &find(conn, &project, &id)?).map_err(ApiError::from))
        .await?;
    Ok(Json(view))
}

/// Changes a workflow's name, description, trigger, `enabled` or `allowReentry`.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "updateWorkflow",
    params(("id" = String, Path)),
    request_body = WorkflowPatch,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The workflow", body = WorkflowView)),
)]
#[patch("/workflows/<id>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    body: JsonBody<WorkflowPatch, Small>,
) -> Result<Json<WorkflowView>, ApiError> {
    let id = id?;
    let body = body.0;
    let name = body.name.as_deref().map(|n| core_workflows::check_name(n, "name")).transpose()?;
    let description =
        body.description.map(|d| core_workflows::check_text(Some(d), "description")).transpose()?;
    let trigger_type = match body.trigger_type.as_deref() {
        None => None,
        Some(t) if TriggerType::parse(t).is_some() => TriggerType::parse(t),
        Some(other) => {
            return Err(ApiError::validation(vec![
                FieldError::new("triggerType", "invalid_enum_value", "triggerType is EVENT or MANUAL")
                    .received(json!(other)),
            ]));
        }
    };
    let trigger = match &body.trigger_config {
        None | Some(Value::Null) => None,
        Some(config) => Some(core_workflows::check_trigger_config(config, "triggerConfig")?),
    };
    let changes = WorkflowChanges {
        name,
        description,
        trigger_type,
        trigger,
        enabled: body.enabled,
        allow_reentry: body.allow_reentry,
    };
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let w = edit::update(tx, &project, &id, changes, clock::now_ms())?;
            Ok::<_, ApiError>(full_view(tx, &w)?)
        })
        .await?;
    Ok(Json(view))
}

/// Deletes a workflow; refused (409) while executions are active.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "deleteWorkflow",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/workflows/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| edit::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// A copy of a workflow, with its steps and transitions under new ids: disabled, without
/// executions, named `… (copy)`.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "duplicateWorkflow",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The copy", body = WorkflowView)),
)]
#[post("/workflows/<id>/duplicate")]
async fn duplicate(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Json<WorkflowView>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let copy = edit::duplicate(tx, &project, &id, clock::now_ms())?;
            Ok::<_, ApiError>(full_view(tx, &copy)?)
        })
        .await?;
    Ok(Json(view))
}

async fn counts(
    state: &AppState,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<StepCounts, ApiError> {
    let id = id?;
    let project = access.project.id;
    state
        .db
        .run(move |conn| {
            let w = find(conn, &project, &id)?;
            let steps = workflows::step_counts(conn, &w.id)?
                .into_iter()
                .map(|(step_id, active, completed, failed)| StepCount { step_id, active, completed, failed })
                .collect();
            Ok::<_, ApiError>(StepCounts { workflow_id: w.id, steps })
        })
        .await
}

/// How many executions are at each step now, and how many completed or failed it.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "workflowStepCounts",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The counts", body = StepCounts)),
)]
#[get("/workflows/<id>/step-counts")]
async fn step_counts(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Json<StepCounts>, ApiError> {
    Ok(Json(counts(state, access, id).await?))
}

/// The same counts under Plunk v2's name.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "workflowStepExecutionCounts",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The counts", body = StepCounts)),
)]
#[get("/workflows/<id>/step-execution-counts")]
async fn step_execution_counts(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Json<StepCounts>, ApiError> {
    Ok(Json(counts(state, access, id).await?))
}
