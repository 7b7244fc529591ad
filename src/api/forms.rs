//! Signup forms (issue 32, item 4): `/forms`. Their public pages and submissions are
//! `api::form_pages`; what they mean is `core::forms` and `core::form_submissions`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::forms;
use crate::core::ids::FormId;
use crate::db::forms as rows;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::forms::{Form, FormFields};

documented_routes!(list, read, create, update, remove);

/// The project's forms, oldest first.
#[utoipa::path(
    tag = "Forms",
    operation_id = "listForms",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The forms", body = Vec<Form>)),
)]
#[get("/forms")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<Form>>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| rows::list(conn, &project)).await?;
    let url = state.config.public_url();
    Ok(Json(all.iter().map(|f| Form::new(f, &url)).collect()))
}

/// One form.
#[utoipa::path(
    tag = "Forms",
    operation_id = "getForm",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The form", body = Form)),
)]
#[get("/forms/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<FormId>,
) -> Result<Json<Form>, ApiError> {
    let (id, project) = (id?, access.project.id);
    let form = state.db.run(move |conn| forms::find(conn, &project, &id)).await?;
    Ok(Json(Form::new(&form, &state.config.public_url())))
}

/// Adds a form (at most 50 a project).
#[utoipa::path(
    tag = "Forms",
    operation_id = "createForm",
    request_body = FormFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The form", body = Form)),
)]
#[post("/forms", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<FormFields, Small>,
) -> Result<Json<Form>, ApiError> {
    let (project, settings) = (access.project.id, body.0.into());
    let form = state.db.write(move |tx| forms::create(tx, &project, settings, clock::now_ms())).await?;
    Ok(Json(Form::new(&form, &state.config.public_url())))
}

/// Changes a form.
#[utoipa::path(
    tag = "Forms",
    operation_id = "updateForm",
    params(("id" = String, Path)),
    request_body = FormFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The form as changed", body = Form)),
)]
#[patch("/forms/<id>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<FormId>,
    body: JsonBody<FormFields, Small>,
) -> Result<Json<Form>, ApiError> {
    let (id, project, settings) = (id?, access.project.id, body.0.into());
    let form = state.db.write(move |tx| forms::update(tx, &project, &id, settings, clock::now_ms())).await?;
    Ok(Json(Form::new(&form, &state.config.public_url())))
}

/// Deletes a form; the contacts it made stay.
#[utoipa::path(
    tag = "Forms",
    operation_id = "deleteForm",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/forms/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<FormId>,
) -> Result<Status, ApiError> {
    let (id, project) = (id?, access.project.id);
    state.db.write(move |tx| forms::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
