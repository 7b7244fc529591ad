//! Contacts: list, upsert, read, change, delete, and look up by email.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};
use serde::{Deserialize, Serialize};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Medium};
use super::pagination;
use crate::clock;
use crate::core::confirmations::Mailer;
use crate::core::contact_filters::Narrowing;
use crate::core::contacts::{self as core_contacts, Changes, Upsert};
use crate::core::data::DataPatch;
use crate::core::ids::ContactId;
use crate::core::topics;
use crate::db::contacts::{self, After, Indexing, ListQuery, Sort};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::contacts::{
    ChangedContact, Contact, ContactChanges, ListedContact, LookedUp, Lookup, LookupResult, NewContact,
    UpsertMeta, UpsertedContact,
};

documented_routes!(list, create, read, change, remove, lookup);

/// Where the next page of a contact list starts, as carried in its cursor.
#[derive(Serialize, Deserialize)]
struct Position {
    /// Sort field and direction the cursor was made for.
    s: String,
    d: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    q: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    e: Option<String>,
}

/// The query of `GET /contacts`; values are checked by hand so bad ones get clear errors.
#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// 1 to 100 (larger is taken as 100); default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
    /// Part of the email, any case.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
    /// Only subscribed (`true`) or unsubscribed (`false`) contacts; both when absent.
    #[param(value_type = Option<bool>)]
    subscribed: Option<&'r str>,
    /// `createdAt` (the default) or `email`; anything else is `createdAt`.
    #[param(value_type = Option<String>)]
    sort: Option<&'r str>,
    /// `desc` (the default) or `asc`.
    #[param(value_type = Option<String>)]
    dir: Option<&'r str>,
    /// Part of the email or of any custom field's value, any case.
    #[param(value_type = Option<String>)]
    q: Option<&'r str>,
    /// Only the members of this segment (a dynamic one's as its condition holds now).
    #[field(name = "segmentId")]
    #[param(rename = "segmentId", value_type = Option<String>)]
    segment_id: Option<&'r str>,
    /// Only the contacts subscribed to this topic (by choice, or by the topic's default).
    #[field(name = "topicId")]
    #[param(rename = "topicId", value_type = Option<String>)]
    topic_id: Option<&'r str>,
    /// A numbered page (1 for the first) instead of a `cursor`; `total` is then counted on
    /// every page.
    #[param(value_type = Option<i64>, minimum = 1)]
    page: Option<&'r str>,
}

/// Lists the project's contacts, newest first unless sorted otherwise.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "listContacts",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of contacts", body = CursorPage<ListedContact>)),
)]
#[get("/contacts?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<ListedContact>>, ApiError> {
    let ListParams { limit, cursor, search, subscribed, sort, dir, q, segment_id, topic_id, page } = params;
    let limit = pagination::limit(limit)?;
    let page = match page {
        None => None,
        Some(_) if cursor.is_some_and(|c| !c.is_empty()) => {
            return Err(ApiError::bad_request("Give either page or cursor, not both"));
        }
        Some(raw) => Some(pagination::page_params(Some(raw), None, 1)?.0),
    };
    let narrowing = Narrowing::new(q, segment_id, topic_id, "q")?;
    let subscribed = pagination::boolean("subscribed", subscribed)?;
    let (sort, sort_name) = match sort {
        Some("email") => (Sort::Email, "email"),
        _ => (Sort::CreatedAt, "createdAt"),
    };
    let descending = dir != Some("asc");
    let dir_name = if descending { "desc" } else { "asc" };
    let after = match cursor.filter(|c| !c.is_empty()) {
        None => After::Start,
        Some(cursor) => {
            let p: Position = pagination::decode(cursor)?;
            if p.s != sort_name || p.d != dir_name {
                return Err(ApiError::bad_request(
                    "This cursor belongs to a list with another sort or dir; keep them the same across pages",
                ));
            }
            match (sort, p.t, p.q, p.e) {
                (Sort::CreatedAt, Some(t), Some(q), _) => After::CreatedAt(t, q),
                (Sort::Email, _, _, Some(e)) => After::Email(e),
                _ => return Err(pagination::malformed()),
            }
        }
    };
    let search = search.map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty());
    let first_page = after == After::Start;
    let offset = page.map_or(0, |p| pagination::offset(p, limit as i64)) as usize;
    let mut query = ListQuery {
        project: access.project.id,
        search,
        search_indexed: false,
        subscribed,
        sort,
        descending,
        after,
        offset,
        limit: limit + 1,
        within: Vec::new(),
    };
    let project = query.project.clone();
    // Searching the fields or a dynamic segment reads every contact of the project: one such
    // list at a time per project, as with segment counts.
    let _turn = match narrowing.scans() {
        false => None,
        true => Some(crate::core::segments::counting_turn(&project).await?),
    };
    let (mut rows, total, mut views) = state
        .db
        .run(move |conn| {
            query.within = narrowing.within(conn, &project, clock::now_ms())?;
            if let Some(search) = &query.search {
                query.search_indexed = contacts::plan_search(conn, search)?;
            }
            let rows = contacts::list(conn, &query)?;
            let total =
                if first_page || page.is_some() { Some(contacts::count(conn, &query)?) } else { None };
            // The page's suppressions (a point lookup each, at most a page of them).
            let suppressed = rows
                .iter()
                .map(|c| crate::db::suppressions::get(conn, &c.id))
                .collect::<crate::db::Result<Vec<_>>>()?;
            Ok::<_, crate::core::Error>((rows, total, suppressed))
        })
        .await
        .map(|(rows, total, suppressed)| {
            let views: Vec<ListedContact> =
                rows.iter().zip(&suppressed).map(|(c, s)| ListedContact::new(c, s.as_ref())).collect();
            (rows, total, views)
        })?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    views.truncate(limit);
    let next = rows.last().filter(|_| has_more).map(|last| {
        let (s, d) = (sort_name.to_string(), dir_name.to_string());
        pagination::encode(&match sort {
            Sort::CreatedAt => Position { s, d, t: Some(last.created_at), q: Some(last.seq), e: None },
            Sort::Email => Position { s, d, t: None, q: None, e: Some(last.email.clone()) },
        })
    });
    Ok(Json(CursorPage::new(views, next, total)))
}

/// Creates a contact, or updates the one with that email.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "upsertContact",
    request_body = NewContact,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The contact, made or changed", body = UpsertedContact)),
)]
#[post("/contacts", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewContact, Medium>,
) -> Result<Json<UpsertedContact>, ApiError> {
    let body = body.0;
    let Some(email) = body.email else { return Err(ApiError::simple_bad_request("email is required")) };
    let email = core_contacts::parse_email(&email, "email")?;
    let patch = DataPatch::parse(body.data.as_ref(), "data")?;
    let consent = super::track::consenting(body.confirm, body.consent, (None, None))?;
    let (subscribed, default_subscribed) = consent.upsert_subscription(body.subscribed)?;
    let project = access.project.id;
    let (config, secrets) = (state.config.clone(), state.secrets.clone());
    let upserted = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            let request = Upsert {
                email: &email,
                subscribed,
                default_subscribed,
                data: &patch,
                source: "api",
                indexing: Indexing::AtCommit,
                new_likely: false,
            };
            let upserted = core_contacts::put(tx, &project, &request, now)?;
            let mailer = Mailer { config: &config, secret: &secrets.link };
            consent.apply(tx, &mailer, &upserted.contact, now)?;
            Ok::<_, crate::core::Error>(upserted)
        })
        .await?;
    Ok(Json(UpsertedContact {
        contact: Contact::from(&upserted.contact),
        meta: UpsertMeta { is_new: upserted.is_new, is_update: !upserted.is_new },
    }))
}

/// Reads a contact, with its suppression.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "getContact",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The contact", body = ListedContact)),
)]
#[get("/contacts/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
) -> Result<Json<ListedContact>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let (contact, suppression, states, pending) = state
        .db
        .run(move |conn| {
            let contact = core_contacts::find(conn, &project, &id)?;
            let suppression = crate::db::suppressions::get(conn, &contact.id)?;
            let states = topics::states(conn, &contact)?;
            let pending = crate::core::confirmations::pending(conn, &contact, clock::now_ms())?;
            Ok::<_, ApiError>((contact, suppression, states, pending))
        })
        .await?;
    // A hard bounce or a complaint keeps MARKETING mail away from the contact.
    Ok(Json(ListedContact {
        topics: Some(states),
        pending: pending.as_ref().map(Into::into),
        ..ListedContact::new(&contact, suppression.as_ref())
    }))
}

/// Changes a contact's email, subscription, custom fields or topics.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "updateContact",
    params(("id" = String, Path)),
    request_body = ContactChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The contact as changed", body = ChangedContact)),
)]
#[patch("/contacts/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
    body: JsonBody<ContactChanges, Medium>,
) -> Result<Json<ChangedContact>, ApiError> {
    let id = id?;
    let (id, body) = (id, body.0);
    let email = body.email.as_deref().map(|e| core_contacts::parse_email(e, "email")).transpose()?;
    let patch = DataPatch::parse(body.data.as_ref(), "data")?;
    let snooze = match &body.snoozed_until {
        None => None,
        Some(None) => Some(None),
        Some(Some(text)) => match clock::parse_date(text) {
            Some((ms, _)) => Some(Some(ms)),
            None => {
                return Err(ApiError::invalid_field(
                    "snoozedUntil",
                    "invalid_date",
                    "snoozedUntil is an ISO 8601 date or time, or null",
                ));
            }
        },
    };
    let project = access.project.id;
    let (contact, topics) = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            let chosen =
                body.topics.as_ref().map(|asked| topics::check_choices(tx, &project, asked)).transpose()?;
            let changes = Changes { email, subscribed: body.subscribed, data: &patch };
            let mut contact = core_contacts::change(tx, &project, &id, &changes, "api", now)?;
            if let Some(until) = snooze {
                contact = core_contacts::snooze(tx, contact, until, "api", now)?;
            }
            if let Some(chosen) = chosen {
                topics::choose(tx, &contact, &chosen, "api", now)?;
            }
            let states = topics::states(tx, &contact)?;
            Ok::<_, crate::core::Error>((contact, states))
        })
        .await?;
    Ok(Json(ChangedContact { contact: Contact::from(&contact), topics }))
}

/// Deletes a contact and its events for good.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "deleteContact",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/contacts/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| core_contacts::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// Most emails one lookup may ask about.
pub const MAX_LOOKUP: usize = 500;

/// Says which of up to 500 addresses are contacts of the project.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "lookupContacts",
    request_body = Lookup,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Each address, in the order asked", body = LookupResult)),
)]
#[post("/contacts/lookup", data = "<body>")]
async fn lookup(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<Lookup, Medium>,
) -> Result<Json<LookupResult>, ApiError> {
    let emails =
        body.0.emails.ok_or_else(|| ApiError::invalid_field("emails", "required", "emails is required"))?;
    if emails.len() > MAX_LOOKUP {
        return Err(ApiError::invalid_field(
            "emails",
            "too_big",
            format!("at most {MAX_LOOKUP} emails per lookup (found {})", emails.len()),
        ));
    }
    let project = access.project.id;
    let found = state.db.run(move |conn| core_contacts::lookup(conn, &project, emails)).await?;
    let results: Vec<LookedUp> = found
        .into_iter()
        .map(|(email, contact)| LookedUp {
            email,
            exists: contact.is_some(),
            id: contact.as_ref().map(|c| c.id.clone()),
            subscribed: contact.as_ref().map(|c| c.subscribed),
        })
        .collect();
    let found = results.iter().filter(|r| r.exists).count();
    Ok(Json(LookupResult { found, total: results.len(), data: results }))
}
