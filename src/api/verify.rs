//! `POST /v1/verify`: is an email address deliverable-looking.

use rocket::serde::json::Json;
use rocket::{Route, State, post, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use super::guards::SecretKey;
use super::json::{JsonBody, Small};
use crate::core::{contacts, verify as core_verify};
use crate::error::ApiError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![verify]
}

#[derive(Deserialize)]
struct VerifyRequest {
    email: Option<String>,
}

#[post("/v1/verify", data = "<body>")]
async fn verify(
    state: &State<AppState>,
    _key: SecretKey,
    body: JsonBody<VerifyRequest, Small>,
) -> Result<Json<Value>, ApiError> {
    let email =
        body.0.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let email = contacts::parse_email(&email, "email")?;
    let result = core_verify::verify(&state.dns, &email).await;
    Ok(Json(json!({ "success": true, "data": result })))
}
