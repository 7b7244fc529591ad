//! Test-only routes mounted under `/test-probe`. Each uses the real guards and helpers the way a
//! product endpoint does, so the tests exercise them before every endpoint exists.

use rocket::serde::json::Json;
use rocket::{Route, State, get, post, routes};
use serde_json::{Value, json};
use tidings::AppState;
use tidings::api::guards::{PublicKey, SecretKey};
use tidings::api::idempotency::IdempotencyKey;
use tidings::api::json::{JsonBody, Medium};
use tidings::db::jobs::{self, NewJob};
use tidings::error::ApiError;

pub fn routes() -> Vec<Route> {
    routes![secret, public, idempotent, panic, internal]
}

/// Like every secret-key endpoint: answers with the project the key belongs to.
#[get("/secret")]
fn secret(key: SecretKey) -> Json<Value> {
    Json(json!({ "projectId": key.project.id }))
}

/// Like `/v1/track`: public key only.
#[post("/public")]
fn public(key: PublicKey) -> Json<Value> {
    Json(json!({ "projectId": key.project.id }))
}

/// Like `/v1/send`: the idempotency record and the request's visible effect (a job row) are
/// written in one transaction.
#[post("/idempotent", data = "<body>")]
async fn idempotent(
    state: &State<AppState>,
    key: SecretKey,
    idempotency: IdempotencyKey,
    body: JsonBody<Value, Medium>,
) -> Result<Json<Value>, ApiError> {
    let ttl = state.config.limits.idempotency_ttl_hours;
    let project = key.project.id;
    let id = state
        .db
        .write(move |tx| {
            idempotency.claim(tx, &project, 200, ttl)?;
            let job = NewJob::new("test.effect", &body.0).project(&project).at(i64::MAX);
            Ok::<_, ApiError>(jobs::enqueue(tx, &job)?)
        })
        .await?;
    Ok(Json(json!({ "success": true, "data": { "job": id } })))
}

#[get("/panic")]
fn panic() -> &'static str {
    panic!("a probe that panics")
}

#[get("/internal")]
fn internal() -> Result<Json<Value>, ApiError> {
    Err(ApiError::internal("a probe that fails"))
}
