//! `GET /contacts/<id>/emails`: the emails sent (or queued, or failed) to one contact, newest
//! first, as a cursor list. The contact page of the dashboard shows them.

use rocket::serde::json::Json;
use rocket::{Route, State, get, routes};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::db::emails::{self, Email};
use crate::db::{DbError, contacts};
use crate::error::ApiError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![for_contact]
}

/// An email as the API lists it: its state, never its body or one-off variables.
pub fn view(e: &Email) -> Value {
    json!({
        "id": e.id,
        "to": e.to_email,
        "from": e.from_email,
        "subject": e.subject,
        "type": e.kind,
        "sourceType": e.source_type,
        "templateId": e.template_id,
        "campaignId": e.campaign_id,
        "workflowId": e.workflow_id,
        "status": e.status,
        "attempts": e.attempts,
        "error": e.last_error,
        "createdAt": clock::iso(e.created_at),
        "sentAt": e.sent_at.map(clock::iso),
        "openedAt": e.opened_at.map(clock::iso),
        "clickedAt": e.clicked_at.map(clock::iso),
    })
}

#[get("/contacts/<id>/emails?<limit>&<cursor>")]
async fn for_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<Json<Value>, ApiError> {
    let limit = pagination::limit(limit)?;
    let after: Option<(i64, String)> =
        cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let first = after.is_none();
    let (project, contact) = (access.project.id, id.to_string());
    let found = state
        .db
        .run(move |conn| {
            if contacts::by_id(conn, &project, &contact)?.is_none() {
                return Ok(None);
            }
            let rows = emails::for_contact(conn, &project, &contact, after, limit + 1)?;
            let total: Option<i64> =
                if first { Some(emails::count_for_contact(conn, &project, &contact)?) } else { None };
            Ok::<_, DbError>(Some((rows, total)))
        })
        .await?;
    let (mut rows, total) = found.ok_or_else(|| ApiError::not_found("Contact not found"))?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    let next = if has_more { rows.last().map(|e| pagination::encode(&(e.created_at, &e.id))) } else { None };
    Ok(Json(pagination::page(rows.iter().map(view).collect(), next, total)))
}
