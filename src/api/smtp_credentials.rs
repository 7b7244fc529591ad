//! SMTP submission credentials (issue 31): `/smtp-credentials`. The password signing in with a
//! credential is answered once, when it is made. The listener is `listeners::smtp::submission`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::ids::SmtpCredentialId;
use crate::core::smtp_credentials::{self as credentials, Settings};
use crate::db::smtp_credentials as rows;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::smtp::{NewSmtpCredential, SmtpCredential};

documented_routes!(list, create, remove);

/// The project's SMTP credentials, newest first (never their passwords).
#[utoipa::path(
    tag = "SMTP",
    operation_id = "listSmtpCredentials",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The credentials", body = Vec<SmtpCredential>)),
)]
#[get("/smtp-credentials")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<SmtpCredential>>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| rows::list(conn, &project)).await?;
    Ok(Json(all.iter().map(SmtpCredential::from).collect()))
}

/// Makes a credential (at most 50 a project); the answer shows its password, once.
#[utoipa::path(
    tag = "SMTP",
    operation_id = "createSmtpCredential",
    request_body = NewSmtpCredential,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The credential, with its password", body = SmtpCredential)),
)]
#[post("/smtp-credentials", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewSmtpCredential, Small>,
) -> Result<Json<SmtpCredential>, ApiError> {
    let body = body.0;
    let settings =
        Settings::check(body.name.as_deref(), body.allowed_from_domains.as_ref(), body.track.as_ref())?;
    let project = access.project.id;
    let (credential, password) =
        state.db.write(move |tx| credentials::create(tx, &project, settings, clock::now_ms())).await?;
    // The only time the password is shown.
    Ok(Json(SmtpCredential { password: Some(password), ..SmtpCredential::from(&credential) }))
}

/// Deletes a credential: signing in with it fails from then on.
#[utoipa::path(
    tag = "SMTP",
    operation_id = "deleteSmtpCredential",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/smtp-credentials/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SmtpCredentialId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| credentials::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
