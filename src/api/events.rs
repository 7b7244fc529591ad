//! Event queries: recent events, per-contact history, names, stats, usage, and deletion by name.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get};
use serde::{Deserialize, Serialize};

use super::aliases::param;
use super::guards::ProjectAccess;
use super::ids::Param;
use super::pagination;
use crate::clock;
use crate::core::contacts as core_contacts;
use crate::core::ids::ContactId;
use crate::core::track;
use crate::db::DbError;
use crate::db::events::{self, ListQuery, Listed};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::events::{DayCount, Event, EventDeletion, EventName, EventStats, NameCount};
use crate::views::usage::EventUsage;

documented_routes!(list, for_contact, names, stats, usage, remove);

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
pub fn page_of<T>(
    rows: &[(Listed, (i64, i64))],
    limit: usize,
    total: Option<i64>,
    show: impl Fn(&Listed) -> T,
) -> CursorPage<T> {
    let more = rows.len() > limit;
    let rows = &rows[..rows.len().min(limit)];
    let next =
        more.then(|| rows.last().map(|(_, (t, r))| pagination::encode(&Position { t: *t, r: *r }))).flatten();
    CursorPage::new(rows.iter().map(|(e, _)| show(e)).collect(), next, total)
}

/// What a list of events shows: a name, a contact, a period (ms, `from` inclusive, `to`
/// exclusive).
#[derive(Default)]
pub struct Filter {
    pub name: Option<String>,
    pub contact: Option<String>,
    pub from: Option<i64>,
    pub to: Option<i64>,
}

/// An instant of a period named `name`: a date (`YYYY-MM-DD`) or an ISO 8601 time. A date-only
/// `end` includes that whole day.
pub fn instant(name: &str, raw: Option<&str>, end: bool) -> Result<Option<i64>, ApiError> {
    raw.map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| {
            clock::parse_date(r)
                .map(|(ms, full)| if full || !end { ms } else { ms.saturating_add(86_400_000) })
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "{name} must be a date (YYYY-MM-DD) or an ISO 8601 time like 2026-11-21T10:00:00Z (found {r:?})"
                    ))
                })
        })
        .transpose()
}

/// A period from its start and end parameters (`from`/`to`, or Plunk's `startDate`/`endDate`),
/// either or both open.
pub fn period(
    from: (&str, Option<&str>),
    to: (&str, Option<&str>),
) -> Result<(Option<i64>, Option<i64>), ApiError> {
    let (from, to) = (instant(from.0, from.1, false)?, instant(to.0, to.1, true)?);
    if let (Some(f), Some(t)) = (from, to)
        && f >= t
    {
        return Err(ApiError::bad_request("the period's start must be before its end"));
    }
    Ok((from, to))
}

/// A page of events (`names` as [`ListQuery::names`]), with the total on the first page.
pub async fn page<T: Send + 'static>(
    state: &AppState,
    project: String,
    filter: Filter,
    names: Vec<&'static str>,
    (limit, cursor): (Option<&str>, Option<&str>),
    show: impl Fn(&Listed) -> T + Send + 'static,
) -> Result<CursorPage<T>, ApiError> {
    let limit = pagination::limit(limit)?;
    let after = after(cursor)?;
    let page = state
        .db
        .run(move |conn| {
            let q = ListQuery {
                project: &project,
                name: filter.name.as_deref(),
                names: &names,
                contact: filter.contact.as_deref(),
                from: filter.from,
                to: filter.to,
                after,
                limit: limit + 1,
            };
            let rows = events::list(conn, &q)?;
            let total = if after.is_none() { Some(events::count_listed(conn, &q)?) } else { None };
            Ok::<_, DbError>(page_of(&rows, limit, total, show))
        })
        .await?;
    Ok(page)
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
    /// Only events of this name.
    #[param(value_type = Option<String>)]
    name: Option<&'r str>,
    /// `name`, as Plunk's clients call it.
    #[field(name = "eventName")]
    #[param(rename = "eventName", value_type = Option<String>)]
    event_name: Option<&'r str>,
    /// Only events of this contact.
    #[field(name = "contactId")]
    #[param(rename = "contactId", value_type = Option<String>)]
    contact_id: Option<&'r str>,
    /// Only events at or after this date (`YYYY-MM-DD`) or ISO 8601 time.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// Only events before this ISO 8601 time, or up to the end of this date.
    #[param(value_type = Option<String>)]
    to: Option<&'r str>,
    /// `from`, as Plunk's clients call it.
    #[field(name = "startDate")]
    #[param(rename = "startDate", value_type = Option<String>)]
    start_date: Option<&'r str>,
    /// `to`, as Plunk's clients call it.
    #[field(name = "endDate")]
    #[param(rename = "endDate", value_type = Option<String>)]
    end_date: Option<&'r str>,
}

/// Recent events, newest first; `name`, `contactId` and a period narrow the list.
#[utoipa::path(
    tag = "Events",
    operation_id = "listEvents",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of events", body = CursorPage<Event>)),
)]
#[get("/events?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<Event>>, ApiError> {
    let name = param(("name", params.name), ("eventName", params.event_name))?;
    let (from, to) = period(
        ("from", param(("from", params.from), ("startDate", params.start_date))?),
        ("to", param(("to", params.to), ("endDate", params.end_date))?),
    )?;
    let filter = Filter {
        name: name.map(str::to_string),
        contact: params.contact_id.filter(|c| !c.is_empty()).map(str::to_string),
        from,
        to,
    };
    let page =
        page(state, access.project.id, filter, Vec::new(), (params.limit, params.cursor), |e| Event::from(e))
            .await?;
    Ok(Json(page))
}

/// Every event of one contact, newest first.
#[utoipa::path(
    tag = "Events",
    operation_id = "listContactEvents",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, description = "1 to 100 (larger is taken as 100); default 20."),
        ("cursor" = Option<String>, Query, description = "The previous page's `cursor`."),
        ("name" = Option<String>, Query, description = "Only events of this name."),
        ("contact_id" = String, Path),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of the contact's events", body = CursorPage<Event>)),
)]
#[get("/events/contact/<contact_id>?<limit>&<cursor>&<name>")]
async fn for_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    contact_id: Param<ContactId>,
    limit: Option<&str>,
    cursor: Option<&str>,
    name: Option<&str>,
) -> Result<Json<CursorPage<Event>>, ApiError> {
    let contact_id = contact_id?;
    let (project, id) = (access.project.id.clone(), contact_id);
    let contact = state.db.run(move |conn| core_contacts::find(conn, &project, &id)).await?;
    let filter = Filter {
        name: name.filter(|n| !n.is_empty()).map(str::to_string),
        contact: Some(contact.id),
        ..Filter::default()
    };
    Ok(Json(page(state, access.project.id, filter, Vec::new(), (limit, cursor), |e| Event::from(e)).await?))
}

/// The distinct event names, with how many events carry each and when the last one happened.
#[utoipa::path(
    tag = "Events",
    operation_id = "listEventNames",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The names", body = Vec<EventName>)),
)]
#[get("/events/names")]
async fn names(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<EventName>>, ApiError> {
    let project = access.project.id;
    let rows = state.db.run(move |conn| events::names(conn, &project)).await?;
    Ok(Json(
        rows.into_iter()
            .map(|(name, count, last)| EventName {
                reserved: track::is_reserved(&name),
                name,
                count,
                last_seen_at: clock::iso(last),
            })
            .collect(),
    ))
}

/// Longest period the stats cover.
const MAX_STATS_DAYS: i64 = 366;

/// Counts per event name over a period (`from`, `to`: dates or ISO 8601 times; by default the
/// last 30 days), with distinct contacts, and the events of each UTC day. A date-only `to`
/// includes that whole day, so `from=2026-11-01&to=2026-11-30` is all of November.
#[utoipa::path(
    tag = "Events",
    operation_id = "eventStats",
    params(
        ("from" = Option<String>, Query, description = "A date (`YYYY-MM-DD`) or an ISO 8601 time; default 30 days before `to`."),
        ("to" = Option<String>, Query, description = "A date (the whole day is included) or an ISO 8601 time; default now. At most 366 days after `from`."),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Counts by name and by day", body = EventStats)),
)]
#[get("/events/stats?<from>&<to>")]
async fn stats(
    state: &State<AppState>,
    access: ProjectAccess,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<Json<EventStats>, ApiError> {
    let to = instant("to", to, true)?.unwrap_or_else(|| clock::now_ms() + 1);
    let from = instant("from", from, false)?.unwrap_or(to.saturating_sub(30 * 86_400_000));
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    if to.saturating_sub(from) > MAX_STATS_DAYS * 86_400_000 {
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
    Ok(Json(EventStats {
        from: clock::iso(from),
        to: clock::iso(to),
        total,
        events: names
            .into_iter()
            .map(|(name, count, contacts)| NameCount { name, count, contacts })
            .collect(),
        days: days
            .iter()
            .map(|(day, count)| DayCount { date: clock::iso(*day)[..10].to_string(), count: *count })
            .collect(),
    }))
}

/// Where an event name is used: segment filters and campaign audiences (workflow triggers and
/// conditions as they arrive).
#[utoipa::path(
    tag = "Events",
    operation_id = "eventUsage",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What refers to the name", body = EventUsage)),
)]
#[get("/events/<name>/usage", rank = 2)]
async fn usage(
    state: &State<AppState>,
    access: ProjectAccess,
    name: &str,
) -> Result<Json<EventUsage>, ApiError> {
    let usage = super::usage::lists(state, &access.project.id, "event", name).await?;
    Ok(Json(EventUsage { event: name.to_string(), usage }))
}

/// Deletes every event of a name: at once when there are few, else as a background job (202).
/// Service events (`email.*`, ...) are the record of what the service did and are kept.
#[utoipa::path(
    tag = "Events",
    operation_id = "deleteEvents",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses(
        (status = 200, description = "Deleted at once", body = EventDeletion),
        (status = 202, description = "Many: deleted by a background job", body = EventDeletion),
    ),
)]
#[delete("/events/<name>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    name: &str,
) -> Result<(Status, Json<EventDeletion>), ApiError> {
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
    let outcome = state.db.write(move |tx| crate::core::events::delete_named(tx, &project, &owned)).await?;
    match outcome {
        None => Err(ApiError::not_found(format!("No events named {name:?} in this project"))),
        Some((total, false)) => Ok((
            Status::Ok,
            Json(EventDeletion {
                name: name.into(),
                deleted: total,
                total: None,
                status: "completed".into(),
            }),
        )),
        Some((total, true)) => Ok((
            Status::Accepted,
            Json(EventDeletion {
                name: name.into(),
                deleted: 0,
                total: Some(total),
                status: "queued".into(),
            }),
        )),
    }
}
