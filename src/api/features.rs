//! `GET /config`: which optional features this server has on (no auth), for the dashboard.

use rocket::serde::json::Json;
use rocket::{State, get};

use crate::error::ApiError;
use crate::state::AppState;
use crate::views::server::{Features, Inbound, ServerConfig, Submission, Tracking};

documented_routes!(features);

/// Which optional features this server has on, and its sign-in providers.
#[utoipa::path(
    tag = "Server",
    operation_id = "serverConfig",
    security(()),
    responses((status = 200, description = "The features", body = ServerConfig)),
)]
#[get("/config")]
async fn features(state: &State<AppState>) -> Result<Json<ServerConfig>, ApiError> {
    let config = state.config.clone();
    // Whether a stranger may sign up now: with `disable_signups` unset, only until the first
    // account exists.
    let signups = state.db.run(move |conn| crate::core::accounts::signups_open(conn, &config)).await?;
    let config = &state.config;
    let providers = super::sso::providers(config);
    Ok(Json(ServerConfig {
        version: env!("CARGO_PKG_VERSION").into(),
        features: Features {
            billing: config.billing.enabled(),
            oauth: !providers.is_empty(),
            signups,
            tracking: config.tracking.opens || config.tracking.clicks,
            captured: config.smtp.captures(),
        },
        tracking: Tracking { opens: config.tracking.opens, clicks: config.tracking.clicks },
        oauth_providers: providers,
        submission: config.submission.is_on().then(|| Submission {
            host: config.submission.host(&config.public_url()),
            starttls_port: config.submission.listen.map(|a| a.port()),
            tls_port: config.submission.listen_tls.map(|a| a.port()),
        }),
        inbound: config.inbound.listen.map(|a| Inbound { mx: config.inbound_host(), port: a.port() }),
    }))
}
