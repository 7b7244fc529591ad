//! A sender domain's warm-up plan (issue 34, item 4): `/domains/:id/warmup` sets, reads and
//! ends it.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, put};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::ids::DomainId;
use crate::core::warmups;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::warmups::{WarmupBody, WarmupView};

documented_routes!(read, set, remove);

/// The domain's warm-up plan: today's volume, what was sent, and each day of the plan.
#[utoipa::path(
    tag = "Domains",
    operation_id = "getWarmup",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The plan", body = WarmupView), (status = 404, description = "No plan")),
)]
#[get("/domains/<id>/warmup", rank = 2)]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<DomainId>,
) -> Result<Json<WarmupView>, ApiError> {
    let (id, project) = (id?, access.project.id);
    let status = state.db.run(move |conn| warmups::status(conn, &project, &id, clock::now_ms())).await?;
    Ok(Json(status.into()))
}

/// Gives the domain a warm-up plan, in place of the one it had: from `startDaily` messages on
/// its first day to `targetDaily` on its last, growing by the same factor each day. Once a
/// day's volume is sent, the domain's marketing mail waits for the next day (transactional mail
/// goes, and counts).
#[utoipa::path(
    tag = "Domains",
    operation_id = "setWarmup",
    params(("id" = String, Path)),
    request_body = WarmupBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The plan", body = WarmupView)),
)]
#[put("/domains/<id>/warmup", data = "<body>")]
async fn set(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<DomainId>,
    body: JsonBody<WarmupBody, Small>,
) -> Result<Json<WarmupView>, ApiError> {
    let (id, project, input) = (id?, access.project.id, body.0.into());
    let status = state.db.write(move |tx| warmups::set(tx, &project, &id, input, clock::now_ms())).await?;
    Ok(Json(status.into()))
}

/// Ends the domain's warm-up: its mail goes at any volume again.
#[utoipa::path(
    tag = "Domains",
    operation_id = "deleteWarmup",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Ended"), (status = 404, description = "No plan")),
)]
#[delete("/domains/<id>/warmup")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<DomainId>,
) -> Result<Status, ApiError> {
    let (id, project) = (id?, access.project.id);
    state.db.write(move |tx| warmups::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
