//! Mail received (issue 31): `GET /inbound` (a cursor list, newest first; `contactId` narrows it
//! to one sender's contact), `GET /inbound/:id` with the content when a route stored it, its
//! attachments and its source.

use std::io::Cursor;

use rocket::http::{ContentType, Header};
use rocket::response::{self, Responder, Response};
use rocket::serde::json::Json;
use rocket::{FromForm, Request, State, get};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::pagination;
use crate::core::ids::{ContactId, InboundMessageId};
use crate::core::limits::bodies::Reserved;
use crate::db::inbound::{self as rows, Message};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::inbound::{InboundContent, InboundMessage, InboundMessageDetail};

documented_routes!(list, read, attachment, source);

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
    /// Only the messages of this sender's contact.
    #[field(name = "contactId")]
    #[param(rename = "contactId", value_type = Option<String>)]
    contact_id: Option<&'r str>,
}

/// Messages received, newest first.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "listInbound",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of messages", body = CursorPage<InboundMessage>)),
)]
#[get("/inbound?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<InboundMessage>>, ApiError> {
    let limit = pagination::limit(params.limit)?;
    let after: Option<(i64, String)> =
        params.cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let contact = match params.contact_id.filter(|c| !c.is_empty()) {
        Some(text) => Some(ContactId::parse(text).ok_or_else(|| ContactId::missing(text))?),
        None => None,
    };
    let first = after.is_none();
    let project = access.project.id;
    let (mut found, total) = state
        .db
        .run(move |conn| {
            let contact = contact.as_deref();
            let found = rows::messages(conn, &project, contact, after, limit + 1)?;
            let total = if first { Some(rows::count_messages(conn, &project, contact)?) } else { None };
            Ok::<_, ApiError>((found, total))
        })
        .await?;
    let has_more = found.len() > limit;
    found.truncate(limit);
    let next =
        if has_more { found.last().map(|m| pagination::encode(&(m.received_at, &m.id))) } else { None };
    let data = found.iter().map(InboundMessage::new).collect();
    Ok(Json(CursorPage::new(data, next, total)))
}

/// Message `id` of `project`.
async fn find(state: &AppState, project: String, id: InboundMessageId) -> Result<Message, ApiError> {
    let lookup = id.clone();
    let found = state.db.run(move |conn| Ok::<_, ApiError>(rows::message(conn, &project, &lookup)?)).await?;
    found.ok_or_else(|| InboundMessageId::missing(&id).into())
}

/// A stored message's content, read once the memory reading it takes is reserved from the body
/// budget: a message may be as large as `[inbound] max_message_bytes`, and many read at once
/// wait their turn (429 past the budget's wait) instead of exhausting the server. The share is
/// held while the caller reads what it needs.
async fn content(state: &AppState, message: &Message) -> Result<(Vec<u8>, Reserved), ApiError> {
    if !message.stored {
        return Err(not_stored());
    }
    let reserved = state.bodies.reserve(message.size.max(0) as u64).await?;
    let (project, id) = (message.project_id.clone(), message.id.clone());
    let raw = state.db.run(move |conn| Ok::<_, ApiError>(rows::content(conn, &project, &id)?)).await?;
    Ok((raw.ok_or_else(not_stored)?, reserved))
}

/// One message: what it says (headers, text, HTML, attachments by link) when a route stored it.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "getInbound",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The message", body = InboundMessageDetail)),
)]
#[get("/inbound/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundMessageId>,
) -> Result<Json<InboundMessageDetail>, ApiError> {
    let message = find(state, access.project.id, id?).await?;
    let content = if message.stored {
        let (raw, _reserved) = content(state, &message).await?;
        let (id, base) = (message.id.clone(), state.config.public_url());
        let read = move || InboundContent::new(&crate::mail::read::read(&raw), &id, &base);
        Some(crate::core::blocking::blocking(read).await?)
    } else {
        None
    };
    Ok(Json(InboundMessageDetail { message: InboundMessage::new(&message), content }))
}

/// Bytes to download, never shown inline or run: `nosniff`, a sandboxing policy, and a file
/// name.
struct Download {
    content_type: ContentType,
    filename: String,
    body: Vec<u8>,
}

impl<'r> Responder<'r, 'static> for Download {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        let name: String = self
            .filename
            .chars()
            .filter(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | ';'))
            .collect();
        Response::build()
            .header(self.content_type)
            .header(Header::new("Content-Disposition", format!("attachment; filename=\"{name}\"")))
            .header(Header::new("X-Content-Type-Options", "nosniff"))
            .header(Header::new("Content-Security-Policy", "default-src 'none'; sandbox"))
            .header(Header::new("Cache-Control", "private, no-store"))
            .sized_body(self.body.len(), Cursor::new(self.body))
            .ok()
    }
}

/// Attachment `n` (from 0) of a stored message.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "getInboundAttachment",
    params(("id" = String, Path), ("n" = i64, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The attachment's bytes", content((String = "application/octet-stream")))),
)]
#[get("/inbound/<id>/attachments/<n>")]
async fn attachment(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundMessageId>,
    n: usize,
) -> Result<Download, ApiError> {
    let message = find(state, access.project.id, id?).await?;
    let (raw, _reserved) = content(state, &message).await?;
    let part =
        crate::core::blocking::blocking(move || crate::mail::read::read(&raw).attachments.into_iter().nth(n))
            .await?
            .ok_or_else(|| ApiError::not_found("The message has no such attachment"))?;
    Ok(Download {
        content_type: ContentType::parse_flexible(&part.content_type).unwrap_or(ContentType::Binary),
        filename: part.filename.unwrap_or_else(|| format!("attachment-{n}")),
        body: part.content,
    })
}

/// A stored message's source, as received (`message/rfc822`).
#[utoipa::path(
    tag = "Inbound",
    operation_id = "getInboundSource",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The message as received", content((String = "message/rfc822")))),
)]
#[get("/inbound/<id>/raw")]
async fn source(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundMessageId>,
) -> Result<Download, ApiError> {
    let message = find(state, access.project.id, id?).await?;
    let (body, _reserved) = content(state, &message).await?;
    Ok(Download {
        content_type: ContentType::new("message", "rfc822"),
        filename: format!("{}.eml", message.id),
        body,
    })
}

fn not_stored() -> ApiError {
    ApiError::not_found("The message's content is not kept: add a store action to its route")
}
