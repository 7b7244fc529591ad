//! `GET /config`: which optional features this server has on (no auth), for the dashboard.

use rocket::serde::json::Json;
use rocket::{Route, State, get, routes};
use serde_json::{Value, json};

use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![features]
}

#[get("/config")]
fn features(state: &State<AppState>) -> Json<Value> {
    let config = &state.config;
    let tracking = config.tracking.opens || config.tracking.clicks;
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "features": {
            "billing": config.billing.enabled(),
            "oauth": !config.auth.oidc.is_empty() || config.auth.github.is_some(),
            "signups": !config.auth.disable_signups,
            "tracking": tracking,
        },
        "tracking": { "opens": config.tracking.opens, "clicks": config.tracking.clicks },
        "oauthProviders": super::sso::providers(config),
    }))
}
