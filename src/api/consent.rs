//! Double opt-in settings and the proof of consent (issue 32, item 3): `/audience-settings`,
//! a contact's record (`/contacts/:id/consents`) and the project's record as CSV
//! (`/consents/export`).

use rocket::futures::Stream;
use rocket::response::stream::ByteStream;
use rocket::serde::json::Json;
use rocket::{State, get, patch};

use super::csv_download::{Csv, csv_line};
use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::confirmations;
use crate::core::contacts as core_contacts;
use crate::core::ids::ContactId;
use crate::db::consent::{self as rows, Consent};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::consent::{AudienceSettings, AudienceSettingsChanges, ConsentRecord, ContactConsents};

documented_routes!(settings, update_settings, contact_consents, export);

/// Most grants `GET /contacts/:id/consents` shows; the export has them all.
pub const MAX_SHOWN: i64 = 200;
/// Grants read per page of the export.
const EXPORT_PAGE: i64 = 1_000;

/// The project's audience settings.
#[utoipa::path(
    tag = "Consent",
    operation_id = "getAudienceSettings",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The settings", body = AudienceSettings)),
)]
#[get("/audience-settings")]
async fn settings(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<AudienceSettings>, ApiError> {
    let project = access.project.id;
    let settings = state.db.run(move |conn| rows::settings(conn, &project)).await?;
    Ok(Json((&settings).into()))
}

/// Changes whether forms ask for confirmation by default, and the confirmation mail's template.
#[utoipa::path(
    tag = "Consent",
    operation_id = "updateAudienceSettings",
    request_body = AudienceSettingsChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The settings", body = AudienceSettings)),
)]
#[patch("/audience-settings", data = "<body>")]
async fn update_settings(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<AudienceSettingsChanges, Small>,
) -> Result<Json<AudienceSettings>, ApiError> {
    let (project, body) = (access.project.id, body.0);
    let settings = state
        .db
        .write(move |tx| {
            confirmations::update_settings(
                tx,
                &project,
                body.double_opt_in,
                body.confirmation_template_id,
                body.confirmation_from,
                clock::now_ms(),
            )
        })
        .await?;
    Ok(Json((&settings).into()))
}

/// A contact's subscription waiting for confirmation, and its latest 200 grants of consent.
#[utoipa::path(
    tag = "Consent",
    operation_id = "getContactConsents",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The consent record", body = ContactConsents)),
)]
#[get("/contacts/<id>/consents", rank = 2)]
async fn contact_consents(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactId>,
) -> Result<Json<ContactConsents>, ApiError> {
    let (id, project) = (id?, access.project.id);
    let (pending, records) = state
        .db
        .run(move |conn| {
            let contact = core_contacts::find(conn, &project, &id)?;
            let pending = confirmations::pending(conn, &contact, clock::now_ms())?;
            let records = rows::of_contact(conn, contact.seq, MAX_SHOWN)?;
            Ok::<_, ApiError>((pending, records))
        })
        .await?;
    Ok(Json(ContactConsents {
        pending: pending.as_ref().map(Into::into),
        records: records.iter().map(ConsentRecord::from).collect(),
    }))
}

const HEADER: [&str; 13] = [
    "contact_id",
    "email",
    "topic_id",
    "topic",
    "method",
    "form_id",
    "ip",
    "user_agent",
    "consent_text",
    "requested_at",
    "confirmed_at",
    "confirm_ip",
    "confirm_user_agent",
];

fn csv_row(c: &Consent, contact: &str, email: &str) -> Vec<u8> {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    csv_line(&[
        contact,
        email,
        &text(&c.topic_id),
        &text(&c.topic_name),
        &c.proof.method,
        &text(&c.proof.form_id),
        &text(&c.proof.ip),
        &text(&c.proof.user_agent),
        &text(&c.proof.consent_text),
        &clock::iso(c.requested_at),
        &c.confirmed_at.map(clock::iso).unwrap_or_default(),
        &text(&c.confirm_ip),
        &text(&c.confirm_user_agent),
    ])
}

/// The project's whole consent record as CSV, oldest grant first, read a page at a time.
#[utoipa::path(
    tag = "Consent",
    operation_id = "exportConsents",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The record: one row per grant", content_type = "text/csv", body = String)),
)]
#[get("/consents/export")]
async fn export(state: &State<AppState>, access: ProjectAccess) -> Csv<impl Stream<Item = Vec<u8>>> {
    let (db, project) = (state.db.clone(), access.project.id);
    let body = ByteStream! {
        yield csv_line(&HEADER);
        let mut after = 0;
        loop {
            let project = project.clone();
            let page = db.run(move |conn| rows::page(conn, &project, after, EXPORT_PAGE)).await;
            let page = match page {
                Ok(page) => page,
                Err(e) => {
                    // The status is sent; a cut file is all that can say so now.
                    tracing::error!("the consent export stopped: {e}");
                    break;
                }
            };
            let mut chunk = Vec::new();
            for (consent, contact, email) in &page {
                chunk.extend(csv_row(consent, contact, email));
            }
            if !chunk.is_empty() {
                yield chunk;
            }
            match page.last() {
                Some((last, _, _)) if page.len() as i64 == EXPORT_PAGE => after = last.seq,
                _ => break,
            }
        }
    };
    Csv::new(body, "consents.csv")
}
