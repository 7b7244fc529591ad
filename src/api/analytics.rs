//! Activity and analytics (issue 14): the activity feed and its counts, and time series, top
//! events and campaign figures. Counts come from the per-hour rollups kept as events are written
//! (`db::rollups`), so they read a few hundred rows however many events a project has; the
//! feed pages through the events themselves, newest first.

use rocket::serde::json::Json;
use rocket::{FromForm, State, get};
use std::collections::BTreeMap;

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::db::{DbError, campaigns, executions, rollups};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::analytics::{
    Activity, ActivityRates, ActivityStats, ActivityType, ActivityTypes, CampaignFigures,
    CampaignFiguresList, RecentCount, SeriesPoint, TimeSeries, TopCampaigns, TopEvent, TopEvents, Upcoming,
    UpcomingCampaign, UpcomingExecution,
};
use crate::views::campaigns::CampaignStats;
use crate::views::events::Event;

documented_routes!(
    feed,
    types,
    stats,
    recent_count,
    upcoming,
    timeseries,
    top_events,
    top_campaigns,
    campaign_stats
);

const HOUR: i64 = 3_600_000;
pub(super) const DAY: i64 = 24 * HOUR;

/// Activity types and the events they are; `event` is every tracked event.
const TYPES: &[(&str, &str)] = &[
    ("send", "email.sent"),
    ("delivery", "email.delivered"),
    ("open", "email.opened"),
    ("click", "email.clicked"),
    ("bounce", "email.bounced"),
    ("complaint", "email.complained"),
    ("failure", "email.failed"),
    ("inbound", "email.received"),
    ("subscribe", "contact.subscribed"),
    ("unsubscribe", "contact.unsubscribed"),
    ("event", "*"),
];

/// The activity type of an event name.
fn type_of(name: &str) -> &'static str {
    TYPES.iter().find(|(_, n)| *n == name).map(|(t, _)| *t).unwrap_or(
        if name.starts_with("email.") || name.starts_with("contact.") || name.starts_with("segment.") {
            "other"
        } else {
            "event"
        },
    )
}

/// The names of `types` (comma-separated), or 400 naming an unknown one.
fn names_of(types: Option<&str>) -> Result<Vec<&'static str>, ApiError> {
    let Some(types) = types.filter(|t| !t.trim().is_empty()) else {
        return Ok(TYPES.iter().map(|(_, n)| *n).collect());
    };
    types
        .split(',')
        .map(|t| {
            let t = t.trim();
            TYPES.iter().find(|(k, _)| *k == t).map(|(_, n)| *n).ok_or_else(|| {
                let known: Vec<&str> = TYPES.iter().map(|(k, _)| *k).collect();
                ApiError::bad_request(format!("unknown activity type {t:?}; types are {}", known.join(", ")))
            })
        })
        .collect()
}

/// A range from `from` and `to` (dates or ms, as [`clock::instant`] reads them, so any two
/// subtract without overflowing; default the last `default_days` days), no longer than
/// `max_days`.
pub(super) fn range(
    from: Option<&str>,
    to: Option<&str>,
    default_days: i64,
    max_days: i64,
) -> Result<(i64, i64), ApiError> {
    let at = |raw: Option<&str>, name: &str| -> Result<Option<i64>, ApiError> {
        match raw.map(str::trim).filter(|r| !r.is_empty()) {
            None => Ok(None),
            Some(raw) => clock::instant(raw).map(Some).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{name} is a date (2026-11-24 or ISO 8601) or milliseconds since 1970, before the year 10000"
                ))
            }),
        }
    };
    let to = at(to, "to")?.unwrap_or_else(clock::now_ms);
    let from = at(from, "from")?.unwrap_or(to - default_days * DAY);
    if from >= to {
        return Err(ApiError::bad_request("from must be before to"));
    }
    if to - from > max_days * DAY {
        return Err(ApiError::bad_request(format!("a range is at most {max_days} days")));
    }
    Ok((from, to))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct FeedParams<'r> {
    /// Activity types, comma-separated (`send,open,click`); default all.
    #[param(value_type = Option<String>)]
    types: Option<&'r str>,
    /// Only the activity of this contact.
    #[field(name = "contactId")]
    #[param(rename = "contactId", value_type = Option<String>)]
    contact_id: Option<&'r str>,
    /// Only activity at or after this date (`YYYY-MM-DD`) or ISO 8601 time.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// Only activity before this ISO 8601 time, or up to the end of this date.
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
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
}

/// The activity feed: sends, deliveries, opens, clicks, bounces, complaints, failures, inbound
/// mail, subscription changes and tracked events, newest first (`types`, `contactId` and a
/// period narrow it). The first page carries the total.
#[utoipa::path(
    tag = "Events",
    operation_id = "listActivity",
    params(FeedParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of the feed", body = CursorPage<Activity>)),
)]
#[get("/activity?<params..>")]
async fn feed(
    state: &State<AppState>,
    access: ProjectAccess,
    params: FeedParams<'_>,
) -> Result<Json<CursorPage<Activity>>, ApiError> {
    use super::aliases::param;
    use super::events::{Filter, period};
    let names = names_of(params.types)?;
    let (from, to) = period(
        ("from", param(("from", params.from), ("startDate", params.start_date))?),
        ("to", param(("to", params.to), ("endDate", params.end_date))?),
    )?;
    let filter = Filter {
        name: None,
        contact: params.contact_id.filter(|c| !c.is_empty()).map(str::to_string),
        from,
        to,
    };
    let page =
        super::events::page(state, access.project.id, filter, names, (params.limit, params.cursor), |e| {
            Activity { event: Event::from(e), kind: type_of(&e.name) }
        })
        .await?;
    Ok(Json(page))
}

/// The activity types, with how many of each the project has had in the last 30 days.
#[utoipa::path(
    tag = "Events",
    operation_id = "listActivityTypes",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The activity types", body = ActivityTypes)),
)]
#[get("/activity/types")]
async fn types(state: &State<AppState>, access: ProjectAccess) -> Result<Json<ActivityTypes>, ApiError> {
    let counts =
        counts_by_type(state, access.project.id, clock::now_ms() - 30 * DAY, clock::now_ms()).await?;
    let types = TYPES
        .iter()
        .map(|(kind, event)| ActivityType { kind, event, count: counts.get(kind).copied().unwrap_or(0) })
        .collect();
    Ok(Json(ActivityTypes { types }))
}

async fn counts_by_type(
    state: &AppState,
    project: String,
    from: i64,
    to: i64,
) -> Result<BTreeMap<&'static str, i64>, ApiError> {
    let totals = state.db.run(move |conn| rollups::totals(conn, &project, from, to)).await?;
    let mut counts: BTreeMap<&'static str, i64> = TYPES.iter().map(|(t, _)| (*t, 0)).collect();
    for (name, n) in totals {
        if let Some(count) = counts.get_mut(type_of(&name)) {
            *count += n;
        }
    }
    Ok(counts)
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct RangeParams<'r> {
    /// Start: a date (`2026-11-24`), ISO 8601 time or milliseconds; default 30 days before `to`.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// End: as `from`; default now.
    #[param(value_type = Option<String>)]
    to: Option<&'r str>,
}

/// Counts per activity type over a range (default the last 30 days), with open, click, bounce
/// and complaint rates per send.
#[utoipa::path(
    tag = "Events",
    operation_id = "getActivityStats",
    params(RangeParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Counts and rates", body = ActivityStats)),
)]
#[get("/activity/stats?<params..>")]
async fn stats(
    state: &State<AppState>,
    access: ProjectAccess,
    params: RangeParams<'_>,
) -> Result<Json<ActivityStats>, ApiError> {
    let (from, to) = range(params.from, params.to, 30, 3660)?;
    let counts = counts_by_type(state, access.project.id, from, to).await?;
    let n = |t: &str| counts.get(t).copied().unwrap_or(0) as f64;
    let rate = |t: &str| if n("send") > 0.0 { n(t) / n("send") } else { 0.0 };
    let rates = ActivityRates {
        open: rate("open"),
        click: rate("click"),
        bounce: rate("bounce"),
        complaint: rate("complaint"),
    };
    Ok(Json(ActivityStats { from: clock::iso(from), to: clock::iso(to), counts, rates }))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct RecentParams<'r> {
    /// 1 to 2160; default 24.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 2160)]
    hours: Option<&'r str>,
}

/// How many events the project recorded in the last `hours` (default 24; whole hours).
#[utoipa::path(
    tag = "Events",
    operation_id = "countRecentActivity",
    params(RecentParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The count", body = RecentCount)),
)]
#[get("/activity/recent-count?<params..>")]
async fn recent_count(
    state: &State<AppState>,
    access: ProjectAccess,
    params: RecentParams<'_>,
) -> Result<Json<RecentCount>, ApiError> {
    let hours = match params.hours {
        None => 24,
        Some(h) => h
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|h| (1..=24 * 90).contains(h))
            .ok_or_else(|| ApiError::bad_request("hours is a whole number from 1 to 2160"))?,
    };
    let now = clock::now_ms();
    let from = (now / HOUR - hours + 1) * HOUR;
    let project = access.project.id;
    let total: i64 = state
        .db
        .run(move |conn| rollups::totals(conn, &project, from, now + HOUR))
        .await?
        .iter()
        .map(|(_, n)| n)
        .sum();
    Ok(Json(RecentCount { count: total, hours, since: clock::iso(from) }))
}

/// Campaigns and executions `/activity/upcoming` lists, each.
const UPCOMING: usize = 20;
/// Campaigns `/analytics/campaign-stats` lists, latest sent first.
const FIGURED_CAMPAIGNS: usize = 500;

/// Scheduled campaigns, soonest first, and the workflow executions waiting with a due time.
#[utoipa::path(
    tag = "Events",
    operation_id = "listUpcoming",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What is due", body = Upcoming)),
)]
#[get("/activity/upcoming")]
async fn upcoming(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Upcoming>, ApiError> {
    let project = access.project.id;
    let (scheduled, waiting) = state
        .db
        .run(move |conn| {
            let scheduled = campaigns::scheduled(conn, &project, UPCOMING)?;
            let waiting = executions::waiting_due(conn, &project, UPCOMING)?;
            Ok::<_, DbError>((scheduled, waiting))
        })
        .await?;
    Ok(Json(Upcoming {
        campaigns: scheduled.into_iter().map(UpcomingCampaign::from).collect(),
        executions: waiting.into_iter().map(UpcomingExecution::from).collect(),
    }))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct SeriesParams<'r> {
    /// Start: a date (`2026-11-24`), ISO 8601 time or milliseconds; default 30 days before `to`.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// End: as `from`; default now.
    #[param(value_type = Option<String>)]
    to: Option<&'r str>,
    /// `day` (the default; at most 366 days) or `hour` (at most 31 days).
    #[param(value_type = Option<String>)]
    interval: Option<&'r str>,
}

/// Sends, deliveries, opens, clicks, bounces and complaints per day (at most 366) or hour (at
/// most 31 days), every bucket present.
#[utoipa::path(
    tag = "Events",
    operation_id = "getTimeSeries",
    params(SeriesParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The series", body = TimeSeries)),
)]
#[get("/analytics/timeseries?<params..>")]
async fn timeseries(
    state: &State<AppState>,
    access: ProjectAccess,
    params: SeriesParams<'_>,
) -> Result<Json<TimeSeries>, ApiError> {
    let (bucket, max_days) = match params.interval.unwrap_or("day") {
        "day" => (DAY, 366),
        "hour" => (HOUR, 31),
        other => return Err(ApiError::bad_request(format!("interval is day or hour (found {other:?})"))),
    };
    let (from, to) = range(params.from, params.to, 30, max_days)?;
    let (from, to) = (from / bucket * bucket, (to + bucket - 1) / bucket * bucket);
    const SERIES: &[&str] = &[
        "email.sent",
        "email.delivered",
        "email.opened",
        "email.clicked",
        "email.bounced",
        "email.complained",
    ];
    let project = access.project.id;
    let names: Vec<&'static str> = SERIES.to_vec();
    let rows = state.db.run(move |conn| rollups::series(conn, &project, (from, to), bucket, &names)).await?;
    let mut points = Vec::new();
    let mut at = from;
    let mut rows = rows.into_iter().peekable();
    while at < to {
        let mut point = SeriesPoint { date: clock::iso(at), ..SeriesPoint::default() };
        while let Some((_, name, n)) = rows.next_if(|(b, _, _)| *b == at) {
            match name.as_str() {
                "email.sent" => point.sent = n,
                "email.delivered" => point.delivered = n,
                "email.opened" => point.opened = n,
                "email.clicked" => point.clicked = n,
                "email.bounced" => point.bounced = n,
                "email.complained" => point.complained = n,
                _ => {}
            }
        }
        points.push(point);
        at += bucket;
    }
    let interval = if bucket == DAY { "day" } else { "hour" };
    Ok(Json(TimeSeries { from: clock::iso(from), to: clock::iso(to), interval, series: points }))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct TopParams<'r> {
    /// Start: a date (`2026-11-24`), ISO 8601 time or milliseconds; default 30 days before `to`.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// End: as `from`; default now.
    #[param(value_type = Option<String>)]
    to: Option<&'r str>,
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
}

/// The most frequent event names over a range (default the last 30 days).
#[utoipa::path(
    tag = "Events",
    operation_id = "getTopEvents",
    params(TopParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The top event names", body = TopEvents)),
)]
#[get("/analytics/top-events?<params..>")]
async fn top_events(
    state: &State<AppState>,
    access: ProjectAccess,
    params: TopParams<'_>,
) -> Result<Json<TopEvents>, ApiError> {
    let (from, to) = range(params.from, params.to, 30, 3660)?;
    let limit = pagination::limit(params.limit)?;
    let project = access.project.id;
    let totals = state.db.run(move |conn| rollups::totals(conn, &project, from, to)).await?;
    let events = totals
        .into_iter()
        .take(limit)
        .map(|(name, count)| TopEvent { kind: type_of(&name), name, count })
        .collect();
    Ok(Json(TopEvents { from: clock::iso(from), to: clock::iso(to), events }))
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct CampaignParams<'r> {
    /// `sent`, `opened` (the default), `clicked`, `openRate` or `clickRate`.
    #[param(value_type = Option<String>)]
    metric: Option<&'r str>,
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
}

/// The project's sent campaigns ranked by `metric` (`sent`, `opened`, `clicked`, or the rates
/// `openRate`, `clickRate`), with their figures.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "getTopCampaigns",
    params(CampaignParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The ranked campaigns", body = TopCampaigns)),
)]
#[get("/analytics/top-campaigns?<params..>")]
async fn top_campaigns(
    state: &State<AppState>,
    access: ProjectAccess,
    params: CampaignParams<'_>,
) -> Result<Json<TopCampaigns>, ApiError> {
    let metric = params.metric.unwrap_or("opened").to_string();
    if !["sent", "opened", "clicked", "openRate", "clickRate"].contains(&metric.as_str()) {
        return Err(ApiError::bad_request("metric is sent, opened, clicked, openRate or clickRate"));
    }
    let limit = pagination::limit(params.limit)?;
    let mut all = sent_campaigns(state, access.project.id).await?;
    let value = |c: &CampaignFigures| -> f64 {
        match metric.as_str() {
            "sent" => c.stats.sent as f64,
            "clicked" => c.stats.clicked as f64,
            "openRate" => c.stats.rates.open,
            "clickRate" => c.stats.rates.click,
            _ => c.stats.opened as f64,
        }
    };
    all.sort_by(|a, b| value(b).total_cmp(&value(a)));
    all.truncate(limit);
    Ok(Json(TopCampaigns { metric, campaigns: all }))
}

/// Every sent (or sending) campaign's figures, newest first.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "listCampaignFigures",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Each sent campaign with its figures", body = CampaignFiguresList)),
)]
#[get("/analytics/campaign-stats")]
async fn campaign_stats(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<CampaignFiguresList>, ApiError> {
    Ok(Json(CampaignFiguresList { campaigns: sent_campaigns(state, access.project.id).await? }))
}

async fn sent_campaigns(state: &AppState, project: String) -> Result<Vec<CampaignFigures>, ApiError> {
    let rows = state.db.run(move |conn| campaigns::sent(conn, &project, FIGURED_CAMPAIGNS)).await?;
    Ok(rows.iter().map(|c| CampaignFigures { stats: CampaignStats::from(c), name: c.name.clone() }).collect())
}
