//! When a project's marketing mail may go (issue 34, item 3): `/sending-settings`, its time zone
//! and quiet hours and days.

use rocket::serde::json::Json;
use rocket::{State, get, patch};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::delivery_windows::{self, Changes};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::sending::{SendingSettings, SendingSettingsChanges};

documented_routes!(settings, update_settings);

/// The project's time zone and quiet hours and days.
#[utoipa::path(
    tag = "Sending",
    operation_id = "getSendingSettings",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The settings", body = SendingSettings)),
)]
#[get("/sending-settings")]
async fn settings(state: &State<AppState>, access: ProjectAccess) -> Result<Json<SendingSettings>, ApiError> {
    let project = access.project.id;
    let settings = state.db.run(move |conn| crate::db::sending::get(conn, &project)).await?;
    Ok(Json((&settings).into()))
}

/// Changes the project's time zone, quiet hours (null ends them) or quiet days. 422 names the
/// field for a zone that is none, a time not `HH:MM`, an unknown day, or a week all quiet.
#[utoipa::path(
    tag = "Sending",
    operation_id = "updateSendingSettings",
    request_body = SendingSettingsChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The settings", body = SendingSettings)),
)]
#[patch("/sending-settings", data = "<body>")]
async fn update_settings(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<SendingSettingsChanges, Small>,
) -> Result<Json<SendingSettings>, ApiError> {
    let (project, body) = (access.project.id, body.0);
    let changes = Changes {
        timezone: body.timezone,
        quiet_hours: body.quiet_hours.map(|h| h.map(|h| (h.start, h.end))),
        quiet_days: body.quiet_days,
    };
    let settings =
        state.db.write(move |tx| delivery_windows::update(tx, &project, changes, clock::now_ms())).await?;
    Ok(Json((&settings).into()))
}
