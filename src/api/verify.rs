//! `POST /v1/verify`: is an email address deliverable-looking.

use rocket::serde::json::Json;
use rocket::{State, post};

use super::guards::SecretKey;
use super::json::{JsonBody, Small};
use crate::core::{contacts, verify as core_verify};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::Success;
use crate::views::track::VerifyBody;

documented_routes!(verify);

/// Says whether an address looks deliverable: its syntax, its domain's DNS (MX, A, AAAA and a
/// website), and whether it is disposable, an alias, a likely typo, plus-addressed or personal.
#[utoipa::path(
    tag = "Sending",
    operation_id = "verifyEmail",
    request_body = VerifyBody,
    security(("secretKey" = [])),
    responses((status = 200, description = "The verdict", body = Success<core_verify::Verification>)),
)]
#[post("/v1/verify", data = "<body>")]
async fn verify(
    state: &State<AppState>,
    _key: SecretKey,
    body: JsonBody<VerifyBody, Small>,
) -> Result<Json<Success<core_verify::Verification>>, ApiError> {
    let email =
        body.0.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let email = contacts::parse_email(&email, "email")?;
    let result = core_verify::verify(&state.dns, &email).await;
    Ok(Json(Success::new(result)))
}
