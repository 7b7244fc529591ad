//! A workflow's executions: `/workflows/:id/executions` (start one by hand, list, read with its
//! step history, cancel one, cancel all). The engine that moves them is
//! `core::workflows::engine`.

use rocket::serde::json::Json;
use rocket::{FromForm, Route, State, delete, get, post, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::workflows::engine;
use crate::db::DbError;
use crate::db::contacts;
use crate::db::executions::{self, Execution, STATUSES, StepRun};
use crate::db::workflows::{self, Workflow};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![start, list, read, cancel, cancel_all]
}

/// Executions cancelled per write by cancel-all, so a workflow with a million waiting never
/// holds the writer for long.
const CANCEL_BATCH: usize = 500;

fn find(conn: &rusqlite::Connection, project: &str, id: &str) -> Result<Workflow, ApiError> {
    workflows::get(conn, project, id)?.ok_or_else(|| ApiError::not_found("Workflow not found"))
}

/// An execution as the API shows it, with the steps it ran.
fn view(ex: &Execution, email: Option<String>, runs: &[StepRun]) -> Value {
    let json_of = |text: &Option<String>| text.as_deref().and_then(|t| serde_json::from_str::<Value>(t).ok());
    json!({
        "id": ex.id,
        "workflowId": ex.workflow_id,
        "contactId": ex.contact_id,
        "contactEmail": email,
        "status": ex.status,
        "currentStepId": ex.current_step_id,
        "context": serde_json::from_str::<Value>(&ex.context).unwrap_or_else(|_| json!({})),
        "exitReason": ex.exit_reason,
        "waitingFor": ex.wait_event,
        "dueAt": ex.due_at.filter(|_| ex.status == "WAITING").map(clock::iso),
        "startedAt": clock::iso(ex.started_at),
        "completedAt": ex.completed_at.map(clock::iso),
        "steps": runs.iter().map(|r| json!({
            "stepId": r.step_id,
            "status": r.status,
            "output": json_of(&r.output),
            "error": r.error,
            "startedAt": clock::iso(r.started_at),
            "completedAt": r.completed_at.map(clock::iso),
        })).collect::<Vec<_>>(),
    })
}

/// The view of an execution read in `conn`.
fn read_view(conn: &rusqlite::Connection, ex: &Execution) -> rusqlite::Result<Value> {
    let email = contacts::by_id(conn, &ex.project_id, &ex.contact_id)?.map(|c| c.email);
    Ok(view(ex, email, &executions::runs(conn, &ex.id)?))
}

/// The body of `POST /workflows/:id/executions`: the contact by id or by email, and the
/// execution's context.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NewExecution {
    contact_id: Option<String>,
    email: Option<String>,
    context: Option<Value>,
}

#[post("/workflows/<id>/executions", data = "<body>")]
async fn start(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<NewExecution, Small>,
) -> Result<Json<Value>, ApiError> {
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
            let ex = engine::start(tx, &w, &contact.id, context, json!({ "manual": true }), now)?;
            Ok::<_, ApiError>(read_view(tx, &ex)?)
        })
        .await?;
    Ok(Json(started))
}

#[derive(FromForm)]
struct ListParams<'r> {
    page: Option<&'r str>,
    #[field(name = "pageSize")]
    page_size: Option<&'r str>,
    status: Option<&'r str>,
}

#[get("/workflows/<id>/executions?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    params: ListParams<'_>,
) -> Result<Json<Value>, ApiError> {
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
            let views = rows.iter().map(|ex| read_view(conn, ex)).collect::<rusqlite::Result<Vec<_>>>()?;
            Ok::<_, ApiError>((views, total))
        })
        .await?;
    Ok(Json(json!(crate::views::NumberedPage::new(rows, total, page, page_size))))
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

#[get("/workflows/<id>/executions/<execution>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    execution: &str,
) -> Result<Json<Value>, ApiError> {
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

#[delete("/workflows/<id>/executions/<execution>")]
async fn cancel(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    execution: &str,
) -> Result<Json<Value>, ApiError> {
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

#[post("/workflows/<id>/executions/cancel-all")]
async fn cancel_all(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<Value>, ApiError> {
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
    Ok(Json(json!({ "workflowId": workflow.id, "cancelled": cancelled })))
}
