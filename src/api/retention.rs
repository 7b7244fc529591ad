//! How long a project keeps its data (issue 35, item 1): `/retention`.

use rocket::serde::json::Json;
use rocket::{State, get, patch};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::retention::{self, Changes, Policy};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::retention::{Retention, RetentionChanges};

documented_routes!(retention_periods, update_retention);

/// The project's retention periods: those in force, the server's defaults, and which the
/// project set itself.
#[utoipa::path(
    tag = "Data",
    operation_id = "getRetention",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The periods", body = Retention)),
)]
#[get("/retention")]
async fn retention_periods(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<Retention>, ApiError> {
    let project = access.project.id;
    let own = state.db.run(move |conn| crate::db::retention::get(conn, &project)).await?;
    Ok(Json(Retention::of(Policy::defaults(&state.config), &own)))
}

/// Sets the project's periods, in days (1 to 36,500), or `null` for the server's default. What
/// is past a shorter period goes at the next pruning. 422 names a period out of range, and
/// nothing changes then.
#[utoipa::path(
    tag = "Data",
    operation_id = "updateRetention",
    request_body = RetentionChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The periods", body = Retention)),
)]
#[patch("/retention", data = "<body>")]
async fn update_retention(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<RetentionChanges, Small>,
) -> Result<Json<Retention>, ApiError> {
    let (project, body) = (access.project.id, body.0);
    let changes = Changes {
        email_content_days: body.email_content_days,
        events_days: body.events_days,
        inbound_days: body.inbound_days,
        webhook_deliveries_days: body.webhook_deliveries_days,
    };
    let own = state.db.write(move |tx| retention::update(tx, &project, changes, clock::now_ms())).await?;
    Ok(Json(Retention::of(Policy::defaults(&state.config), &own)))
}
