//! `POST /uploads/image` (secret key, or the dashboard's session with `X-Project-Id`) and the
//! images it stores, served at `GET /uploads/<token>.<ext>` to anyone with the address: the mail
//! that shows them is read without signing in.

use std::io::Cursor;

use rocket::form::{Errors, Form};
use rocket::http::{ContentType, Header, Status};
use rocket::response::{self, Responder, Response};
use rocket::serde::json::Json;
use rocket::{Request, State, get, post};

use super::contact_jobs::{Part, Upload, read_upload};
use super::guards::ProjectAccess;
use crate::core::uploads;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::uploads::{ImageUpload, UploadedImage};

documented_routes!(upload, serve);

/// Stores an image (the form part `file`, or `image`; at most `[limits] upload_bytes`) and answers `{id,
/// url, contentType, size, createdAt}`.
#[utoipa::path(
    tag = "Templates",
    operation_id = "uploadImage",
    request_body(content = ImageUpload, content_type = "multipart/form-data"),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The stored image", body = UploadedImage)),
)]
#[post("/uploads/image", data = "<form>")]
async fn upload(
    state: &State<AppState>,
    access: ProjectAccess,
    form: Result<Form<Upload<'_>>, Errors<'_>>,
) -> Result<Json<UploadedImage>, ApiError> {
    let bytes = read_upload(form, state.config.limits.upload_bytes, "the image", Part::FileOrImage).await?;
    let format = uploads::check(&bytes)?;
    let (dir, project) = (state.config.uploads_dir(), access.project.id.clone());
    let size = bytes.len();
    let token =
        crate::core::blocking::blocking(move || uploads::write_file(&dir, &project, format.1, &bytes))
            .await?
            .map_err(|e| ApiError::internal(format!("writing the upload: {e}")))?;
    let (project, public_url) = (access.project.id, state.config.public_url());
    let cap = state.config.limits.upload_total_bytes;
    let (stored, written) = (token.clone(), uploads::project_dir(&state.config.uploads_dir(), &project));
    let recorded = state
        .db
        .write(move |tx| uploads::record(tx, &project, &stored, format, size, cap, &public_url))
        .await;
    if recorded.is_err() {
        // Refused or not committed: the file goes too.
        let _ = rocket::tokio::fs::remove_file(written.join(format!("{token}.{}", format.1))).await;
    }
    Ok(Json(recorded?.into()))
}

/// An image as stored: its type, `nosniff`, a year's cache (the address never changes what it
/// shows) and a policy that lets nothing in it run.
struct Image {
    content_type: ContentType,
    body: Vec<u8>,
}

impl<'r> Responder<'r, 'static> for Image {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .header(self.content_type)
            .header(Header::new("X-Content-Type-Options", "nosniff"))
            .header(Header::new("Cache-Control", "public, max-age=31536000, immutable"))
            .header(Header::new("Content-Security-Policy", "default-src 'none'; sandbox"))
            .sized_body(self.body.len(), Cursor::new(self.body))
            .ok()
    }
}

/// An uploaded image, by the name its `url` ends with (`<token>.<ext>`).
#[utoipa::path(
    tag = "Templates",
    operation_id = "getImage",
    security(()),
    responses((
        status = 200,
        description = "The image, with a year's immutable cache",
        content(
            (String = "image/png"), (String = "image/jpeg"), (String = "image/gif"), (String = "image/webp"),
        ),
    )),
)]
#[get("/uploads/<name>")]
async fn serve(state: &State<AppState>, name: &str) -> Result<Image, ApiError> {
    let (dir, name) = (state.config.uploads_dir(), name.to_string());
    let found = state.db.run(move |conn| uploads::find(conn, &dir, &name)).await?;
    let Some((path, content_type)) = found else { return Err(ApiError::not_found("No such image")) };
    let body = crate::core::blocking::blocking(move || std::fs::read(path))
        .await?
        .map_err(|_| ApiError::new(Status::NotFound.code, "NOT_FOUND", "No such image"))?;
    let content_type = ContentType::parse_flexible(&content_type).unwrap_or(ContentType::Binary);
    Ok(Image { content_type, body })
}
