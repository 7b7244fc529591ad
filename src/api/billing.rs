//! Monthly caps and consumption: `/users/@me/projects/:id/billing-limits` and
//! `billing-consumption`. Any member reads them; owners and admins change the caps.

use rocket::serde::json::Json;
use rocket::{Route, State, get, put, routes};
use serde_json::Value;

use super::json::{JsonBody, Small};
use super::roles::{ProjectAdmin, ProjectMember};
use crate::clock;
use crate::core::billing;
use crate::db::DbError;
use crate::error::ApiError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![limits, set_limits, consumption]
}

#[get("/users/@me/projects/<_>/billing-limits")]
async fn limits(state: &State<AppState>, member: ProjectMember) -> Result<Json<Value>, ApiError> {
    let id = member.project.id;
    Ok(Json(state.db.run(move |conn| Ok::<_, DbError>(billing::limits(conn, &id)?)).await?))
}

/// Replaces the caps: each category a whole number or null (no cap); one left out has none.
/// A lower cap than what is used already refuses what comes next, not what was sent.
#[put("/users/@me/projects/<_>/billing-limits", data = "<body>")]
async fn set_limits(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: JsonBody<Value, Small>,
) -> Result<Json<Value>, ApiError> {
    let caps = billing::check_limits(&body.0)?;
    let id = admin.0.project.id;
    let saved = state
        .db
        .write(move |tx| {
            billing::set_limits(tx, &id, &caps)?;
            Ok::<_, DbError>(billing::limits(tx, &id)?)
        })
        .await?;
    Ok(Json(saved))
}

#[get("/users/@me/projects/<_>/billing-consumption")]
async fn consumption(state: &State<AppState>, member: ProjectMember) -> Result<Json<Value>, ApiError> {
    let id = member.project.id;
    let now = clock::now_ms();
    Ok(Json(state.db.run(move |conn| Ok::<_, DbError>(billing::consumption(conn, &id, now)?)).await?))
}
