//! A data subject's requests (issue 35, item 6): `GET /contacts/:id/export` and
//! `POST /contacts/:id/erase`, `GET /erasures/:id`.

use std::time::{Duration, Instant};

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, get, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use crate::clock;
use crate::core::erasure;
use crate::core::ids::{ContactId, ErasureId};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::erasure::{ContactExport, ErasureView};

documented_routes!(export_contact, erase_contact, erasure_state);

/// How long the request erases before it leaves the rest to the job.
const IN_REQUEST: Duration = Duration::from_secs(2);

/// Everything the project holds about the contact, as one JSON document: the contact, its
/// consent records, events, emails (with their content while the project keeps it) and the
/// mail it sent. 413 past 100,000 events, emails or received messages.
#[utoipa::path(
    tag = "Data",
    operation_id = "exportContact",
    params(("id" = String, Path, description = "The contact's id")),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The contact's data", body = ContactExport)),
)]
#[get("/contacts/<id>/export", rank = 2)]
async fn export_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
) -> Result<Json<ContactExport>, ApiError> {
    let (id, project) = (id?, access.project.id);
    let export = state.db.run(move |conn| erasure::export(conn, &project, &id)).await?;
    Ok(Json(ContactExport::of(&export, clock::now_ms())))
}

/// Erases the contact at the person's request: the contact, its events, consent records and
/// received mail go, its emails stay counted without naming it, and its address is kept only
/// as a digest on the suppression list, so no mail goes to it and imports skip it until the
/// entry is lifted. 200 when done; 202 while a job finishes a large one. Asking again while it
/// runs gives the same erasure.
#[utoipa::path(
    tag = "Data",
    operation_id = "eraseContact",
    params(("id" = String, Path, description = "The contact's id")),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses(
        (status = 200, description = "Erased", body = ErasureView),
        (status = 202, description = "Erasing; `GET /erasures/:id` tells when it is done", body = ErasureView),
    ),
)]
#[post("/contacts/<id>/erase", rank = 2)]
async fn erase_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
) -> Result<(Status, Json<ErasureView>), ApiError> {
    let (id, project) = (id?, access.project.id);
    let started = {
        let project = project.clone();
        state.db.write(move |tx| erasure::start(tx, &project, &id, clock::now_ms())).await?
    };
    let until = Some(Instant::now() + IN_REQUEST);
    let done = crate::scheduler::erasure::erase(state, &project, &started.id, until).await?;
    let erasure_id = started.id.clone();
    let now = state.db.run(move |conn| crate::db::erasure::get(conn, &project, &erasure_id)).await?;
    let view = ErasureView::from(now.as_ref().unwrap_or(&started));
    Ok((if done { Status::Ok } else { Status::Accepted }, Json(view)))
}

/// An erasure's state.
#[utoipa::path(
    tag = "Data",
    operation_id = "getErasure",
    params(("id" = String, Path, description = "The erasure's id")),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The erasure", body = ErasureView)),
)]
#[get("/erasures/<id>")]
async fn erasure_state(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ErasureId>,
) -> Result<Json<ErasureView>, ApiError> {
    let (id, project) = (id?, access.project.id);
    let found = state.db.run(move |conn| crate::db::erasure::get(conn, &project, &id)).await?;
    let found = found.ok_or_else(|| ApiError::from(ErasureId::missing("")))?;
    Ok(Json((&found).into()))
}
