//! A campaign's A/B test (issue 34, item 1): `/campaigns/:id/ab-test` sets, reads and removes
//! it; `/campaigns/:id/ab-test/winner` picks the winner by hand.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, post, put};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Message, Small};
use crate::clock;
use crate::core::ab_tests;
use crate::core::campaign_state;
use crate::core::ids::CampaignId;
use crate::db::ab_tests as rows;
use crate::db::campaigns::Campaign;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::ab_tests::{AbTestBody, AbTestView, WinnerBody};

documented_routes!(read, set, remove, pick);

/// Campaign `id` of the project and its test's view (404 without a test).
async fn view_of(state: &AppState, project: String, id: CampaignId) -> Result<AbTestView, ApiError> {
    let (c, variants) = state
        .db
        .run(move |conn| {
            let c = campaign_state::find(conn, &project, &id)?;
            let variants = rows::variants(conn, &c.id)?;
            Ok::<_, crate::core::Error>((c, variants))
        })
        .await?;
    AbTestView::of(&c, &variants).ok_or_else(none)
}

fn none() -> ApiError {
    crate::core::Error::NotFound("This campaign has no A/B test".into()).into()
}

/// The campaign's A/B test: its settings, where it stands, and each variant's results.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "getAbTest",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The test", body = AbTestView), (status = 404, description = "No test")),
)]
#[get("/campaigns/<id>/ab-test")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<AbTestView>, ApiError> {
    Ok(Json(view_of(state, access.project.id, id?).await?))
}

/// Gives a DRAFT or SCHEDULED campaign an A/B test, in place of any it had: 2 to 5 variants
/// tried on `testShare` percent of the audience, and after `waitHours` the best by `metric`
/// (or the one picked by hand) sent to the rest.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "setAbTest",
    params(("id" = String, Path)),
    request_body = AbTestBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The test", body = AbTestView)),
)]
#[put("/campaigns/<id>/ab-test", data = "<body>")]
async fn set(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: JsonBody<AbTestBody, Message>,
) -> Result<Json<AbTestView>, ApiError> {
    let id = id?;
    let input = body.0.into();
    let checked = crate::core::blocking::blocking(move || ab_tests::check(input)).await??;
    let project = access.project.id;
    let (p, i) = (project.clone(), id.clone());
    state
        .db
        .write(move |tx| {
            let c = campaign_state::find(tx, &p, &i)?;
            ab_tests::save(tx, &c, checked, clock::now_ms())
        })
        .await?;
    Ok(Json(view_of(state, project, id).await?))
}

/// Takes the A/B test off a DRAFT or SCHEDULED campaign.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "deleteAbTest",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed"), (status = 404, description = "No test")),
)]
#[delete("/campaigns/<id>/ab-test")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state
        .db
        .write(move |tx| {
            let c = campaign_state::find(tx, &project, &id)?;
            ab_tests::remove(tx, &c, clock::now_ms())
        })
        .await?;
    Ok(Status::NoContent)
}

/// Picks the winner by hand (`{"variant": 1}` for B), once the test share has been queued and
/// before a winner is known: the rest of the audience gets it now.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "pickAbTestWinner",
    params(("id" = String, Path)),
    request_body = WinnerBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The test, decided", body = AbTestView)),
)]
#[post("/campaigns/<id>/ab-test/winner", data = "<body>")]
async fn pick(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: JsonBody<WinnerBody, Small>,
) -> Result<Json<AbTestView>, ApiError> {
    let id = id?;
    let variant = body
        .0
        .variant
        .ok_or_else(|| ApiError::invalid_field("variant", "required", "variant is required"))?;
    let project = access.project.id;
    let (p, i) = (project.clone(), id.clone());
    state
        .db
        .write(move |tx| {
            let c: Campaign = campaign_state::find(tx, &p, &i)?;
            ab_tests::pick(tx, &c, variant, clock::now_ms())
        })
        .await?;
    Ok(Json(view_of(state, project, id).await?))
}
