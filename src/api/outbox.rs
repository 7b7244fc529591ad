//! `GET /outbox`: the messages the capture transport kept instead of sending.

use rocket::serde::json::Json;
use rocket::{FromForm, Route, State, get, routes};
use rusqlite::params;
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
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
            let mut stmt = conn.prepare_cached(
                "SELECT id, email_id, message_id, envelope_from, envelope_to, subject, length(raw), created_at FROM outbox
                 WHERE project_id = ?1 AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3",
            )?;
            let rows: Vec<(i64, Value)> = stmt
                .query_map(params![project, before, (limit + 1) as i64], |r| {
                    let id: i64 = r.get(0)?;
                    Ok((
                        id,
                        json!({
                            "id": id,
                            "emailId": r.get::<_, Option<String>>(1)?,
                            "messageId": r.get::<_, String>(2)?,
                            "from": r.get::<_, String>(3)?,
                            "to": r.get::<_, String>(4)?,
                            "subject": r.get::<_, String>(5)?,
                            "size": r.get::<_, i64>(6)?,
                            "createdAt": clock::iso(r.get(7)?),
                        }),
                    ))
                })?
                .collect::<Result<_, _>>()?;
            let total: Option<i64> = if before.is_none() {
                Some(conn.query_row("SELECT count(*) FROM outbox WHERE project_id = ?1", [&project], |r| r.get(0))?)
            } else {
                None
            };
            Ok::<_, ApiError>((rows, total))
        })
        .await?;
    let has_more = rows.len() > limit;
    let rows: Vec<(i64, Value)> = rows.into_iter().take(limit).collect();
    let next = if has_more { rows.last().map(|(id, _)| pagination::encode(id)) } else { None };
    Ok(Json(pagination::page(rows.into_iter().map(|(_, v)| v).collect(), next, total)))
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
    let found = state
        .db
        .run(move |conn| {
            Ok::<_, ApiError>(
                conn.query_row(
                    "SELECT email_id, message_id, envelope_from, envelope_to, subject, raw, created_at FROM outbox
                     WHERE id = ?1 AND project_id = ?2",
                    params![id, project],
                    |r| {
                        let raw = r.get::<_, Vec<u8>>(5)?;
                        let mut view = json!({
                            "id": id,
                            "emailId": r.get::<_, Option<String>>(0)?,
                            "messageId": r.get::<_, String>(1)?,
                            "from": r.get::<_, String>(2)?,
                            "to": r.get::<_, String>(3)?,
                            "subject": r.get::<_, String>(4)?,
                            "raw": String::from_utf8_lossy(&raw),
                            "createdAt": clock::iso(r.get(6)?),
                        });
                        if let (Value::Object(view), Value::Object(parts)) = (&mut view, parts(&raw)) {
                            view.extend(parts);
                        }
                        Ok(view)
                    },
                )
                .ok(),
            )
        })
        .await?;
    found.map(Json).ok_or_else(|| ApiError::not_found("Message not found"))
}
