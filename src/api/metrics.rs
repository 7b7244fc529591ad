//! `GET /metrics`: the Prometheus (OpenMetrics) text of `crate::metrics`, when `[metrics]
//! enabled`; with `[metrics] token` set, only for `Authorization: Bearer <token>`. Not under the project keys: it describes the whole server.

use rocket::http::ContentType;
use rocket::request::{FromRequest, Outcome, Request};
use rocket::{State, get};

use crate::clock;
use crate::db::{DbError, emails, jobs};
use crate::error::{ApiError, stash};
use crate::metrics::Snapshot;
use crate::state::AppState;

documented_routes!(metrics);

/// The content type of OpenMetrics text, which Prometheus scrapes.
fn open_metrics() -> ContentType {
    ContentType::new("application", "openmetrics-text")
        .with_params([("version", "1.0.0"), ("charset", "utf-8")])
}

/// A scrape the configuration allows.
pub struct Scraper;

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Scraper {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        let config = &req.rocket().state::<AppState>().expect("AppState is always managed").config.metrics;
        let refused = if !config.enabled {
            Some(ApiError::not_found("Metrics are turned off ([metrics] enabled = false)"))
        } else if let Some(token) = &config.token {
            let given =
                req.headers().get_one("Authorization").and_then(|h| h.strip_prefix("Bearer ")).unwrap_or("");
            let same = given.len() == token.len()
                && given.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
            (!same).then(|| {
                ApiError::missing_auth("Send the metrics token: Authorization: Bearer <[metrics] token>")
            })
        } else {
            None
        };
        match refused {
            None => Outcome::Success(Scraper),
            Some(e) => Outcome::Error(stash(req, e)),
        }
    }
}

/// Prometheus metrics in the OpenMetrics text format. With `[metrics] token` set, the token is
/// required; without it, only loopback clients are served.
#[utoipa::path(
    tag = "Server",
    operation_id = "metrics",
    security((), ("metricsToken" = [])),
    responses((
        status = 200,
        description = "The metrics",
        content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8",
        body = String,
    )),
)]
#[get("/metrics")]
async fn metrics(state: &State<AppState>, _scraper: Scraper) -> Result<(ContentType, String), ApiError> {
    let now = clock::now_ms();
    let resting = state
        .providers
        .status(now)
        .into_iter()
        .filter_map(|q| {
            let series = crate::core::providers::series(Some(&q.queue)).to_string();
            Some((series, (q.resting_until? - now + 999) / 1000))
        })
        .collect();
    let storage = (state.storage.used(), state.storage.budget());
    let snapshot = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>(Snapshot {
                queue: emails::queue_states(conn, now)?,
                jobs: jobs::counts(conn)?,
                refused_starts: crate::core::workflows::start::refused_starts(),
                resting,
                last_backup_ms: crate::db::backups::last_ok(conn)?,
                data_bytes: storage.0,
                data_budget_bytes: storage.1,
            })
        })
        .await?;
    Ok((open_metrics(), state.metrics.encode(&snapshot)))
}
