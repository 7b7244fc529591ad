//! Event queries: recent events, per-contact history, names, stats, usage, and deletion by name.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, Route, State, delete, get, routes};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::core::track;
use crate::db::events::{self, ListQuery, Listed};
use crate::db::{DbError, contacts, jobs};
use crate::error::ApiError;
use crate::scheduler::events::{DELETE_BATCH, delete_job};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![list, for_contact, names, stats, usage, remove]
}

/// Where the next page starts.
#[derive(Serialize, Deserialize)]
struct Position {
    t: i64,
    r: i64,
}

/// The position a cursor of an events list names, if one is given (400 when it is not ours).
pub fn after(cursor: Option<&str>) -> Result<Option<(i64, i64)>, ApiError> {
    match cursor.filter(|c| !c.is_empty()) {
        None => Ok(None),
        Some(c) => {
            let p: Position = pagination::decode(c)?;
            Ok(Some((p.t, p.r)))
        }
    }
}

/// A page of events read with `limit + 1` rows: the first `limit` shown by `show`, and the
/// cursor of the next page when there is one.
pub fn page_of(
    rows: &[(Listed, (i64, i64))],
    limit: usize,
    total: Option<i64>,
    show: impl Fn(&Listed) -> Value,
) -> Value {
    let more = rows.len() > limit;
    let rows = &rows[..rows.len().min(limit)];
    let next =
        more.then(|| rows.last().map(|(_, (t, r))| pagination::encode(&Position { t: *t, r: *r }))).flatten();
    pagination::page(rows.iter().map(|(e, _)| show(e)).collect(), next, total)
}

/// An event as the API shows it.
pub use crate::core::events::view;

async fn page(
    state: &AppState,
    project: String,
    name: Option<String>,
    contact: Option<String>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<Value, ApiError> {
    let limit = pagination::limit(limit)?;
    let after = after(cursor)?;
    let first = after.is_none();
    let (rows, total) = state
        .db
        .run(move |conn| {
            let q = ListQuery {
                project: &project,
                name: name.as_deref(),
                names: &[],
                contact: contact.as_deref(),
                after,
                limit: limit + 1,
            };
            let rows = events::list(conn, &q)?;
            let total = if first { Some(events::count(conn, &project, q.name, q.contact)?) } else { None };
            Ok::<_, DbError>((rows, total))
        })
        .await?;
    Ok(page_of(&rows, limit, total, view))
}

#[derive(FromForm)]
struct ListParams<'r> {
    limit: Option<&'r str>,
    cursor: Option<&'r str>,
    name: Option<&'r str>,
    #[field(name = "contactId")]
    contact_id: Option<&'r str>,
}

/// Recent events, newest first; `name` and `contactId` narrow the list.
#[get("/events?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<Value>, ApiError> {
    let name = params.name.filter(|n| !n.is_empty()).map(str::to_string);
    let contact = params.contact_id.filter(|c| !c.is_empty()).map(str::to_string);
    Ok(Json(page(state, access.project.id, name, contact, params.limit, params.cursor).await?))
}

/// Every event of one contact, newest first.
#[get("/events/contact/<contact_id>?<limit>&<cursor>&<name>")]
async fn for_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    contact_id: &str,
    limit: Option<&str>,
    cursor: Option<&str>,
    name: Option<&str>,
) -> Result<Json<Value>, ApiError> {
    let (project, id) = (access.project.id.clone(), contact_id.to_string());
    let found = state.db.run(move |conn| Ok::<_, DbError>(contacts::by_id(conn, &project, &id)?)).await?;
    if found.is_none() {
        return Err(ApiError::not_found(format!("No contact {contact_id} in this project")));
    }
    let name = name.filter(|n| !n.is_empty()).map(str::to_string);
    Ok(Json(page(state, access.project.id, name, Some(contact_id.to_string()), limit, cursor).await?))
}

/// The distinct event names, with how many events carry each and when the last one happened.
#[get("/events/names")]
async fn names(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Value>, ApiError> {
    let project = access.project.id;
    let rows = state.db.run(move |conn| Ok::<_, DbError>(events::names(conn, &project)?)).await?;
    Ok(Json(Value::Array(
        rows.into_iter()
            .map(|(name, count, last)| {
                json!({ "name": name, "count": count, "lastSeenAt": clock::iso(last), "reserved": track::is_reserved(&name) })
            })
            .collect(),
    )))
}

/// Longest period the stats cover.
const MAX_STATS_DAYS: i64 = 366;

/// Counts per event name over a period (`from`, `to`: dates or ISO 8601 times; by default the
/// last 30 days), with distinct contacts, and the events of each UTC day. A date-only `to`
/// includes that whole day, so `from=2026-11-01&to=2026-11-30` is all of November.
#[get("/events/stats?<from>&<to>")]
async fn stats(
    state: &State<AppState>,
    access: ProjectAccess,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Json<Value>, ApiError> {
    let instant = |name: &str, raw: Option<&str>| -> Result<Option<i64>, ApiError> {
        raw.filter(|r| !r.is_empty())
            .map(|r| {
                let day_end = |(ms, full): (i64, bool)| if full || name == "from" { ms } else { ms + 86_400_000 };
                clock::parse_date(r).map(day_end).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "{name} must be a date (YYYY-MM-DD) or an ISO 8601 time like 2026-11-21T10:00:00Z (found {r:?})"
                    ))
                })
            })
            .transpose()
    };
    let to = instant("to", to)?.unwrap_or_else(|| clock::now_ms() + 1);
    let from = instant("from", from)?.unwrap_or(to - 30 * 86_400_000);
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    if to - from > MAX_STATS_DAYS * 86_400_000 {
        return Err(ApiError::bad_request(format!("stats cover at most {MAX_STATS_DAYS} days at a time")));
    }
    let project = access.project.id;
    let (names, days) = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>((
                events::stats(conn, &project, from, to)?,
                events::per_day(conn, &project, from, to)?,
            ))
        })
        .await?;
    let total: i64 = names.iter().map(|(_, n, _)| n).sum();
    Ok(Json(json!({
        "from": clock::iso(from),
        "to": clock::iso(to),
        "total": total,
        "events": names.iter().map(|(name, count, contacts)| json!({ "name": name, "count": count, "contacts": contacts })).collect::<Vec<_>>(),
        "days": days.iter().map(|(day, count)| json!({ "date": &clock::iso(*day)[..10], "count": count })).collect::<Vec<_>>(),
    })))
}

/// Where an event name is used: segment filters and campaign audiences (workflow triggers and
/// conditions as they arrive).
#[get("/events/<name>/usage", rank = 2)]
async fn usage(state: &State<AppState>, access: ProjectAccess, name: &str) -> Result<Json<Value>, ApiError> {
    let mut usage = super::usage::lists(state, &access.project.id, "event", name).await?;
    usage.insert("event".into(), json!(name));
    Ok(Json(Value::Object(usage)))
}

/// Deletes every event of a name: at once when there are few, else as a background job (202).
/// Service events (`email.*`, ...) are the record of what the service did and are kept.
#[delete("/events/<name>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    name: &str,
) -> Result<(Status, Json<Value>), ApiError> {
    if track::is_reserved(name) {
        return Err(ApiError::invalid_field(
            "name",
            "reserved_event",
            format!(
                "{name:?} is a service event; service events record what was sent and are not deleted by name"
            ),
        ));
    }
    let (project, owned) = (access.project.id, name.to_string());
    let outcome = state
        .db
        .write(move |tx| {
            let total = events::count_named(tx, &project, &owned)?;
            if total == 0 {
                return Ok::<_, ApiError>(None);
            }
            if total as usize <= DELETE_BATCH {
                events::delete_named(tx, &project, &owned, DELETE_BATCH)?;
                return Ok(Some((total, false)));
            }
            jobs::enqueue(tx, &delete_job(&project, &owned))?;
            Ok(Some((total, true)))
        })
        .await?;
    match outcome {
        None => Err(ApiError::not_found(format!("No events named {name:?} in this project"))),
        Some((total, false)) => {
            Ok((Status::Ok, Json(json!({ "name": name, "deleted": total, "status": "completed" }))))
        }
        Some((total, true)) => Ok((
            Status::Accepted,
            Json(json!({ "name": name, "deleted": 0, "total": total, "status": "queued" })),
        )),
    }
}
