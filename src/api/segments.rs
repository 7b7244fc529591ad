//! Segments: list, create, read, change, delete, their contacts, static members, membership
//! computation (tracked segments) and count refresh.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Medium};
use super::pagination;
use crate::clock;
use crate::core::ids::SegmentId;
use crate::core::segments::{self as core_segments, NewSegment, SegmentChanges, Step};
use crate::db::segments::{self, Segment};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::campaigns::Count;
use crate::views::contacts::Contact;
use crate::views::segments::{
    AddMembers, ChangeSegment, CountBody, CreateSegment, MembersAdded, MembersRemoved, RemoveMembers,
    Segment as SegmentView,
};

documented_routes!(
    list,
    create,
    count,
    read,
    change,
    remove,
    members,
    add_members,
    remove_members,
    compute,
    refresh
);

/// A segment of the project, or 404.
async fn find(state: &AppState, project: String, id: SegmentId) -> Result<Segment, ApiError> {
    Ok(state.db.run(move |conn| core_segments::find(conn, &project, &id)).await?)
}

/// All segments, newest first, as a bare array.
#[utoipa::path(
    tag = "Segments",
    operation_id = "listSegments",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Every segment", body = Vec<SegmentView>)),
)]
#[get("/segments")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<SegmentView>>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| segments::list(conn, &project)).await?;
    Ok(Json(all.iter().map(SegmentView::from).collect()))
}

/// A segment type as given (any letter case): `DYNAMIC` or `STATIC`, else 422.
fn kind_of(given: Option<&str>) -> Result<Option<&'static str>, ApiError> {
    match given {
        None => Ok(None),
        Some(t) if t.eq_ignore_ascii_case("DYNAMIC") => Ok(Some("DYNAMIC")),
        Some(t) if t.eq_ignore_ascii_case("STATIC") => Ok(Some("STATIC")),
        Some(t) => Err(ApiError::validation(vec![
            FieldError::new("type", "invalid_enum_value", "type is DYNAMIC or STATIC").received(json!(t)),
        ])),
    }
}

/// Makes a segment (a DYNAMIC one is counted at once).
#[utoipa::path(
    tag = "Segments",
    operation_id = "createSegment",
    request_body = CreateSegment,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The segment", body = SegmentView)),
)]
#[post("/segments", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<CreateSegment, Medium>,
) -> Result<Json<SegmentView>, ApiError> {
    let body = body.0;
    let is_static = kind_of(body.kind.as_deref())? == Some("STATIC");
    let condition = body.condition.filter(|c| !c.is_null());
    if !is_static && !condition.as_ref().is_some_and(Value::is_object) {
        return Err(ApiError::simple_bad_request("A DYNAMIC segment needs a condition object"));
    }
    let name = body
        .name
        .ok_or_else(|| ApiError::invalid_field("name", "required", "name is required"))
        .and_then(|n| Ok(core_segments::check_name(&n)?))?;
    let description =
        body.description.as_deref().map(core_segments::check_description).transpose()?.flatten();
    let track_membership = body.track_membership.unwrap_or(false);
    let new = NewSegment { name, description, is_static, condition, track_membership };
    let project = access.project.id;
    let segment = state.db.write(move |tx| core_segments::create(tx, &project, new, clock::now_ms())).await?;
    let segment =
        if segment.is_static() { segment } else { core_segments::recount(&state.db, segment).await? };
    Ok(Json(SegmentView::from(&segment)))
}

/// How many contacts a condition matches now, without saving anything: the dashboard's condition
/// builder shows it as the condition changes. A bad condition is 422 naming the node.
#[utoipa::path(
    tag = "Segments",
    operation_id = "countCondition",
    request_body = CountBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The count", body = Count)),
)]
#[post("/segments/count", data = "<body>")]
async fn count(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<CountBody, Medium>,
) -> Result<Json<Count>, ApiError> {
    let (project, condition) = (access.project.id, body.0.condition);
    let checked = {
        let project = project.clone();
        state.db.run(move |conn| core_segments::check_condition(conn, &project, &condition, None)).await?
    };
    let count = core_segments::count_condition(&state.db, &project, checked).await?;
    Ok(Json(Count { count }))
}

/// Reads a segment.
#[utoipa::path(
    tag = "Segments",
    operation_id = "getSegment",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The segment", body = SegmentView)),
)]
#[get("/segments/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
) -> Result<Json<SegmentView>, ApiError> {
    let id = id?;
    Ok(Json(SegmentView::from(&find(state, access.project.id, id).await?)))
}

/// Changes a segment's name, description, condition or tracking.
#[utoipa::path(
    tag = "Segments",
    operation_id = "updateSegment",
    params(("id" = String, Path)),
    request_body = ChangeSegment,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The segment as changed", body = SegmentView)),
)]
#[patch("/segments/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
    body: JsonBody<ChangeSegment, Medium>,
) -> Result<Json<SegmentView>, ApiError> {
    let id = id?;
    let body = body.0;
    let kind = kind_of(body.kind.as_deref())?;
    if body.condition.as_ref().is_some_and(|c| !c.is_object()) {
        return Err(ApiError::simple_bad_request("condition must be a condition object"));
    }
    let changes = SegmentChanges {
        kind,
        name: body.name.as_deref().map(core_segments::check_name).transpose()?,
        description: body
            .description
            .map(|d| d.as_deref().map(core_segments::check_description).transpose().map(Option::flatten))
            .transpose()?,
        condition: body.condition,
        track_membership: body.track_membership,
    };
    let condition_changed = changes.condition.is_some();
    let project = access.project.id;
    let segment =
        state.db.write(move |tx| core_segments::update(tx, &project, &id, changes, clock::now_ms())).await?;
    let segment = if condition_changed { core_segments::recount(&state.db, segment).await? } else { segment };
    Ok(Json(SegmentView::from(&segment)))
}

/// Deletes a segment; 409 while a campaign or workflow uses it.
#[utoipa::path(
    tag = "Segments",
    operation_id = "deleteSegment",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/segments/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| core_segments::delete(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// The segment's contacts, newest first, a page at a time (live for dynamic segments).
/// The segment's contacts now, a page at a time.
#[utoipa::path(
    tag = "Segments",
    operation_id = "listSegmentContacts",
    params(
        ("page" = Option<i64>, Query, minimum = 1, description = "From 1; default 1."),
        ("pageSize" = Option<i64>, Query, minimum = 1, description = "Default 20, at most 100."),
        ("id" = String, Path),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of contacts", body = NumberedPage<Contact>)),
)]
#[get("/segments/<id>/contacts?<page>&<pageSize>")]
#[allow(non_snake_case)]
async fn members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
    page: Option<&str>,
    pageSize: Option<&str>,
) -> Result<Json<NumberedPage<Contact>>, ApiError> {
    let id = id?;
    let (page, size) = pagination::page_params(page, pageSize, 100)?;
    let segment = find(state, access.project.id, id).await?;
    let total = core_segments::count(&state.db, &segment).await?;
    let rows = state
        .db
        .run(move |conn| core_segments::contacts_page(conn, &segment, page, size, clock::now_ms()))
        .await?;
    Ok(Json(NumberedPage::new(rows.iter().map(Contact::from).collect(), total, page, size)))
}

/// Adds contacts to a static segment: `{emails, createMissing?, subscribed?}`.
/// Adds contacts to a STATIC segment by email.
#[utoipa::path(
    tag = "Segments",
    operation_id = "addSegmentMembers",
    params(("id" = String, Path)),
    request_body = AddMembers,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What was added", body = MembersAdded)),
)]
#[post("/segments/<id>/members", data = "<body>")]
async fn add_members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
    body: JsonBody<AddMembers, Medium>,
) -> Result<Json<MembersAdded>, ApiError> {
    let id = id?;
    let AddMembers { emails, create_missing, subscribed } = body.0;
    let emails = core_segments::check_emails(emails.as_ref())?;
    let project = access.project.id;
    let (segment, outcome) = state
        .db
        .write(move |tx| {
            let segment = core_segments::find(tx, &project, &id)?;
            Ok::<_, ApiError>(core_segments::add_members(
                tx,
                segment,
                &emails,
                create_missing,
                subscribed,
                clock::now_ms(),
            )?)
        })
        .await?;
    Ok(Json(MembersAdded {
        segment: SegmentView::from(&segment),
        member_count: segment.member_count,
        added: outcome.added,
        already_members: outcome.already,
        created: outcome.created,
        not_found: outcome.not_found,
    }))
}

/// Removes contacts from a static segment: `{emails}`.
/// Removes contacts from a STATIC segment by email.
#[utoipa::path(
    tag = "Segments",
    operation_id = "removeSegmentMembers",
    params(("id" = String, Path)),
    request_body = RemoveMembers,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What was removed", body = MembersRemoved)),
)]
#[delete("/segments/<id>/members", data = "<body>")]
async fn remove_members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
    body: JsonBody<RemoveMembers, Medium>,
) -> Result<Json<MembersRemoved>, ApiError> {
    let id = id?;
    let emails = core_segments::check_emails(body.0.emails.as_ref())?;
    let project = access.project.id;
    let (segment, outcome) = state
        .db
        .write(move |tx| {
            let segment = core_segments::find(tx, &project, &id)?;
            Ok::<_, ApiError>(core_segments::remove_members(tx, segment, &emails, clock::now_ms())?)
        })
        .await?;
    Ok(Json(MembersRemoved {
        segment: SegmentView::from(&segment),
        member_count: segment.member_count,
        removed: outcome.removed,
        not_members: outcome.not_found,
    }))
}

/// Recomputes a tracked dynamic segment's stored membership now, emitting entry and exit events
/// for the differences; answers when the run is complete. Each batch commits on its own, so the
/// scheduler finishes a run this request could not.
/// Computes a tracked segment's membership now, recording entries and exits.
#[utoipa::path(
    tag = "Segments",
    operation_id = "computeSegment",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The segment, computed", body = SegmentView)),
)]
#[post("/segments/<id>/compute")]
async fn compute(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
) -> Result<Json<SegmentView>, ApiError> {
    let id = id?;
    let segment = find(state, access.project.id, id).await?;
    if !core_segments::is_tracked_dynamic(&segment) {
        return Err(ApiError::bad_request(if segment.is_static() {
            "A static segment's members are set through /segments/:id/members; there is nothing to compute"
        } else {
            "Only segments with trackMembership keep a membership to compute; use /segments/:id/refresh for a count"
        }));
    }
    loop {
        let id = segment.id.clone();
        let step = state
            .db
            .write(move |tx| {
                core_segments::compute_step(tx, &id, core_segments::COMPUTE_BATCH, clock::now_ms())
            })
            .await?;
        match step {
            Step::Running => continue,
            Step::Done(segment) => return Ok(Json(SegmentView::from(&*segment))),
            Step::Gone => return Err(SegmentId::missing(&segment.id).into()),
        }
    }
}

/// Refreshes the cached count only: no membership writes, no events.
/// Counts a segment's members again.
#[utoipa::path(
    tag = "Segments",
    operation_id = "refreshSegment",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The segment, counted", body = SegmentView)),
)]
#[post("/segments/<id>/refresh")]
async fn refresh(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SegmentId>,
) -> Result<Json<SegmentView>, ApiError> {
    let id = id?;
    let segment = find(state, access.project.id, id).await?;
    Ok(Json(SegmentView::from(&core_segments::recount(&state.db, segment).await?)))
}
