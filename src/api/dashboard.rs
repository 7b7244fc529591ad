//! The dashboard: the files of `assets/dashboard/`, embedded in the binary, served at `/`.
//!
//! Files are embedded gzipped ([`Gzipped`]) and served with their content type, an ETag (the
//! SHA-256 of their gzipped bytes) and `Cache-Control: no-cache`, so browsers revalidate cheaply
//! and never run a stale page after an upgrade. A GET for one of the dashboard's own pages
//! (`/app/...`, sign-in and the pages mail links open) gets `index.html`, so client-side routes
//! load; any other unknown path is the JSON 404, so an API client calling an endpoint Tidings
//! does not have reads an error, never a page.

use std::path::PathBuf;

use rocket::http::ContentType;
use rocket::{Route, get, routes};

use crate::api::gzipped::Gzipped;
use crate::error::ApiError;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/dashboard_files.rs"));
}

/// The dashboard's pages outside `/app/`: sign-in, and the pages the links in account mail open
/// (the dashboard's `LINK_PAGES`).
const PAGES: &[&str] =
    &["login", "signup", "forgot-password", "reset-password", "verify-email", "invitation"];

/// Whether `path` (without its leading `/`) is a page of the dashboard.
fn is_page(path: &str) -> bool {
    path == "app" || path.starts_with("app/") || PAGES.contains(&path.trim_end_matches('/'))
}

pub fn routes() -> Vec<Route> {
    routes![index, file]
}

/// One embedded file, ready to send: its content type from its name, revalidated by its hash.
fn asset(path: &str) -> Option<Gzipped> {
    let file = embedded::Files::get(path)?;
    let extension = path.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
    Some(Gzipped {
        content_type: ContentType::from_extension(extension).unwrap_or(ContentType::Binary),
        gzip: file.data,
        hash: hex::encode(file.metadata.sha256_hash()),
        cache_control: Some("no-cache"),
    })
}

fn index_page() -> Result<Gzipped, ApiError> {
    asset("index.html").ok_or_else(|| ApiError::internal("index.html is not embedded"))
}

#[get("/")]
fn index() -> Result<Gzipped, ApiError> {
    index_page()
}

#[get("/<path..>", rank = 50)]
fn file(path: PathBuf) -> Result<Gzipped, ApiError> {
    let text = path.to_string_lossy().replace('\\', "/");
    if let Some(asset) = asset(&text) {
        return Ok(asset);
    }
    if is_page(&text) {
        return index_page();
    }
    Err(ApiError::not_found(format!("No endpoint or page matches GET /{text}")))
}
