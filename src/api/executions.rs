//! A workflow's executions: `/workflows/:id/executions` (start one by hand, list, read with its
//! step history, cancel one, cancel all). The use cases are `core::workflows::executions`'; the
//! engine that moves executions is `core::workflows::engine`.

use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::ids::{ExecutionId, WorkflowId};
use crate::core::workflows::edit::find;
use crate::core::workflows::executions::{self as runs, ContactNamed, find_execution};
use crate::core::workflows::status::STATUSES;
use crate::db::contacts;
use crate::db::executions::{self, Execution};
use crate::db::workflows;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::workflows::{CancelledAll, Execution as ExecutionView, NewExecution};

documented_routes!(start, list, read, cancel, cancel_all);

/// Executions cancelled per write by cancel-all, so a workflow with a million waiting never
/// holds the writer for long.
const CANCEL_BATCH: usize = 500;

/// The view of an execution read in `conn`.
fn read_view(conn: &crate::db::Tx, ex: &Execution) -> crate::db::Result<ExecutionView> {
    let email = contacts::by_id(conn, &ex.project_id, &ex.contact_id)?.map(|c| c.email);
    Ok(ExecutionView::new(ex, email, &executions::runs(conn, &ex.id)?))
}

/// Starts an execution for a contact, by hand; the workflow must be enabled.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "startExecution",
    params(("id" = String, Path)),
    request_body = NewExecution,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The execution", body = ExecutionView)),
)]
#[post("/workflows/<id>/executions", data = "<body>")]
async fn start(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    body: JsonBody<NewExecution, Small>,
) -> Result<Json<ExecutionView>, ApiError> {
    let id = id?;
    let body = body.0;
    let context = match body.context {
        None | Some(Value::Null) => Default::default(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(ApiError::validation(vec![
                FieldError::new("context", "invalid_type", "context is a JSON object")
                    .received(json!(crate::core::data::type_name(&other))),
            ]));
        }
    };
    let email = match &body.email {
        Some(email) => Some(crate::core::contacts::parse_email(email, "email")?),
        None => None,
    };
    let who = match (body.contact_id, email) {
        (Some(id), _) => ContactNamed::Id(id),
        (None, Some(email)) => ContactNamed::Email(email),
        (None, None) => {
            return Err(ApiError::invalid_field(
                "contactId",
                "required",
                "name the contact by contactId or email",
            ));
        }
    };
    let project = access.project.id;
    let started = state
        .db
        .write(move |tx| {
            let ex = runs::start_by_hand(tx, &project, &id, &who, context, clock::now_ms())?;
            Ok::<_, ApiError>(read_view(tx, &ex)?)
        })
        .await?;
    Ok(Json(started))
}

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
    /// `RUNNING`, `WAITING`, `COMPLETED`, `EXITED`, `FAILED` or `CANCELLED`.
    #[param(value_type = Option<String>)]
    status: Option<&'r str>,
}

/// A workflow's executions, newest first, a page at a time.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "listExecutions",
    params(ListParams, ("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of executions", body = NumberedPage<ExecutionView>)),
)]
#[get("/workflows/<id>/executions?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    params: ListParams<'_>,
) -> Result<Json<NumberedPage<ExecutionView>>, ApiError> {
    let id = id?;
    let (page, page_size) = pagination::page_params(params.page, params.page_size, pagination::MAX_LIMIT)?;
    let status = match params.status.map(|s| s.trim().to_ascii_uppercase()) {
        None => None,
        Some(s) if STATUSES.contains(&s.as_str()) => Some(s),
        Some(s) => {
            return Err(ApiError::bad_request(format!(
                "status is one of {} (found {s:?})",
                STATUSES.join(", ")
            )));
        }
    };
    let project = access.project.id;
    let (rows, total) = state
        .db
        .run(move |conn| {
            let w = find(conn, &project, &id)?;
            let (rows, total) = executions::page(
                conn,
                &w.id,
                status.as_deref(),
                (page_size, pagination::offset(page, page_size)),
            )?;
            let views = rows.iter().map(|ex| read_view(conn, ex)).collect::<crate::db::Result<Vec<_>>>()?;
            Ok::<_, ApiError>((views, total))
        })
        .await?;
    Ok(Json(NumberedPage::new(rows, total, page, page_size)))
}

/// One execution with the steps it ran.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "getExecution",
    params(("execution" = String, Path), ("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The execution", body = ExecutionView)),
)]
#[get("/workflows/<id>/executions/<execution>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    execution: Param<ExecutionId>,
) -> Result<Json<ExecutionView>, ApiError> {
    let (id, execution) = (id?, execution?);
    let project = access.project.id;
    let view = state
        .db
        .run(move |conn| {
            let ex = find_execution(conn, &project, &id, &execution)?;
            Ok::<_, ApiError>(read_view(conn, &ex)?)
        })
        .await?;
    Ok(Json(view))
}

/// Cancels a RUNNING or WAITING execution.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "cancelExecution",
    params(("execution" = String, Path), ("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The cancelled execution", body = ExecutionView)),
)]
#[delete("/workflows/<id>/executions/<execution>")]
async fn cancel(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
    execution: Param<ExecutionId>,
) -> Result<Json<ExecutionView>, ApiError> {
    let (id, execution) = (id?, execution?);
    let project = access.project.id;
    let view = state
        .db
        .write(move |tx| {
            let ex = runs::cancel(tx, &project, &id, &execution, clock::now_ms())?;
            Ok::<_, ApiError>(read_view(tx, &ex)?)
        })
        .await?;
    Ok(Json(view))
}

/// Cancels every execution active when asked, in batches.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "cancelAllExecutions",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "How many were cancelled", body = CancelledAll)),
)]
#[post("/workflows/<id>/executions/cancel-all")]
async fn cancel_all(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WorkflowId>,
) -> Result<Json<CancelledAll>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let (workflow, active) = state
        .db
        .run(move |conn| {
            let w = find(conn, &project, &id)?;
            let active = workflows::active_executions(conn, &w.id)?;
            Ok::<_, ApiError>((w, active as usize))
        })
        .await?;
    // Those active when asked; executions started meanwhile are left to run.
    let mut cancelled = 0;
    while cancelled < active {
        let workflow_id = workflow.id.clone();
        let batch = state
            .db
            .write(move |tx| {
                runs::cancel_some(tx, &workflow_id, CANCEL_BATCH.min(active - cancelled), clock::now_ms())
            })
            .await?;
        cancelled += batch;
        if batch < CANCEL_BATCH {
            break;
        }
    }
    Ok(Json(CancelledAll { workflow_id: workflow.id, cancelled }))
}
