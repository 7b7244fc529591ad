//! A project's data as one file (issue 35, item 6): `POST /project-exports` starts the job,
//! `GET /project-exports/:id` tells its state, `GET /project-exports/:id/download` streams the
//! zip.

use super::guards::ProjectAccess;
use super::ids::Param;
use crate::clock;
use crate::core::exports;
use crate::core::ids::ExportId;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::exports::ExportView;
use rocket::fs::NamedFile;
use rocket::http::{Header, Status};
use rocket::response::{self, Responder};
use rocket::serde::json::Json;
use rocket::{Request, State, get, post};

documented_routes!(start_export, export_state, download_export);

/// Starts writing the project's data (contacts, events and emails as CSV, with a JSON note) to
/// one zip file, as a background job; 202 with the export. While one is being made, asking
/// again gives it. The project keeps its newest export only.
#[utoipa::path(
    tag = "Data",
    operation_id = "startProjectExport",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "The export, being made", body = ExportView)),
)]
#[post("/project-exports")]
async fn start_export(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<(Status, Json<ExportView>), ApiError> {
    let project = access.project.id;
    let export = state.db.write(move |tx| exports::start(tx, &project, clock::now_ms())).await?;
    Ok((Status::Accepted, Json((&export).into())))
}

/// An export's state.
#[utoipa::path(
    tag = "Data",
    operation_id = "getProjectExport",
    params(("id" = String, Path, description = "The export's id")),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The export", body = ExportView)),
)]
#[get("/project-exports/<id>")]
async fn export_state(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ExportId>,
) -> Result<Json<ExportView>, ApiError> {
    let (project, id) = (access.project.id, id?);
    let found = state.db.run(move |conn| crate::db::exports::get(conn, &project, &id)).await?;
    let found = found.ok_or_else(|| ApiError::from(ExportId::missing("")))?;
    Ok(Json((&found).into()))
}

/// The zip, streamed, to be saved and never shown.
struct Zip {
    file: NamedFile,
    name: String,
}

impl<'r> Responder<'r, 'static> for Zip {
    fn respond_to(self, request: &'r Request<'_>) -> response::Result<'static> {
        let mut response = self.file.respond_to(request)?;
        response.set_header(Header::new("Content-Type", "application/zip"));
        response.set_header(Header::new(
            "Content-Disposition",
            format!("attachment; filename=\"{}\"", self.name),
        ));
        response.set_header(Header::new("X-Content-Type-Options", "nosniff"));
        response.set_header(Header::new("Cache-Control", "private, no-store"));
        Ok(response)
    }
}

/// The export's zip: `project.json`, `contacts.csv`, `events.csv`, `emails.csv`. 409 while it
/// is being made.
#[utoipa::path(
    tag = "Data",
    operation_id = "downloadProjectExport",
    params(("id" = String, Path, description = "The export's id")),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The zip", content((String = "application/zip")))),
)]
#[get("/project-exports/<id>/download")]
async fn download_export(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ExportId>,
) -> Result<Zip, ApiError> {
    let (project, id) = (access.project.id, id?);
    let data_dir = state.config.server.data_dir.clone();
    let name = format!("tidings-export-{id}.zip");
    let path = state.db.run(move |conn| exports::finished(conn, &data_dir, &project, &id)).await?;
    let file = NamedFile::open(&path).await.map_err(|_| {
        ApiError::from(crate::core::Error::not_found("The export's file is gone; make a new export"))
    })?;
    Ok(Zip {
        file,
        name: name.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.')).collect(),
    })
}
