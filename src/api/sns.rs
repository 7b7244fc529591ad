//! `POST /webhooks/sns` (when `[webhooks] sns_enabled`; also at `/webhooks/incoming/sns`,
//! `/api/webhooks/sns` and `/api/webhooks/incoming/sns`, where Plunk deployments point SNS): SES bounce, complaint and delivery
//! notifications through Amazon SNS. Only messages of the configured topics whose signature
//! verifies are acted on ([`crate::adapters::sns`]); anything else answers 403 and changes nothing. A
//! subscription is confirmed by visiting its `SubscribeURL`; a notification about an email this
//! server did not send is acknowledged and ignored, so SNS does not retry it.

use rocket::serde::json::Json;
use rocket::{State, post};
use serde_json::Value;

use super::json::{JsonBody, Medium};
use crate::adapters::sns::Message;
use crate::clock;
use crate::core::{feedback, ses};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::receivers::SnsAnswer;

documented_routes!(receive, receive_incoming, receive_api, receive_api_incoming);

/// SES notifications through Amazon SNS (with `[webhooks] sns_enabled`): acted on only when the
/// message's signature verifies and its topic is configured (403 otherwise).
#[utoipa::path(
    tag = "Receivers",
    operation_id = "receiveSns",
    request_body(content = Object, description = "An SNS message (its `Type`, `TopicArn`, `Message`, `Signature`, ...)"),
    security(()),
    responses((status = 200, description = "Taken", body = SnsAnswer)),
)]
#[post("/webhooks/sns", data = "<body>")]
async fn receive(
    state: &State<AppState>,
    body: JsonBody<Value, Medium>,
) -> Result<Json<SnsAnswer>, ApiError> {
    take(state, body.0).await
}

/// `POST /webhooks/sns` at the address Plunk's own deployments subscribe.
#[utoipa::path(
    tag = "Receivers",
    operation_id = "receiveSnsIncoming",
    request_body(content = Object, description = "An SNS message, as `POST /webhooks/sns` takes it"),
    security(()),
    responses((status = 200, description = "Taken", body = SnsAnswer)),
)]
#[post("/webhooks/incoming/sns", data = "<body>")]
async fn receive_incoming(
    state: &State<AppState>,
    body: JsonBody<Value, Medium>,
) -> Result<Json<SnsAnswer>, ApiError> {
    take(state, body.0).await
}

/// `POST /webhooks/sns` under Plunk's `/api` prefix.
#[utoipa::path(
    tag = "Receivers",
    operation_id = "receiveSnsApi",
    request_body(content = Object, description = "An SNS message, as `POST /webhooks/sns` takes it"),
    security(()),
    responses((status = 200, description = "Taken", body = SnsAnswer)),
)]
#[post("/api/webhooks/sns", data = "<body>")]
async fn receive_api(
    state: &State<AppState>,
    body: JsonBody<Value, Medium>,
) -> Result<Json<SnsAnswer>, ApiError> {
    take(state, body.0).await
}

/// `POST /webhooks/sns` under Plunk's `/api` prefix and incoming path.
#[utoipa::path(
    tag = "Receivers",
    operation_id = "receiveSnsApiIncoming",
    request_body(content = Object, description = "An SNS message, as `POST /webhooks/sns` takes it"),
    security(()),
    responses((status = 200, description = "Taken", body = SnsAnswer)),
)]
#[post("/api/webhooks/incoming/sns", data = "<body>")]
async fn receive_api_incoming(
    state: &State<AppState>,
    body: JsonBody<Value, Medium>,
) -> Result<Json<SnsAnswer>, ApiError> {
    take(state, body.0).await
}

/// Acts on one SNS message, whichever address it came to.
async fn take(state: &AppState, body: Value) -> Result<Json<SnsAnswer>, ApiError> {
    if !state.config.webhooks.sns_enabled {
        return Err(ApiError::not_found("SNS notifications are not enabled ([webhooks] sns_enabled)"));
    }
    let message = Message::parse(&body).map_err(ApiError::bad_request)?;
    if let Err(why) = state.sns.verify(&message).await {
        tracing::warn!(topic = message.topic_arn, "refused an SNS message: {why}");
        return Err(ApiError::forbidden(format!("the SNS message was refused: {why}")));
    }
    match message.kind.as_str() {
        "SubscriptionConfirmation" => {
            state.sns.confirm(&message).await.map_err(ApiError::bad_request)?;
            tracing::info!(topic = message.topic_arn, "confirmed the SNS subscription");
            Ok(Json(SnsAnswer { success: true, confirmed: Some(true), ..SnsAnswer::default() }))
        }
        "UnsubscribeConfirmation" => Ok(Json(SnsAnswer { success: true, ..SnsAnswer::default() })),
        _ => {
            let notification: Value = serde_json::from_str(&message.message).unwrap_or(Value::Null);
            let Some(report) = ses::report(&notification) else {
                return Ok(Json(SnsAnswer { success: true, applied: Some(false), ..SnsAnswer::default() }));
            };
            let reputation = state.config.reputation.clone();
            let applied = state
                .db
                .write(move |tx| {
                    let about = (report.message_ids.as_slice(), report.recipients.as_slice());
                    feedback::apply_to_message(tx, about, &report.feedback, &reputation, clock::now_ms())
                })
                .await?;
            let event = applied.event;
            Ok(Json(SnsAnswer {
                success: true,
                applied: Some(event.is_some()),
                event: Some(event.map(str::to_string)),
                ..SnsAnswer::default()
            }))
        }
    }
}
