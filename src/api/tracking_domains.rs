//! A project's custom tracking domain (issue 34, item 6): `/tracking-domain` sets, reads,
//! verifies and removes the host its tracked links and open pixel use.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, post, put};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::Error;
use crate::core::tracking_domains::{self as core_tracking, host_of};
use crate::db::tracking_domains as rows;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::tracking_domains::{TrackingDomainBody, TrackingDomainView};

documented_routes!(read, set, verify, remove);

fn host(state: &AppState) -> String {
    host_of(&state.config.public_url())
}

fn none() -> ApiError {
    Error::NotFound("This project has no tracking domain".into()).into()
}

/// The project's tracking domain, the records to publish, and whether they were found.
#[utoipa::path(
    tag = "Domains",
    operation_id = "getTrackingDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The tracking domain", body = TrackingDomainView), (status = 404, description = "None set")),
)]
#[get("/tracking-domain")]
async fn read(state: &State<AppState>, access: ProjectAccess) -> Result<Json<TrackingDomainView>, ApiError> {
    let project = access.project.id;
    let found = state.db.run(move |conn| rows::get(conn, &project)).await?.ok_or_else(none)?;
    Ok(Json(TrackingDomainView::of(&found, &host(state))))
}

/// Sets the project's tracking domain (a host such as `track.example.com`), unverified with a
/// new token, in place of the one it had. 409 when another project uses it.
#[utoipa::path(
    tag = "Domains",
    operation_id = "setTrackingDomain",
    request_body = TrackingDomainBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The tracking domain, to publish and verify", body = TrackingDomainView)),
)]
#[put("/tracking-domain", data = "<body>")]
async fn set(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<TrackingDomainBody, Small>,
) -> Result<Json<TrackingDomainView>, ApiError> {
    let (project, name) = (access.project.id, body.0.domain);
    let made = state.db.write(move |tx| core_tracking::set(tx, &project, &name, clock::now_ms())).await?;
    Ok(Json(TrackingDomainView::of(&made, &host(state))))
}

/// Looks the records up now; the domain is verified when both are found, and mail uses it
/// from then on (and stops when a later check misses them).
#[utoipa::path(
    tag = "Domains",
    operation_id = "verifyTrackingDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The tracking domain after the check", body = TrackingDomainView), (status = 404, description = "None set")),
)]
#[post("/tracking-domain/verify")]
async fn verify(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<TrackingDomainView>, ApiError> {
    let project = access.project.id;
    let found = {
        let project = project.clone();
        state.db.run(move |conn| rows::get(conn, &project)).await?.ok_or_else(none)?
    };
    let host = host(state);
    let error = core_tracking::check(&state.dns, &found, &host).await;
    let domain = found.domain.clone();
    let after = state
        .db
        .write(move |tx| {
            rows::checked(tx, &project, &domain, error.as_deref(), clock::now_ms())?;
            rows::get(tx, &project)
        })
        .await?
        .ok_or_else(none)?;
    Ok(Json(TrackingDomainView::of(&after, &host)))
}

/// Removes the tracking domain: mail goes back to the server's URL. Links already mailed on it
/// still work while it points here.
#[utoipa::path(
    tag = "Domains",
    operation_id = "removeTrackingDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed"), (status = 404, description = "None set")),
)]
#[delete("/tracking-domain")]
async fn remove(state: &State<AppState>, access: ProjectAccess) -> Result<Status, ApiError> {
    let project = access.project.id;
    if !state.db.write(move |tx| rows::delete(tx, &project)).await? {
        return Err(none());
    }
    Ok(Status::NoContent)
}
