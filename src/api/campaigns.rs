//! Campaigns: `/campaigns` and its actions (send or schedule, cancel, test, duplicate, stats).
//!
//! `POST /campaigns` and `POST /campaigns/:id/send` answer in the wrapped form `{success, data}`
//! (api.md); the rest answer the resource itself.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, post, put};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Medium, Message, OptionalJsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::campaign_state;
use crate::core::campaigns::{self as core_campaigns, Fields};
use crate::core::contacts::parse_email;
use crate::core::follow_ups;
use crate::core::ids::CampaignId;
use crate::core::segments::count_condition;
use crate::db::campaigns::{self, Campaign};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::campaigns::{
    AudienceBody, Campaign as CampaignView, CampaignChanges, CampaignFields, CampaignStats, Count,
    FollowUpBody, SendAnswer, SendCampaign, SentCampaign, TestBody, TestSent,
};
use crate::views::{NumberedPage, Success};

documented_routes!(
    list, create, count, read, replace, remove, duplicate, follow_up, send, cancel, test, stats
);

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
    /// `DRAFT`, `SCHEDULED`, `SENDING`, `SENT` or `CANCELLED` (400 otherwise).
    #[param(value_type = Option<String>)]
    status: Option<&'r str>,
    /// Part of the name, subject or sender, any case.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
    /// `name`, `createdAt` (the default) or `updatedAt`.
    #[param(value_type = Option<String>)]
    sort: Option<&'r str>,
    /// `desc` (the default) or `asc`.
    #[param(value_type = Option<String>)]
    dir: Option<&'r str>,
}

/// The project's campaigns, a page at a time.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "listCampaigns",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of campaigns", body = NumberedPage<CampaignView>)),
)]
#[get("/campaigns?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<NumberedPage<CampaignView>>, ApiError> {
    let status = match params.status.filter(|s| !s.is_empty()) {
        None => None,
        Some(s) if campaign_state::STATUSES.contains(&s) => Some(("status", s.to_string())),
        Some(s) => {
            return Err(ApiError::bad_request(format!(
                "status must be one of {} (found {s:?})",
                campaign_state::STATUSES.join(", ")
            )));
        }
    };
    let (query, page, page_size) = pagination::list_query(
        access.project.id,
        (params.page, params.page_size),
        params.search,
        (params.sort, params.dir),
        status,
    )?;
    let (rows, total) = state.db.run(move |conn| campaigns::page(conn, &query)).await?;
    Ok(Json(NumberedPage::new(rows.iter().map(CampaignView::from).collect(), total, page, page_size)))
}

/// Checks `fields` into `campaign` (templates parsed off the executor), then saves it as a new
/// draft or as the new content of an editable one, with its sender, segment and condition
/// checked in the write.
async fn checked_save(
    state: &AppState,
    mut campaign: Campaign,
    fields: Fields,
    insert: bool,
) -> Result<Campaign, ApiError> {
    let (campaign, condition) = crate::core::blocking::blocking(move || {
        core_campaigns::check_content(&mut campaign, fields).map(|condition| (campaign, condition))
    })
    .await??;
    let saved = campaign.clone();
    state
        .db
        .write(move |tx| match insert {
            true => campaign_state::create(tx, &saved, condition),
            false => campaign_state::edit(tx, &saved, condition),
        })
        .await?;
    Ok(campaign)
}

/// Makes a DRAFT campaign.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "createCampaign",
    request_body = CampaignFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The draft", body = Success<CampaignView>)),
)]
#[post("/campaigns", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<CampaignFields, Message>,
) -> Result<Json<Success<CampaignView>>, ApiError> {
    let campaign = campaign_state::draft(&access.project.id, clock::now_ms());
    let saved = checked_save(state, campaign, body.0.into(), true).await?;
    Ok(Json(Success::new(CampaignView::from(&saved))))
}

/// How many contacts a campaign with this audience and type would go to now, counted as the
/// sender expands it (MARKETING: subscribed contacts only). Nothing is saved.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "countAudience",
    request_body = AudienceBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The count", body = Count)),
)]
#[post("/campaigns/count", data = "<body>")]
async fn count(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<AudienceBody, Medium>,
) -> Result<Json<Count>, ApiError> {
    let body = body.0;
    let draft = Campaign {
        project_id: access.project.id,
        kind: core_campaigns::check_type(body.kind.as_deref())?,
        audience_type: body.audience_type.unwrap_or_else(|| "ALL".into()),
        segment_id: body.segment_id,
        audience_condition: body.audience_condition.filter(|c| !c.is_null()).map(|c| c.to_string()),
        topic_id: body.topic_id.filter(|t| !t.trim().is_empty()),
        ..Campaign::default()
    };
    let project = draft.project_id.clone();
    let audience = state.db.run(move |conn| core_campaigns::audience(conn, &draft)).await?;
    let count = count_condition(&state.db, &project, audience).await?;
    Ok(Json(Count { count }))
}

async fn find(state: &AppState, project: String, id: CampaignId) -> Result<Campaign, ApiError> {
    Ok(state.db.run(move |conn| campaign_state::find(conn, &project, &id)).await?)
}

/// Reads a campaign.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "getCampaign",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The campaign", body = CampaignView)),
)]
#[get("/campaigns/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = id?;
    Ok(Json(CampaignView::from(&find(state, access.project.id, id).await?)))
}

/// Changes a DRAFT or SCHEDULED campaign's content and audience: the fields given (a field left
/// out keeps its value), and the whole is checked as on create. A body of only `public` and
/// `archiveData` is taken in any state (publishing a campaign that went out).
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "replaceCampaign",
    params(("id" = String, Path)),
    request_body = CampaignChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The campaign as replaced", body = CampaignView)),
)]
#[put("/campaigns/<id>", data = "<body>")]
async fn replace(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: JsonBody<CampaignChanges, Message>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = id?;
    let mut campaign = find(state, access.project.id, id).await?;
    let changes: core_campaigns::Changes = body.0.into();
    if changes.only_publication() {
        // A place in the archive may change in any state: it changes nothing that is sent.
        let (public, data) = changes.publication(&campaign)?;
        let saved = state
            .db
            .write(move |tx| campaign_state::publish(tx, &campaign, public, data, clock::now_ms()))
            .await?;
        return Ok(Json(CampaignView::from(&saved)));
    }
    campaign_state::require_editable(&campaign)?;
    campaign.updated_at = clock::now_ms();
    let fields = core_campaigns::merge(&campaign, changes);
    let saved = checked_save(state, campaign, fields, false).await?;
    let (project, id) = (saved.project_id.clone(), saved.id.clone());
    let current = state.db.run(move |conn| campaigns::get(conn, &project, &id)).await?;
    Ok(Json(CampaignView::from(&current.unwrap_or(saved))))
}

/// Deletes a campaign that is not sending.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "deleteCampaign",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/campaigns/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| campaign_state::delete(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// Copies a campaign into a new DRAFT.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "duplicateCampaign",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The copy", body = CampaignView)),
)]
#[post("/campaigns/<id>/duplicate")]
async fn duplicate(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = id?;
    let original = find(state, access.project.id, id).await?;
    let copy = state.db.write(move |tx| campaign_state::duplicate(tx, &original, clock::now_ms())).await?;
    Ok(Json(CampaignView::from(&copy)))
}

/// Follows a sent campaign up: a new campaign with its content (and a new subject if given) to
/// the recipients no person opened it for (or who did not click), as a DRAFT, or scheduled
/// `delayHours` after the original's send. 400 for a campaign not sent, or when a scheduled
/// follow-up would reach nobody (nothing is saved then).
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "followUpCampaign",
    params(("id" = String, Path)),
    request_body = Option<FollowUpBody>,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The follow-up campaign", body = CampaignView)),
)]
#[post("/campaigns/<id>/follow-up", data = "<body>")]
async fn follow_up(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: OptionalJsonBody<FollowUpBody, Small>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = id?;
    let body = body.0;
    let asked = follow_ups::FollowUp {
        missed: follow_ups::Missed::parse(body.as_ref().and_then(|b| b.audience.as_deref()))?,
        name: body.as_ref().and_then(|b| b.name.clone()),
        subject: body.as_ref().and_then(|b| b.subject.clone()),
        delay_hours: body.as_ref().and_then(|b| b.delay_hours),
    };
    let original = find(state, access.project.id, id).await?;
    let (copy, at) = follow_ups::plan(&original, &asked, clock::now_ms())?;
    let scheduled = match at {
        None => None,
        Some(at) => {
            let checked = copy.clone();
            let audience = state.db.run(move |conn| campaign_state::send_audience(conn, &checked)).await?;
            Some((at, count_condition(&state.db, &copy.project_id, audience).await?))
        }
    };
    let made = state.db.write(move |tx| follow_ups::create(tx, &copy, scheduled, clock::now_ms())).await?;
    Ok(Json(CampaignView::from(&made)))
}

/// Sends now (SENDING) or at `scheduledFor` (SCHEDULED). 400 for a campaign that is not DRAFT or
/// SCHEDULED, an unparseable time, or an audience with nobody in it; 403 when the sender domain
/// is no longer verified.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "sendCampaign",
    params(("id" = String, Path)),
    request_body = Option<SendCampaign>,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Sending or scheduled", body = SendAnswer)),
)]
#[post("/campaigns/<id>/send", data = "<body>")]
async fn send(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: OptionalJsonBody<SendCampaign, Small>,
) -> Result<Json<SendAnswer>, ApiError> {
    let id = id?;
    let (scheduled_for, local_time) = body.0.map(|b| (b.scheduled_for, b.local_time)).unwrap_or_default();
    let (at, local_time) =
        core_campaigns::parse_when(scheduled_for.as_ref(), local_time.as_deref(), clock::now_ms())?;
    let campaign = find(state, access.project.id, id).await?;
    let checked = campaign.clone();
    let audience = state.db.run(move |conn| campaign_state::send_audience(conn, &checked)).await?;
    let recipients = count_condition(&state.db, &campaign.project_id, audience).await?;
    let sent = state
        .db
        .write(move |tx| {
            campaign_state::send(tx, &campaign.id, recipients, at, local_time.as_deref(), clock::now_ms())
        })
        .await?;
    let message = match (sent.scheduled_for, &sent.local_time) {
        (Some(at), Some(local)) => {
            format!("Campaign scheduled for {local} in each contact's time zone, from {}", clock::iso(at))
        }
        (Some(at), None) => format!("Campaign scheduled for {}", clock::iso(at)),
        (None, _) => format!("Campaign is sending to {recipients} contacts"),
    };
    Ok(Json(SendAnswer {
        success: true,
        data: SentCampaign {
            id: sent.id,
            name: sent.name,
            status: sent.status,
            scheduled_for: sent.scheduled_for.map(clock::iso),
        },
        message,
    }))
}

/// Cancels a SCHEDULED or SENDING campaign: mail not yet handed to the relay is not sent.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "cancelCampaign",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The campaign, CANCELLED", body = CampaignView)),
)]
#[post("/campaigns/<id>/cancel")]
async fn cancel(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<CampaignView>, ApiError> {
    let id = id?;
    let campaign = find(state, access.project.id, id).await?;
    let cancelled = state.db.write(move |tx| campaign_state::cancel(tx, &campaign, clock::now_ms())).await?;
    Ok(Json(CampaignView::from(&cancelled)))
}

/// Sends the campaign once to one address, marked as a test (`[Test]` before the subject),
/// rendered as `contactId` (else as the contact with that address, if any); it counts toward
/// nothing and ignores the subscription of a contact with that address.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "testCampaign",
    params(("id" = String, Path)),
    request_body = TestBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The test email, queued", body = TestSent)),
)]
#[post("/campaigns/<id>/test", data = "<body>")]
async fn test(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    body: JsonBody<TestBody, Small>,
) -> Result<Json<TestSent>, ApiError> {
    let id = id?;
    let (to, contact_id) = test_target(body.0)?;
    let campaign = find(state, access.project.id, id).await?;
    let queued = state
        .db
        .write(move |tx| {
            campaign_state::send_test(tx, &campaign, &to, contact_id.as_deref(), clock::now_ms())
        })
        .await?;
    Ok(Json(TestSent::from(queued)))
}

/// The address a test goes to (422 when it is missing or no address) and the contact it is
/// rendered as, from a test's body (campaigns' and templates').
pub(super) fn test_target(body: TestBody) -> Result<(String, Option<String>), ApiError> {
    let TestBody { email, contact_id } = body;
    let to = email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    Ok((parse_email(&to, "email")?, contact_id))
}

/// The campaign's counters and rates.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "campaignStats",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The figures", body = CampaignStats)),
)]
#[get("/campaigns/<id>/stats")]
async fn stats(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<CampaignStats>, ApiError> {
    let id = id?;
    let c = find(state, access.project.id, id).await?;
    let mut stats = CampaignStats::from(&c);
    if c.ab.is_some() {
        let campaign = c.id.clone();
        let variants = state.db.run(move |conn| crate::db::ab_tests::variants(conn, &campaign)).await?;
        stats.ab_test = crate::views::ab_tests::AbTestView::of(&c, &variants);
    }
    Ok(Json(stats))
}
