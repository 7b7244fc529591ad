//! A project export, as the API shows it (issue 35, item 6).

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::exports::Export;

/// A project export.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportView {
    pub id: String,
    /// `queued` (being made), `done` or `failed`.
    pub status: String,
    /// The file's size, once done.
    pub bytes: Option<i64>,
    pub error: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Where the zip is downloaded, once done.
    pub download_url: Option<String>,
}

impl From<&Export> for ExportView {
    fn from(e: &Export) -> Self {
        ExportView {
            id: e.id.clone(),
            status: e.status.clone(),
            bytes: e.bytes,
            error: e.error.clone(),
            created_at: iso(e.created_at),
            finished_at: e.finished_at.map(iso),
            download_url: (e.status == "done").then(|| format!("/project-exports/{}/download", e.id)),
        }
    }
}
