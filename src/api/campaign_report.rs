//! A campaign's report: `GET /campaigns/{id}/report` (opens and clicks over time, clicks per
//! link, people apart from machines, receiving providers), and its recipients with their
//! status, a page at a time (`GET /campaigns/{id}/recipients`) or whole as CSV
//! (`GET /campaigns/{id}/recipients/export`).

use rocket::futures::Stream;
use rocket::response::stream::ByteStream;
use rocket::serde::json::Json;
use rocket::{FromForm, State, get};

use super::csv_download::{Csv, csv_line};
use super::guards::ProjectAccess;
use super::ids::Param;
use super::pagination;
use crate::clock;
use crate::core::campaign_state;
use crate::core::ids::CampaignId;
use crate::core::{campaign_report, sandbox};
use crate::db::engagements::{self, RECIPIENT_STATUSES, RecipientFilter};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::campaign_report::{CampaignRecipient, CampaignReport};

documented_routes!(report, recipients, export);

/// Recipients read per page of the export.
const EXPORT_PAGE: i64 = 1_000;

/// The campaign's report.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "campaignReport",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The report", body = CampaignReport)),
)]
#[get("/campaigns/<id>/report")]
async fn report(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
) -> Result<Json<CampaignReport>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let answer = state
        .db
        .run(move |conn| {
            let campaign = campaign_state::find(conn, &project, &id)?;
            let report = campaign_report::report(conn, &campaign, clock::now_ms())?;
            let captured = sandbox::captured(conn)?;
            Ok::<_, ApiError>(CampaignReport::new(&campaign, report, captured))
        })
        .await?;
    let mut answer = answer;
    let now = clock::now_ms();
    for queue in &mut answer.queues {
        let rest = state.providers.resting_for(&queue.provider, now);
        queue.resting_until = (!rest.is_zero()).then(|| clock::iso(now + rest.as_millis() as i64));
    }
    Ok(Json(answer))
}

/// The query of the recipients' list and export.
#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct RecipientParams<'r> {
    /// Only recipients whose email went this far: `queued`, `sent`, `delivered`, `opened`,
    /// `clicked`, `bounced`, `complained`, `unsubscribed` or `failed`.
    #[param(value_type = Option<String>)]
    status: Option<&'r str>,
    /// Part of the address.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
    /// 1 to 100; default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
}

impl RecipientParams<'_> {
    fn filter(&self) -> Result<RecipientFilter, ApiError> {
        let status = match self.status.map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => match RECIPIENT_STATUSES.iter().find(|known| known.eq_ignore_ascii_case(s)) {
                Some(known) => Some((*known).to_string()),
                None => {
                    return Err(ApiError::invalid_field(
                        "status",
                        "invalid_enum_value",
                        format!("status must be one of {}", RECIPIENT_STATUSES.join(", ")),
                    ));
                }
            },
        };
        let search = self
            .search
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(200).collect::<String>().to_lowercase());
        Ok(RecipientFilter { status, search })
    }
}

/// The campaign's recipients in the order they were queued, with what became of each one's
/// email; `total` counts the filter's matches on the first page.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "campaignRecipients",
    params(("id" = String, Path), RecipientParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of recipients", body = CursorPage<CampaignRecipient>)),
)]
#[get("/campaigns/<id>/recipients?<params..>")]
async fn recipients(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    params: RecipientParams<'_>,
) -> Result<Json<CursorPage<CampaignRecipient>>, ApiError> {
    let id = id?;
    let filter = params.filter()?;
    let limit = pagination::limit(params.limit)?;
    let after: Option<String> =
        params.cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let project = access.project.id;
    let (rows, total) = state
        .db
        .run(move |conn| {
            let campaign = campaign_state::find(conn, &project, &id)?;
            let total = match after {
                None => Some(engagements::recipient_count(conn, &campaign.id, &filter)?),
                Some(_) => None,
            };
            let rows =
                engagements::recipients(conn, &campaign.id, &filter, after.as_deref(), limit as i64 + 1)?;
            Ok::<_, ApiError>((rows, total))
        })
        .await?;
    let more = rows.len() > limit;
    let rows: Vec<_> = rows.into_iter().take(limit).collect();
    let next = rows.last().filter(|_| more).map(|r| pagination::encode(&r.email_id));
    Ok(Json(CursorPage::new(rows.iter().map(CampaignRecipient::from).collect(), next, total)))
}

/// The campaign's recipients (the filter's, when one is given) as CSV, read a page at a time.
#[utoipa::path(
    tag = "Campaigns",
    operation_id = "exportCampaignRecipients",
    params(("id" = String, Path), RecipientParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "One row per recipient", content_type = "text/csv", body = String)),
)]
#[get("/campaigns/<id>/recipients/export?<params..>")]
async fn export(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<CampaignId>,
    params: RecipientParams<'_>,
) -> Result<Csv<impl Stream<Item = Vec<u8>>>, ApiError> {
    let id = id?;
    let filter = params.filter()?;
    let project = access.project.id;
    let campaign = state.db.run(move |conn| campaign_state::find(conn, &project, &id)).await?;
    let (db, name) = (state.db.clone(), format!("campaign-{}-recipients.csv", campaign.id));
    let body = ByteStream! {
        yield csv_line(&CampaignRecipient::CSV_HEADER);
        let mut after: Option<String> = None;
        loop {
            let (campaign, filter, from) = (campaign.id.clone(), filter.clone(), after.clone());
            let page = match db
                .run(move |conn| engagements::recipients(conn, &campaign, &filter, from.as_deref(), EXPORT_PAGE))
                .await
            {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!("the recipients export stopped: {e}");
                    break;
                }
            };
            let mut chunk = Vec::new();
            for row in &page {
                let fields = CampaignRecipient::from(row).csv_fields();
                chunk.extend(csv_line(&fields.iter().map(String::as_str).collect::<Vec<_>>()));
            }
            if !chunk.is_empty() {
                yield chunk;
            }
            match page.last() {
                Some(last) if page.len() as i64 == EXPORT_PAGE => after = Some(last.email_id.clone()),
                _ => break,
            }
        }
    };
    Ok(Csv::new(body, &name))
}
