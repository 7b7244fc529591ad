//! A contact's history: `GET /contacts/<id>/emails`, the emails sent (or queued, or failed) to
//! it, and `GET /contacts/<id>/timeline`, those emails, its events and its subscription changes
//! as one list. Both are newest first, as cursor lists; the contact page shows the timeline.

use rocket::serde::json::Json;
use rocket::{State, get};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::pagination;
use crate::core::contacts as core_contacts;
use crate::core::ids::ContactId;
use crate::db::emails;
use crate::db::timeline::{self as history, Position};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::emails::Email as EmailView;
use crate::views::timeline::TimelineEntry;

documented_routes!(for_contact, timeline);

/// The emails sent, queued or failed to a contact, newest first.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "listContactEmails",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, description = "1 to 100 (larger is taken as 100); default 20."),
        ("cursor" = Option<String>, Query, description = "The previous page's `cursor`."),
        ("id" = String, Path),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of emails", body = CursorPage<EmailView>)),
)]
#[get("/contacts/<id>/emails?<limit>&<cursor>")]
async fn for_contact(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<Json<CursorPage<EmailView>>, ApiError> {
    let id = id?;
    let limit = pagination::limit(limit)?;
    let after: Option<(i64, String)> =
        cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let first = after.is_none();
    let (project, contact) = (access.project.id, id);
    let (mut rows, total) = state
        .db
        .run(move |conn| {
            core_contacts::find(conn, &project, &contact)?;
            let rows = emails::for_contact(conn, &project, &contact, after, limit + 1)?;
            let total: Option<i64> =
                if first { Some(emails::count_for_contact(conn, &project, &contact)?) } else { None };
            Ok::<_, ApiError>((rows, total))
        })
        .await?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    let next = if has_more { rows.last().map(|e| pagination::encode(&(e.created_at, &e.id))) } else { None };
    Ok(Json(CursorPage::new(rows.iter().map(EmailView::from).collect(), next, total)))
}

/// A contact's history: its emails (with how far each went), its events and its subscription
/// changes, newest first. `email.*` events are folded into their email's status.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "contactTimeline",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, description = "1 to 100 (larger is taken as 100); default 20."),
        ("cursor" = Option<String>, Query, description = "The previous page's `cursor`."),
        ("id" = String, Path),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of the history", body = CursorPage<TimelineEntry>)),
)]
#[get("/contacts/<id>/timeline?<limit>&<cursor>")]
async fn timeline(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<Json<CursorPage<TimelineEntry>>, ApiError> {
    let id = id?;
    let limit = pagination::limit(limit)?;
    let after: Option<Position> = cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let (project, contact) = (access.project.id, id);
    let first = after.is_none();
    let (mut rows, total) = state
        .db
        .run(move |conn| {
            core_contacts::find(conn, &project, &contact)?;
            let rows = history::page(conn, &project, &contact, after.as_ref(), limit + 1)?;
            let total = if first { Some(history::count(conn, &project, &contact)?) } else { None };
            Ok::<_, ApiError>((rows, total))
        })
        .await?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    let next = if has_more { rows.last().map(|(_, p)| pagination::encode(p)) } else { None };
    let entries = rows.into_iter().map(|(entry, position)| TimelineEntry::new(entry, &position)).collect();
    Ok(Json(CursorPage::new(entries, next, total)))
}
