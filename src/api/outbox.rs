//! `GET /outbox`: the messages the capture transport kept instead of sending; and for the
//! instance's owner while mail is captured, `GET /outbox/system`: the mail the server sent
//! itself (sign-up verification, password resets, invitations), which reaches no one else then.

use rocket::serde::json::Json;
use rocket::{FromForm, State, get};

use super::guards::{ProjectAccess, Session};
use super::pagination;
use crate::db::outbox;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::outbox::{Header, OutboxMessage, OutboxSource};

documented_routes!(list, read, system_list, system_read);

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
    page_of(state, access.project.id, params).await
}

/// A page of `project`'s captured messages, newest first.
async fn page_of(
    state: &AppState,
    project: String,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<OutboxMessage>>, ApiError> {
    let limit = pagination::limit(params.limit)?;
    let before: Option<i64> = params.cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
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
    source_of(state, access.project.id, id).await
}

/// Captured message `id` of `project`, read back.
async fn source_of(state: &AppState, project: String, id: i64) -> Result<Json<OutboxSource>, ApiError> {
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

/// The instance's owner may read the server's own mail now (403 saying why not).
async fn owner_of_instance(state: &AppState, session: Session) -> Result<(), ApiError> {
    let user = session.user;
    Ok(state.db.run(move |conn| crate::core::accounts::may_read_system_mail(conn, &user)).await?)
}

/// The mail the server sent itself (sign-up verification, password resets, invitations), newest
/// first: for the instance's owner (its first account), while mail is captured.
#[utoipa::path(
    tag = "Sending",
    operation_id = "listSystemOutbox",
    params(ListParams),
    security(("session" = [])),
    responses(
        (status = 200, description = "A page of messages", body = CursorPage<OutboxMessage>),
        (status = 403, description = "Not the instance's owner, or a relay is configured", body = crate::error::Envelope),
    ),
)]
#[get("/outbox/system?<params..>")]
async fn system_list(
    state: &State<AppState>,
    session: Session,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<OutboxMessage>>, ApiError> {
    owner_of_instance(state, session).await?;
    page_of(state, crate::db::projects::SYSTEM.to_string(), params).await
}

/// One message the server sent itself, read back: for the instance's owner, while mail is
/// captured.
#[utoipa::path(
    tag = "Sending",
    operation_id = "getSystemOutboxMessage",
    security(("session" = [])),
    responses(
        (status = 200, description = "The message", body = OutboxSource),
        (status = 403, description = "Not the instance's owner, or a relay is configured", body = crate::error::Envelope),
    ),
)]
#[get("/outbox/system/<id>")]
async fn system_read(
    state: &State<AppState>,
    session: Session,
    id: i64,
) -> Result<Json<OutboxSource>, ApiError> {
    owner_of_instance(state, session).await?;
    source_of(state, crate::db::projects::SYSTEM.to_string(), id).await
}
