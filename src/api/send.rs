//! `POST /v1/send`: queue transactional email.

use rocket::serde::json::Json;
use rocket::{State, post};

use super::guards::SecretKey;
use super::idempotency::IdempotencyKey;
use super::json::{JsonBody, Message};
use crate::clock;
use crate::config::LimitsConfig;
use crate::core::compose;
use crate::core::data::DataPatch;
use crate::core::send::{self, Send};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::Success;
use crate::views::send::{SendBody, Sent};

documented_routes!(send_email);

/// Checks the body; everything that needs no database.
fn check(body: SendBody, limits: &LimitsConfig) -> Result<Send, ApiError> {
    let to = body.to.ok_or_else(|| ApiError::invalid_field("to", "required", "to is required"))?;
    let recipients = send::recipients(&to)?;
    if body.template.is_none() && (body.subject.is_none() || body.body.is_none()) {
        let missing = if body.subject.is_none() { "subject" } else { "body" };
        return Err(ApiError::invalid_field(
            missing,
            "required",
            "give a template, or both subject and body",
        ));
    }
    if let Some(subject) = &body.subject {
        compose::check_subject(subject, "subject")?;
    }
    if let Some(html) = &body.body {
        compose::check_body(html, "body")?;
    }
    let from = body.from.as_ref().map(|f| compose::mailbox(f, "from")).transpose()?;
    let name =
        body.name.as_deref().map(|n| compose::check_name(n, "name")).transpose()?.filter(|n| !n.is_empty());
    let headers =
        body.headers.as_ref().map(|h| compose::check_headers(h, "headers")).transpose()?.unwrap_or_default();
    let reply = body.reply.as_deref().map(|r| crate::core::contacts::parse_email(r, "reply")).transpose()?;
    let attachments =
        send::check_attachments(body.attachments.as_deref().unwrap_or(&[]), limits.attachment_bytes)?;
    let size = body.body.as_ref().map_or(0, String::len)
        + attachments.iter().map(|a| a.content.len()).sum::<usize>();
    if size as u64 > limits.message_bytes {
        return Err(ApiError::payload_too_large(limits.message_bytes));
    }
    Ok(Send {
        recipients,
        template: body.template,
        subject: body.subject,
        body: body.body,
        from,
        name,
        subscribed: body.subscribed,
        data: DataPatch::parse(body.data.as_ref(), "data")?,
        headers,
        reply,
        attachments,
    })
}

/// Sends a transactional email now, to each recipient, upserting each as a contact.
#[utoipa::path(
    tag = "Sending",
    operation_id = "sendEmail",
    request_body = SendBody,
    params(super::idempotency::Header),
    security(("secretKey" = [])),
    responses((status = 200, description = "Queued, one email per recipient", body = Success<Sent>)),
)]
#[post("/v1/send", data = "<body>")]
async fn send_email(
    state: &State<AppState>,
    key: SecretKey,
    idempotency: IdempotencyKey,
    body: JsonBody<SendBody, Message>,
) -> Result<Json<Success<Sent>>, ApiError> {
    let config = state.config.clone();
    let request = crate::core::blocking::blocking(move || check(body.0, &config.limits)).await??;
    let project = key.project.id;
    let ttl = state.config.limits.idempotency_ttl_hours;
    // Repeatable: everything it does is in the database, so it needs no savepoint of its own.
    let queued = state
        .db
        .write_repeatable(move |tx| {
            idempotency.claim(tx, &project, 200, ttl)?;
            Ok::<_, ApiError>(send::queue(tx, &project, &request, clock::now_ms())?)
        })
        .await?;
    Ok(Json(Success::new(Sent::from(queued.as_slice()))))
}
