//! Composing a mail: `POST /templates/preview`, a subject and body rendered for one contact by
//! the renderer the delivery worker uses ([`crate::core::outbound::render`]), so the dashboard's
//! preview is what is sent (nothing is stored or sent); and `GET /templates/starters`, the
//! layouts a new template or campaign may begin from.

use rocket::serde::json::Json;
use rocket::{State, get, post};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Message};
use crate::core::contacts::parse_email;
use crate::core::{compose, formats, outbound};
use crate::db::{DbError, contacts};
use crate::error::{ApiError, FieldError};
use crate::mail::text::text_of;
use crate::state::AppState;
use crate::views::templates::{Preview, PreviewContact, PreviewRequest, Starter};

documented_routes!(preview, starters);

/// The starter layouts: a welcome and a newsletter in blocks, a letter in Markdown, a receipt in
/// MJML.
#[utoipa::path(
    tag = "Templates",
    operation_id = "templateStarters",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The starters", body = Vec<Starter>)),
)]
#[get("/templates/starters")]
fn starters(_access: ProjectAccess) -> Json<Vec<Starter>> {
    Json(formats::starters::all().into_iter().map(Starter::from).collect())
}

/// Renders a subject and body for a contact, as delivery would; nothing is stored or sent.
#[utoipa::path(
    tag = "Templates",
    operation_id = "previewTemplate",
    request_body = PreviewRequest,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What the recipient would get", body = Preview)),
)]
#[post("/templates/preview", data = "<body>")]
async fn preview(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<PreviewRequest, Message>,
) -> Result<Json<Preview>, ApiError> {
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
    let rendered = crate::core::blocking::blocking(move || {
        compose::check_subject(&request.subject, "subject")?;
        let body = formats::compile_named(request.format.as_deref(), &request.body, "body")?.html;
        let base =
            outbound::LinkBase { public_url: &public_url, secret: &secret, email: None, campaign: None };
        let transient = request.data.unwrap_or_default();
        let rendered = outbound::render(&request.subject, &body, &to, contact.as_ref(), &transient, &base)
            .map_err(|(part, e)| {
                let mut item = FieldError::new(
                    part.field(),
                    "render_failed",
                    format!("{} cannot be rendered for this contact: {e}", part.field()),
                );
                if let Some(place) = e.place() {
                    item = item.received(place);
                }
                ApiError::validation(vec![item])
            })?;
        let text = text_of(&rendered.html);
        Ok::<_, ApiError>(Preview {
            subject: rendered.subject,
            html: rendered.html,
            text,
            contact: contact.map(|c| PreviewContact { id: c.id, email: c.email }),
        })
    })
    .await??;
    Ok(Json(rendered))
}
