//! `GET /outbox`: the messages the capture transport kept instead of sending.

use rocket::serde::json::Json;
use rocket::{FromForm, State, get};

use super::guards::ProjectAccess;
use super::pagination;
use crate::db::outbox;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::outbox::{Header, OutboxMessage, OutboxSource};

documented_routes!(list, read);

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
}

/// The project's captured messages, newest first.
#[utoipa::path(
    tag = "Sending",
    operation_id = "listOutbox",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of messages", body = CursorPage<OutboxMessage>)),
)]
#[get("/outbox?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<OutboxMessage>>, ApiError> {
    let limit = pagination::limit(params.limit)?;
    let before: Option<i64> = params.cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let project = access.project.id;
    let (rows, total) = state
        .db
        .run(move |conn| {
            let rows = outbox::list(conn, Some(&project), None, before, limit + 1)?;
            let total = if before.is_none() { Some(outbox::count(conn, &project)?) } else { None };
            Ok::<_, ApiError>((rows, total))
        })
        .await?;
    let has_more = rows.len() > limit;
    let rows: Vec<_> = rows.into_iter().take(limit).collect();
    let next = if has_more { rows.last().map(|m| pagination::encode(&m.id)) } else { None };
    Ok(Json(CursorPage::new(rows.iter().map(OutboxMessage::from).collect(), next, total)))
}

/// A captured message read back: its headers in order (unfolded), and its HTML and text parts.
fn parts(raw: &[u8]) -> (Vec<Header>, Option<String>, Option<String>) {
    let read = crate::mail::read::read(raw);
    let headers = read.headers.into_iter().map(|h| Header { name: h.name, value: h.value }).collect();
    (headers, read.html, read.text)
}

/// One captured message: its full source in `raw`, and `headers`, `html` and `text` read from it.
#[utoipa::path(
    tag = "Sending",
    operation_id = "getOutboxMessage",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The message", body = OutboxSource)),
)]
#[get("/outbox/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: i64,
) -> Result<Json<OutboxSource>, ApiError> {
    let project = access.project.id;
    // The memory a message takes to read and answer (its bytes, the parsed parts, the JSON) is
    // reserved from the body budget first: many large ones at once wait their turn.
    let lookup = project.clone();
    let head = state.db.run(move |conn| Ok::<_, ApiError>(outbox::head(conn, id, Some(&lookup))?)).await?;
    let head = head.ok_or_else(|| ApiError::not_found("Message not found"))?;
    let _reserved = state.bodies.reserve(head.size.max(0) as u64).await?;
    let found = state.db.run(move |conn| Ok::<_, ApiError>(outbox::get(conn, id, Some(&project))?)).await?;
    let (message, raw) = found.ok_or_else(|| ApiError::not_found("Message not found"))?;
    let (headers, html, text) = parts(&raw);
    Ok(Json(OutboxSource {
        message: OutboxMessage::from(&message),
        raw: String::from_utf8_lossy(&raw).into_owned(),
        headers,
        html,
        text,
    }))
}
