//! Segments: list, create, read, change, delete, their contacts, static members, membership
//! computation (tracked segments) and count refresh.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{Route, State, delete, get, patch, post, routes};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Medium};
use super::pagination;
use crate::clock;
use crate::core::contacts as core_contacts;
use crate::core::segments::{self as core_segments, NewSegment, SegmentChanges, Step};
use crate::db::segments::{self, Segment};
use crate::db::{DbError, jobs};
use crate::error::{ApiError, FieldError};
use crate::scheduler::segments::compute_job;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![list, create, count, read, change, remove, members, add_members, remove_members, compute, refresh]
}

/// `POST /segments`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreateBody {
    name: Option<String>,
    description: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    condition: Option<Value>,
    track_membership: Option<bool>,
}

/// `PATCH /segments/:id`: a field left out stays; `description: null` clears it, and a
/// `condition` or `type` that is present is checked even when null.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ChangeBody {
    name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    condition: Option<Value>,
    #[serde(default, rename = "type", deserialize_with = "present")]
    kind: Option<Value>,
    track_membership: Option<bool>,
}

/// `POST /segments/:id/members`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct MembersBody {
    emails: Option<Value>,
    #[serde(default)]
    create_missing: bool,
    subscribed: Option<bool>,
}

/// `DELETE /segments/:id/members`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveBody {
    emails: Option<Value>,
}

/// Tells a field sent as `null` from one left out (which `default` makes `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The segment as it is inside a write transaction (the copy read before it may be stale: a
/// computation moves its cursor meanwhile), or 404.
fn current(conn: &rusqlite::Connection, project: &str, id: &str) -> Result<Segment, ApiError> {
    segments::get(conn, project, id)?
        .ok_or_else(|| ApiError::not_found(format!("No segment {id} in this project")))
}

/// A segment of the project, or 404.
async fn find(state: &AppState, project: String, id: &str) -> Result<Segment, ApiError> {
    let lookup = id.to_string();
    state
        .db
        .run(move |conn| Ok::<_, DbError>(segments::get(conn, &project, &lookup)?))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("No segment {id} in this project")))
}

/// All segments, newest first, as a bare array.
#[get("/segments")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Value>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| Ok::<_, DbError>(segments::list(conn, &project)?)).await?;
    Ok(Json(Value::Array(all.iter().map(core_segments::view).collect())))
}

#[post("/segments", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<CreateBody, Medium>,
) -> Result<Json<Value>, ApiError> {
    let body = body.0;
    let is_static = match body.kind.as_deref() {
        None => false,
        Some(t) if t.eq_ignore_ascii_case("DYNAMIC") => false,
        Some(t) if t.eq_ignore_ascii_case("STATIC") => true,
        Some(t) => {
            return Err(ApiError::validation(vec![
                FieldError::new("type", "invalid_enum_value", "type is DYNAMIC or STATIC").received(json!(t)),
            ]));
        }
    };
    let condition = body.condition.filter(|c| !c.is_null());
    if !is_static && !condition.as_ref().is_some_and(Value::is_object) {
        return Err(ApiError::simple_bad_request("A DYNAMIC segment needs a condition object"));
    }
    let name = body
        .name
        .ok_or_else(|| ApiError::invalid_field("name", "required", "name is required"))
        .and_then(|n| core_segments::check_name(&n))?;
    let description =
        body.description.as_deref().map(core_segments::check_description).transpose()?.flatten();
    let track_membership = body.track_membership.unwrap_or(false);
    let new = NewSegment { name, description, is_static, condition, track_membership };
    let project = access.project.id;
    let segment = state
        .db
        .write(move |tx| {
            let segment = core_segments::create(tx, &project, new, clock::now_ms())?;
            if core_segments::is_tracked_dynamic(&segment) {
                jobs::enqueue(tx, &compute_job(&segment))?;
            }
            Ok::<_, ApiError>(segment)
        })
        .await?;
    let segment = if segment.is_static() { segment } else { core_segments::recount(state, segment).await? };
    Ok(Json(core_segments::view(&segment)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CountBody {
    condition: Value,
}

/// How many contacts a condition matches now, without saving anything: the dashboard's condition
/// builder shows it as the condition changes. A bad condition is 422 naming the node.
#[post("/segments/count", data = "<body>")]
async fn count(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<CountBody, Medium>,
) -> Result<Json<Value>, ApiError> {
    let (project, condition) = (access.project.id, body.0.condition);
    let checked = {
        let project = project.clone();
        state.db.run(move |conn| core_segments::check_condition(conn, &project, &condition, None)).await?
    };
    let count = core_segments::count_condition(state, &project, checked).await?;
    Ok(Json(json!({ "count": count })))
}

#[get("/segments/<id>")]
async fn read(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Json<Value>, ApiError> {
    Ok(Json(core_segments::view(&find(state, access.project.id, id).await?)))
}

#[patch("/segments/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<ChangeBody, Medium>,
) -> Result<Json<Value>, ApiError> {
    let body = body.0;
    if body.kind.is_some() {
        return Err(ApiError::invalid_field(
            "type",
            "invalid_value",
            "a segment's type cannot change; make a new segment instead",
        ));
    }
    if body.condition.as_ref().is_some_and(|c| !c.is_object()) {
        return Err(ApiError::simple_bad_request("condition must be a condition object"));
    }
    let changes = SegmentChanges {
        name: body.name.as_deref().map(core_segments::check_name).transpose()?,
        description: body
            .description
            .map(|d| d.as_deref().map(core_segments::check_description).transpose().map(Option::flatten))
            .transpose()?,
        condition: body.condition,
        track_membership: body.track_membership,
    };
    let condition_changed = changes.condition.is_some();
    let (project, id) = (access.project.id, id.to_string());
    let segment = state
        .db
        .write(move |tx| {
            let segment = current(tx, &project, &id)?;
            let was_tracked = core_segments::is_tracked_dynamic(&segment);
            let segment = core_segments::update(tx, segment, changes, clock::now_ms())?;
            if core_segments::is_tracked_dynamic(&segment) && !was_tracked {
                jobs::enqueue(tx, &compute_job(&segment))?;
            }
            Ok::<_, ApiError>(segment)
        })
        .await?;
    let segment = if condition_changed { core_segments::recount(state, segment).await? } else { segment };
    Ok(Json(core_segments::view(&segment)))
}

#[delete("/segments/<id>")]
async fn remove(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Status, ApiError> {
    let (project, id) = (access.project.id, id.to_string());
    state.db.write(move |tx| core_segments::delete(tx, &current(tx, &project, &id)?)).await?;
    Ok(Status::NoContent)
}

/// The segment's contacts, newest first, a page at a time (live for dynamic segments).
#[get("/segments/<id>/contacts?<page>&<pageSize>")]
#[allow(non_snake_case)]
async fn members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    page: Option<&str>,
    pageSize: Option<&str>,
) -> Result<Json<Value>, ApiError> {
    let (page, size) = pagination::page_params(page, pageSize, 100)?;
    let segment = find(state, access.project.id, id).await?;
    let total = core_segments::count(state, &segment).await?;
    let rows = state
        .db
        .run(move |conn| core_segments::contacts_page(conn, &segment, page, size, clock::now_ms()))
        .await?;
    Ok(Json(pagination::page_list(rows.iter().map(core_contacts::view).collect(), total, page, size)))
}

fn members_reply(segment: &Segment, outcome: &core_segments::MembersOutcome, adding: bool) -> Value {
    let mut out = json!({ "segment": core_segments::view(segment), "memberCount": segment.member_count });
    if adding {
        out["added"] = json!(outcome.added);
        out["alreadyMembers"] = json!(outcome.already);
        out["created"] = json!(outcome.created);
        out["notFound"] = json!(outcome.not_found);
    } else {
        out["removed"] = json!(outcome.removed);
        out["notMembers"] = json!(outcome.not_found);
    }
    out
}

/// Adds contacts to a static segment: `{emails, createMissing?, subscribed?}`.
#[post("/segments/<id>/members", data = "<body>")]
async fn add_members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<MembersBody, Medium>,
) -> Result<Json<Value>, ApiError> {
    let MembersBody { emails, create_missing, subscribed } = body.0;
    let emails = core_segments::check_emails(emails.as_ref())?;
    let (project, id) = (access.project.id, id.to_string());
    let (segment, outcome) = state
        .db
        .write(move |tx| {
            let segment = current(tx, &project, &id)?;
            core_segments::add_members(tx, segment, &emails, create_missing, subscribed, clock::now_ms())
        })
        .await?;
    Ok(Json(members_reply(&segment, &outcome, true)))
}

/// Removes contacts from a static segment: `{emails}`.
#[delete("/segments/<id>/members", data = "<body>")]
async fn remove_members(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<RemoveBody, Medium>,
) -> Result<Json<Value>, ApiError> {
    let emails = core_segments::check_emails(body.0.emails.as_ref())?;
    let (project, id) = (access.project.id, id.to_string());
    let (segment, outcome) = state
        .db
        .write(move |tx| {
            core_segments::remove_members(tx, current(tx, &project, &id)?, &emails, clock::now_ms())
        })
        .await?;
    Ok(Json(members_reply(&segment, &outcome, false)))
}

/// Recomputes a tracked dynamic segment's stored membership now, emitting entry and exit events
/// for the differences; answers when the run is complete. Each batch commits on its own, so the
/// scheduler finishes a run this request could not.
#[post("/segments/<id>/compute")]
async fn compute(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Json<Value>, ApiError> {
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
            Step::Done(segment) => return Ok(Json(core_segments::view(&segment))),
            Step::Gone => {
                return Err(ApiError::not_found(format!("No segment {} in this project", segment.id)));
            }
        }
    }
}

/// Refreshes the cached count only: no membership writes, no events.
#[post("/segments/<id>/refresh")]
async fn refresh(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Json<Value>, ApiError> {
    let segment = find(state, access.project.id, id).await?;
    Ok(Json(core_segments::view(&core_segments::recount(state, segment).await?)))
}
