//! The room the data takes (issue 35, item 4), for the dashboard's banner: `GET /server/storage`.

use rocket::State;
use rocket::get;
use rocket::serde::json::Json;
use serde::Serialize;
use utoipa::ToSchema;

use super::guards::Session;
use crate::state::AppState;

documented_routes!(storage);

/// The data directory's size against its budget.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Storage {
    /// Bytes the data takes, as last measured (every ten seconds).
    pub used_bytes: u64,
    /// `[database] disk_budget_bytes`; 0: no budget.
    pub budget_bytes: u64,
    /// Whether the data takes 90 % of its budget or more.
    pub warning: bool,
}

/// How much room the server's data takes, for any signed-in user: the dashboard warns at 90 % of
/// the budget, before writes start failing with a full disk (507).
#[utoipa::path(
    tag = "Server",
    operation_id = "getStorage",
    security(("session" = [])),
    responses((status = 200, description = "The data's size", body = Storage)),
)]
#[get("/server/storage")]
fn storage(state: &State<AppState>, _session: Session) -> Json<Storage> {
    let usage = &state.storage;
    Json(Storage { used_bytes: usage.used(), budget_bytes: usage.budget(), warning: usage.warning() })
}
