//! `POST /templates/preview`: a subject and body rendered for one contact by the renderer the
//! delivery worker uses ([`crate::core::outbound::render`]), so the dashboard's preview is what
//! is sent. Nothing is stored or sent.

use rocket::serde::json::Json;
use rocket::{Route, State, post, routes};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Message};
use crate::core::contacts::parse_email;
use crate::core::{compose, outbound};
use crate::db::{DbError, contacts};
use crate::error::{ApiError, FieldError};
use crate::mail::message::text_of;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![preview]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PreviewRequest {
    subject: String,
    body: String,
    /// Render for this contact (its custom fields and links)…
    contact_id: Option<String>,
    /// …or for this address (the contact's, when it is one).
    email: Option<String>,
    /// One-off variables on top of the contact's fields.
    data: Option<Map<String, Value>>,
}

#[post("/templates/preview", data = "<body>")]
async fn preview(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<PreviewRequest, Message>,
) -> Result<Json<Value>, ApiError> {
    let request = body.0;
    let email = request.email.as_deref().map(|e| parse_email(e, "email")).transpose()?;
    let (project, contact_id) = (access.project.id, request.contact_id.clone());
    let contact = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>(match (contact_id, email.as_deref()) {
                (Some(id), _) => Some(contacts::by_id(conn, &project, &id)?.ok_or(id)),
                (None, Some(email)) => contacts::by_email(conn, &project, email)?.map(Ok),
                (None, None) => None,
            })
        })
        .await?
        .transpose()
        .map_err(|_| {
            ApiError::invalid_field("contactId", "not_found", "No contact of this project has this id")
        })?;
    let to = contact.as_ref().map(|c| c.email.clone()).or(request.email).unwrap_or_default();
    let public_url = state.config.public_url();
    let secret = state.secrets.link.clone();
    let rendered = super::blocking(move || {
        compose::check_subject(&request.subject, "subject")?;
        compose::check_body(&request.body, "body")?;
        let base = outbound::LinkBase { public_url: &public_url, secret: &secret, email: None };
        let transient = request.data.unwrap_or_default();
        let rendered =
            outbound::render(&request.subject, &request.body, &to, contact.as_ref(), &transient, &base)
                .map_err(|(part, e)| {
                    let mut item = FieldError::new(
                        part.field(),
                        "render_failed",
                        format!("{} cannot be rendered for this contact: {e}", part.field()),
                    );
                    if let Some(line) = e.line {
                        item = item.received(json!({ "line": line }));
                    }
                    ApiError::validation(vec![item])
                })?;
        let text = text_of(&rendered.html);
        Ok::<_, ApiError>(json!({
            "subject": rendered.subject,
            "html": rendered.html,
            "text": text,
            "contact": contact.map(|c| json!({ "id": c.id, "email": c.email })),
        }))
    })
    .await??;
    Ok(Json(rendered))
}
