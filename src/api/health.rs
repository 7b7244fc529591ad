//! `GET /health`: is the server, its database and its scheduler working (no auth).

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{Route, State, get, routes};
use serde_json::{Value, json};

use crate::db::DbError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![health]
}

#[get("/health")]
async fn health(state: &State<AppState>) -> (Status, Json<Value>) {
    let database = state
        .db
        .run(|conn| Ok::<_, DbError>(conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?))
        .await
        .is_ok();
    let scheduler = state.scheduler.label();
    let status = if database { Status::Ok } else { Status::ServiceUnavailable };
    let body = json!({
        "status": if database { "ok" } else { "degraded" },
        "version": env!("CARGO_PKG_VERSION"),
        "database": if database { "ok" } else { "unavailable" },
        "scheduler": scheduler,
    });
    (status, Json(body))
}
