//! `GET /config`: which optional features this server has on (no auth), for the dashboard.

use rocket::serde::json::Json;
use rocket::{State, get};

use crate::state::AppState;
use crate::views::server::{Features, ServerConfig, Tracking};

documented_routes!(features);

/// Which optional features this server has on, and its sign-in providers.
#[utoipa::path(
    tag = "Server",
    operation_id = "serverConfig",
    security(()),
    responses((status = 200, description = "The features", body = ServerConfig)),
)]
#[get("/config")]
fn features(state: &State<AppState>) -> Json<ServerConfig> {
    let config = &state.config;
    let providers = super::sso::providers(config);
    Json(ServerConfig {
        version: env!("CARGO_PKG_VERSION").into(),
        features: Features {
            billing: config.billing.enabled(),
            oauth: !providers.is_empty(),
            signups: !config.auth.disable_signups,
            tracking: config.tracking.opens || config.tracking.clicks,
        },
        tracking: Tracking { opens: config.tracking.opens, clicks: config.tracking.clicks },
        oauth_providers: providers,
    })
}
