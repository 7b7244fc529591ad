//! `GET /outbox`: the messages the capture transport kept instead of sending.

use rocket::serde::json::Json;
use rocket::{FromForm, Route, State, get, routes};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::db::outbox::{self, Captured};
use crate::error::ApiError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![list, read]
}

#[derive(FromForm)]
struct ListParams<'r> {
    limit: Option<&'r str>,
    cursor: Option<&'r str>,
}

#[get("/outbox?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<Value>, ApiError> {
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
    let rows: Vec<(i64, Value)> = rows.iter().map(|m| (m.id, view(m))).collect();
    let has_more = rows.len() > limit;
    let rows: Vec<(i64, Value)> = rows.into_iter().take(limit).collect();
    let next = if has_more { rows.last().map(|(id, _)| pagination::encode(id)) } else { None };
    Ok(Json(pagination::page(rows.into_iter().map(|(_, v)| v).collect(), next, total)))
}

fn view(m: &Captured) -> Value {
    json!({
        "id": m.id,
        "emailId": m.email_id,
        "messageId": m.message_id,
        "from": m.from,
        "to": m.to,
        "subject": m.subject,
        "size": m.size,
        "createdAt": clock::iso(m.created_at),
    })
}

/// A captured message read back: its headers in order (unfolded), and its HTML and text parts.
fn parts(raw: &[u8]) -> Value {
    let Some(message) = mail_parser::MessageParser::default().parse(raw) else {
        return json!({ "headers": [], "html": null, "text": null });
    };
    let headers: Vec<Value> = message
        .headers_raw()
        .map(|(name, value)| {
            let value = value.replace("\r\n", "").replace('\n', "");
            json!({ "name": name, "value": value.trim() })
        })
        .collect();
    json!({
        "headers": headers,
        "html": message.body_html(0),
        "text": message.body_text(0),
    })
}

/// One captured message: its full source in `raw`, and `headers`, `html` and `text` read from it.
#[get("/outbox/<id>")]
async fn read(state: &State<AppState>, access: ProjectAccess, id: i64) -> Result<Json<Value>, ApiError> {
    let project = access.project.id;
    let found = state.db.run(move |conn| Ok::<_, ApiError>(outbox::get(conn, id, Some(&project))?)).await?;
    let (message, raw) = found.ok_or_else(|| ApiError::not_found("Message not found"))?;
    let mut view = view(&message);
    view["raw"] = json!(String::from_utf8_lossy(&raw));
    if let (Value::Object(view), Value::Object(parts)) = (&mut view, parts(&raw)) {
        view.extend(parts);
    }
    Ok(Json(view))
}
