//! How a project's public pages look and speak (issue 32, item 7): `GET/PATCH /branding`, the
//! catalogue of texts a project may reword, and the dashboard's preview of a page.

use rocket::serde::json::Json;
use rocket::{State, get, patch, post};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use super::public_page::{Page, Shell};
use crate::clock;
use crate::core::branding::{self, Changes};
use crate::core::i18n::Wishes;
use crate::db::contacts::Contact;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::branding::{Branding, BrandingChanges, PagePreview, TextCatalogue};

documented_routes!(get_branding, update_branding, texts, preview);

/// The branding of the project's public pages.
#[utoipa::path(
    tag = "Branding",
    operation_id = "getBranding",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The branding", body = Branding)),
)]
#[get("/branding")]
async fn get_branding(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Branding>, ApiError> {
    let project = access.project.id;
    let id = project.clone();
    let found = state.db.run(move |conn| crate::db::branding::get(conn, &id)).await?;
    Ok(Json(Branding::new(found, &state.config.public_url(), &project)))
}

/// Changes the name, logo, colour, default language or wording of the project's pages.
#[utoipa::path(
    tag = "Branding",
    operation_id = "updateBranding",
    request_body = BrandingChanges,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The branding", body = Branding), (status = 409, description = "The slug is another project's", body = crate::error::Envelope)),
)]
#[patch("/branding", data = "<body>")]
async fn update_branding(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<BrandingChanges, Small>,
) -> Result<Json<Branding>, ApiError> {
    let (project, changes) = (access.project.id, Changes::from(body.0));
    let id = project.clone();
    let saved = state.db.write(move |tx| branding::update(tx, &id, changes, clock::now_ms())).await?;
    Ok(Json(Branding::new(saved, &state.config.public_url(), &project)))
}

/// The shipped languages, and every text of the pages and mail with its shipped wording.
#[utoipa::path(
    tag = "Branding",
    operation_id = "getBrandingTexts",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The catalogue", body = TextCatalogue)),
)]
#[get("/branding/texts")]
fn texts(_access: ProjectAccess) -> Json<TextCatalogue> {
    Json(TextCatalogue::shipped())
}

/// A public page as the project's contacts would see it with these changes (nothing is saved):
/// a sample contact, the project's public topics.
#[utoipa::path(
    tag = "Branding",
    operation_id = "previewBranding",
    request_body = PagePreview,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The page", content_type = "text/html", body = String)),
)]
#[post("/branding/preview", data = "<body>")]
async fn preview(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<PagePreview, Small>,
) -> Result<Page, ApiError> {
    let (project, request) = (access.project.id, body.0);
    let page = request.page.unwrap_or_else(|| "manage".into());
    if !["manage", "unsubscribe", "confirm"].contains(&page.as_str()) {
        return Err(ApiError::invalid_field(
            "page",
            "invalid_enum",
            "page is manage, unsubscribe or confirm",
        ));
    }
    let changes = request.changes.map(Changes::from).unwrap_or_default();
    let (look, topics) = state
        .db
        .run(move |conn| {
            let look = branding::preview(conn, &project, changes)?;
            let topics = crate::db::topics::list(conn, &project)?;
            Ok::<_, crate::core::Error>((look, topics))
        })
        .await?;
    let shell = Shell::new(look, Wishes { chosen: request.language.as_deref(), ..Wishes::default() });
    let sample = Contact { email: "ada@example.com".into(), subscribed: true, ..Contact::default() };
    let public: Vec<_> =
        topics.into_iter().filter(|t| t.public).enumerate().map(|(i, t)| (t, i % 2 == 0)).collect();
    Ok(match page.as_str() {
        "unsubscribe" => super::tracking::unsubscribe_view(&shell, "#", &sample, None),
        "confirm" => super::confirm::confirm_view(&shell, "#", &sample.email),
        _ => super::preferences::manage_view("preview", &sample, &shell, &public, None),
    })
}
