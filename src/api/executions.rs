//! A workflow's executions: `/workflows/:id/executions` (start one by hand, list, read with its
//! step history, cancel one, cancel all). The engine that moves them is
//! `core::workflows::engine`.

use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::workflows::engine;
use crate::db::DbError;
use crate::db::contacts;
use crate::db::executions::{self, Execution, STATUSES};
use crate::db::workflows::{self, Workflow};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::workflows::{CancelledAll, Execution as ExecutionView, NewExecution};

documented_routes!(start, list, read, cancel, cancel_all);

/// Executions cancelled per write by cancel-all, so a workflow with a million waiting never
/// holds the writer for long.
const CANCEL_BATCH: usize = 500;

fn find(conn: &rusqlite::Connection, project: &str, id: &str) -> Result<Workflow, ApiError> {
    workflows::get(conn, project, id)?.ok_or_else(|| ApiError::not_found("Workflow not found"))
}

/// The view of an execution read in `conn`.
fn read_view(conn: &rusqlite::Connection, ex: &Execution) -> crate::db::Result<ExecutionView> {
    let email = contacts::by_id(conn, &ex.project_id, &ex.contact_id)?.map(|c| c.email);
    Ok(ExecutionView::new(ex, email, &executions::runs(conn, &ex.id)?))
}

/// Starts an execution for a contact, by hand; the workflow must be enabled.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "startExecution",
    request_body = NewExecution,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The execution", body = ExecutionView)),
)]
#[post("/workflows/<id>/executions", data = "<body>")]
async fn start(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<NewExecution, Small>,
) -> Result<Json<ExecutionView>, ApiError> {
    let body = body.0;
    let context = match body.context {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(map)) => Value::Object(map),
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
    if body.contact_id.is_none() && email.is_none() {
        return Err(ApiError::invalid_field(
            "contactId",
            "required",
            "name the contact by contactId or email",
        ));
    }
    let (project, id) = (access.project.id, id.to_string());
    let started = state
        .db
        .write(move |tx| {
            let w = find(tx, &project, &id)?;
            if !w.enabled {
                return Err(ApiError::bad_request(
                    "the workflow is disabled: enable it (PATCH enabled: true) to start executions",
                ));
            }
            let contact = match (&body.contact_id, &email) {
                (Some(contact), _) => contacts::by_id(tx, &project, contact)?,
                (None, Some(email)) => contacts::by_email(tx, &project, email)?,
                (None, None) => None,
            };
            let Some(contact) = contact else {
                let (field, given) = match (&body.contact_id, &email) {
                    (Some(c), _) => ("contactId", c.clone()),
                    (None, e) => ("email", e.clone().unwrap_or_default()),
                };
                return Err(ApiError::validation(vec![
                    FieldError::new(field, "not_found", "no contact of this project").received(json!(given)),
                ]));
            };
            if !w.allow_reentry && executions::exists_for(tx, &w.id, &contact.id)? {
                return Err(ApiError::conflict(
                    "the contact already had an execution of this workflow, which does not allow re-entry",
                ));
            }
            let now = clock::now_ms();
            let ex = engine::start(tx, &w, &contact.id, context, json!({ "manual": true }), None, now)?;
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
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of executions", body = NumberedPage<ExecutionView>)),
)]
#[get("/workflows/<id>/executions?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    params: ListParams<'_>,
) -> Result<Json<NumberedPage<ExecutionView>>, ApiError> {
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
    let (project, id) = (access.project.id, id.to_string());
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

fn find_execution(
    conn: &rusqlite::Connection,
    project: &str,
    workflow: &str,
    id: &str,
) -> Result<Execution, ApiError> {
    let w = find(conn, project, workflow)?;
    executions::get(conn, &w.id, id)?.ok_or_else(|| ApiError::not_found("Execution not found"))
}

/// One execution with the steps it ran.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "getExecution",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The execution", body = ExecutionView)),
)]
#[get("/workflows/<id>/executions/<execution>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    execution: &str,
) -> Result<Json<ExecutionView>, ApiError> {
    let (project, id, execution) = (access.project.id, id.to_string(), execution.to_string());
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
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The cancelled execution", body = ExecutionView)),
)]
#[delete("/workflows/<id>/executions/<execution>")]
async fn cancel(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    execution: &str,
) -> Result<Json<ExecutionView>, ApiError> {
    let (project, id, execution) = (access.project.id, id.to_string(), execution.to_string());
    let view = state
        .db
        .write(move |tx| {
            let mut ex = find_execution(tx, &project, &id, &execution)?;
            if !engine::cancel(tx, &mut ex, clock::now_ms())? {
                return Err(ApiError::bad_request(format!(
                    "only a RUNNING or WAITING execution can be cancelled; this one is {}",
                    ex.status
                )));
            }
            Ok::<_, ApiError>(read_view(tx, &ex)?)
        })
        .await?;
    Ok(Json(view))
}

/// Cancels every execution active when asked, in batches.
#[utoipa::path(
    tag = "Workflows",
    operation_id = "cancelAllExecutions",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "How many were cancelled", body = CancelledAll)),
)]
#[post("/workflows/<id>/executions/cancel-all")]
async fn cancel_all(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<CancelledAll>, ApiError> {
    let (project, id) = (access.project.id, id.to_string());
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
                let now = clock::now_ms();
                let mut n = 0;
                for id in executions::active_ids(tx, &workflow_id, CANCEL_BATCH.min(active - cancelled))? {
                    if let Some(mut ex) = executions::by_id(tx, &id)? {
                        n += usize::from(engine::cancel(tx, &mut ex, now)?);
                    }
                }
                Ok::<_, DbError>(n)
            })
            .await?;
        cancelled += batch;
        if batch < CANCEL_BATCH {
            break;
        }
    }
    Ok(Json(CancelledAll { workflow_id: workflow.id, cancelled }))
}
