//! `GET /health`: is the server, its database and its scheduler working (no auth).

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, get};

use crate::state::AppState;
use crate::views::server::Health;

documented_routes!(health);

/// Whether the server, its database and its scheduler work (for load balancers and monitors).
#[utoipa::path(
    tag = "Server",
    operation_id = "health",
    security(()),
    responses(
        (status = 200, description = "Working", body = Health),
        (status = 503, description = "The database does not answer", body = Health),
    ),
)]
#[get("/health")]
async fn health(state: &State<AppState>) -> (Status, Json<Health>) {
    let database = state.db.run(|conn| crate::db::ping(conn)).await.is_ok();
    let scheduler = state.scheduler.label();
    let status = if database { Status::Ok } else { Status::ServiceUnavailable };
    let body = Health {
        status: if database { "ok" } else { "degraded" }.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        database: if database { "ok" } else { "unavailable" }.into(),
        scheduler: scheduler.into(),
    };
    (status, Json(body))
}
