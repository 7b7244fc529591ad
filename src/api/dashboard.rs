//! The dashboard: the files of `assets/dashboard/`, embedded in the binary, served at `/`.
//!
//! Files are served with their content type, an ETag (their SHA-256) and `Cache-Control:
//! no-cache`, so browsers revalidate cheaply and never run a stale page after an upgrade. A GET
//! for one of the dashboard's own pages (`/app/...`, sign-in and the pages mail links open) gets
//! `index.html`, so client-side routes load; any other unknown path is the JSON 404, so an API
//! client calling an endpoint Tidings does not have reads an error, never a page.

use std::borrow::Cow;
use std::io::Cursor;
use std::path::PathBuf;

use rocket::http::{ContentType, Header, Status};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::response::{self, Responder, Response};
use rocket::{Route, get, routes};

use crate::error::ApiError;

#[derive(rust_embed::Embed)]
#[folder = "assets/dashboard/"]
struct Assets;

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

/// The `If-None-Match` request header.
pub struct IfNoneMatch(Option<String>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for IfNoneMatch {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(IfNoneMatch(req.headers().get_one("If-None-Match").map(str::to_string)))
    }
}

/// One embedded file, ready to send.
pub struct Asset {
    content_type: ContentType,
    body: Cow<'static, [u8]>,
    etag: String,
    not_modified: bool,
}

impl Asset {
    fn load(path: &str, if_none_match: &IfNoneMatch) -> Option<Asset> {
        let file = Assets::get(path)?;
        let extension = path.rsplit_once('.').map(|(_, ext)| ext).unwrap_or("");
        let content_type = ContentType::from_extension(extension).unwrap_or(ContentType::Binary);
        let etag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
        let not_modified = if_none_match
            .0
            .as_deref()
            .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
        Some(Asset { content_type, body: file.data, etag, not_modified })
    }
}

impl<'r> Responder<'r, 'static> for Asset {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        let mut response = Response::build();
        response.header(Header::new("ETag", self.etag)).header(Header::new("Cache-Control", "no-cache"));
        if self.not_modified {
            response.status(Status::NotModified);
        } else {
            let body = self.body.into_owned();
            response.header(self.content_type).sized_body(body.len(), Cursor::new(body));
        }
        response.ok()
    }
}

fn index_page(if_none_match: &IfNoneMatch) -> Result<Asset, ApiError> {
    Asset::load("index.html", if_none_match).ok_or_else(|| ApiError::internal("index.html is not embedded"))
}

#[get("/")]
fn index(if_none_match: IfNoneMatch) -> Result<Asset, ApiError> {
    index_page(&if_none_match)
}

#[get("/<path..>", rank = 50)]
fn file(path: PathBuf, if_none_match: IfNoneMatch) -> Result<Asset, ApiError> {
    let text = path.to_string_lossy().replace('\\', "/");
    if let Some(asset) = Asset::load(&text, &if_none_match) {
        return Ok(asset);
    }
    if is_page(&text) {
        return index_page(&if_none_match);
    }
    Err(ApiError::not_found(format!("No endpoint or page matches GET /{text}")))
}
