//! Plunk v2's newest analytics views over the project's mail: `GET /analytics/links`,
//! `/analytics/heatmap`, `/analytics/deliverability` and `/analytics/audience`. Each takes
//! `from` and `to` (the last 30 days by default, at most 366), and the mail ones a `stream`
//! (`ALL`, `TRANSACTIONAL`, `CAMPAIGN` or `WORKFLOW`); the heatmap a `tz`. Machines' opens and
//! clicks are left out of the heatmap and counted apart in the links.

use rocket::serde::json::Json;
use rocket::{FromForm, State, get};

use super::analytics::{DAY, range};
use super::guards::ProjectAccess;
use crate::clock;
use crate::core::{analytics_views as views_core, campaign_report};
use crate::db::analytics_views::{self as queries, Stream};
use crate::db::engagements::DomainResults;
use crate::db::rollups;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::analytics_views::{
    AudienceDay, AudienceView, Bounces, DeliverabilityView, HeatCell, HeatmapView, LinksView,
    ProviderDelivery,
};
use crate::views::campaign_report::LinkReport;

documented_routes!(links, heatmap, deliverability, audience);

/// The query of the mail views.
#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ViewParams<'r> {
    /// Start: a date (`2026-11-24`), ISO 8601 time or milliseconds; default 30 days before `to`.
    #[param(value_type = Option<String>)]
    from: Option<&'r str>,
    /// End: as `from`; default now.
    #[param(value_type = Option<String>)]
    to: Option<&'r str>,
    /// `ALL` (the default), `TRANSACTIONAL`, `CAMPAIGN` or `WORKFLOW`.
    #[param(value_type = Option<String>)]
    stream: Option<&'r str>,
    /// The heatmap's time zone: an IANA name (`Europe/Berlin`), `UTC` (the default) or an offset
    /// (`+02:00`).
    #[param(value_type = Option<String>)]
    tz: Option<&'r str>,
}

impl ViewParams<'_> {
    fn range(&self) -> Result<(i64, i64), ApiError> {
        range(self.from, self.to, 30, 366)
    }

    fn stream(&self) -> Result<(Stream, String), ApiError> {
        let name = self.stream.map(str::trim).filter(|s| !s.is_empty()).unwrap_or("ALL").to_ascii_uppercase();
        let stream = match name.as_str() {
            "ALL" => Stream::All,
            "TRANSACTIONAL" => Stream::Transactional,
            "CAMPAIGN" => Stream::Campaign,
            "WORKFLOW" => Stream::Workflow,
            _ => {
                return Err(ApiError::invalid_field(
                    "stream",
                    "invalid_enum_value",
                    "stream must be ALL, TRANSACTIONAL, CAMPAIGN or WORKFLOW",
                ));
            }
        };
        Ok((stream, name))
    }
}

/// The most clicked links of the project's mail.
#[utoipa::path(
    tag = "Events",
    operation_id = "analyticsLinks",
    params(ViewParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The links", body = LinksView)),
)]
#[get("/analytics/links?<params..>")]
async fn links(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ViewParams<'_>,
) -> Result<Json<LinksView>, ApiError> {
    let (from, to) = params.range()?;
    let (stream, name) = params.stream()?;
    let project = access.project.id;
    let rows = state.db.run(move |conn| queries::links(conn, &project, stream, (from, to), 100)).await?;
    Ok(Json(LinksView {
        from: clock::iso(from),
        to: clock::iso(to),
        stream: name,
        links: rows.into_iter().map(LinkReport::from).collect(),
    }))
}

/// People's opens and clicks by weekday and hour in a time zone.
#[utoipa::path(
    tag = "Events",
    operation_id = "analyticsHeatmap",
    params(ViewParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The heatmap", body = HeatmapView)),
)]
#[get("/analytics/heatmap?<params..>")]
async fn heatmap(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ViewParams<'_>,
) -> Result<Json<HeatmapView>, ApiError> {
    let (from, to) = params.range()?;
    let (stream, name) = params.stream()?;
    let tz = params.tz.map(str::trim).filter(|t| !t.is_empty()).unwrap_or("UTC").to_string();
    let zone = views_core::zone(&tz).ok_or_else(|| {
        ApiError::invalid_field(
            "tz",
            "invalid_timezone",
            "tz is an IANA time zone (Europe/Berlin), UTC or an offset (+02:00)",
        )
    })?;
    let project = access.project.id;
    let hourly =
        state.db.run(move |conn| queries::hourly_engagement(conn, &project, stream, (from, to))).await?;
    let cells = views_core::heatmap(&zone, &hourly)
        .into_iter()
        .map(|(weekday, hour, opens, clicks)| HeatCell { weekday, hour, opens, clicks })
        .collect();
    Ok(Json(HeatmapView { from: clock::iso(from), to: clock::iso(to), stream: name, tz, cells }))
}

/// What became of the project's mail: delivered, opened, bounced (hard and soft), complained
/// and failed, in all and per receiving provider.
#[utoipa::path(
    tag = "Events",
    operation_id = "analyticsDeliverability",
    params(ViewParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The deliverability", body = DeliverabilityView)),
)]
#[get("/analytics/deliverability?<params..>")]
async fn deliverability(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ViewParams<'_>,
) -> Result<Json<DeliverabilityView>, ApiError> {
    let (from, to) = params.range()?;
    let (stream, name) = params.stream()?;
    let project = access.project.id;
    let domains =
        state.db.run(move |conn| queries::deliverability(conn, &project, stream, (from, to), 1000)).await?;
    let mut all = DomainResults::default();
    domains.iter().for_each(|d| all.add(d));
    let bounces = |d: &DomainResults| Bounces { hard: d.hard_bounces, soft: d.soft_bounces };
    let providers = campaign_report::providers(domains, 50)
        .into_iter()
        .map(|p| ProviderDelivery {
            bounced: bounces(&p.results),
            name: p.name,
            domains: p.domains,
            sent: p.results.recipients,
            delivered: p.results.delivered,
            opened: p.results.opened,
            complained: p.results.complained,
            failed: p.results.failed,
        })
        .collect();
    Ok(Json(DeliverabilityView {
        from: clock::iso(from),
        to: clock::iso(to),
        stream: name,
        sent: all.recipients,
        delivered: all.delivered,
        opened: all.opened,
        bounced: bounces(&all),
        complained: all.complained,
        failed: all.failed,
        providers,
    }))
}

/// The audience now and day by day: contacts created, unsubscribed and suppressed.
#[utoipa::path(
    tag = "Events",
    operation_id = "analyticsAudience",
    params(ViewParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The audience", body = AudienceView)),
)]
#[get("/analytics/audience?<params..>")]
async fn audience(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ViewParams<'_>,
) -> Result<Json<AudienceView>, ApiError> {
    let (from, to) = params.range()?;
    let (from, to) = (from / DAY * DAY, (to + DAY - 1) / DAY * DAY);
    let project = access.project.id;
    let (totals, changes, unsubscribed) = state
        .db
        .run(move |conn| {
            let totals = queries::contact_totals(conn, &project)?;
            let changes = queries::audience(conn, &project, (from, to), DAY)?;
            let unsubscribed = rollups::series(conn, &project, (from, to), DAY, &["contact.unsubscribed"])?;
            Ok::<_, ApiError>((totals, changes, unsubscribed))
        })
        .await?;
    let days = (0..(to - from) / DAY)
        .map(|i| {
            let at = from + i * DAY;
            let (created, suppressed) =
                changes.iter().find(|(b, _, _)| *b == at).map_or((0, 0), |(_, c, s)| (*c, *s));
            let unsubscribed = unsubscribed.iter().filter(|(b, _, _)| *b == at).map(|(_, _, n)| n).sum();
            AudienceDay { date: clock::iso(at), created, unsubscribed, suppressed }
        })
        .collect();
    Ok(Json(AudienceView {
        from: clock::iso(from),
        to: clock::iso(to),
        total: totals.0,
        subscribed: totals.1,
        days,
    }))
}
