//! The dashboard: the files of `assets/dashboard/`, embedded in the binary, served at `/`.
//!
//! Files are served with their content type, an ETag (their SHA-256) and `Cache-Control:
//! no-cache`, so browsers revalidate cheaply and never run a stale page after an upgrade. A GET
//! for an unknown path without a file extension outside the API's prefixes gets `index.html`, so
//! client-side routes load; unknown paths under an API prefix get the JSON 404.

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

/// First path segments that belong to the API; unknown paths under them are JSON 404s.
const API_PREFIXES: &[&str] = &[
    "v1",
    "auth",
    "users",
    "projects",
    "contacts",
    "templates",
    "campaigns",
    "segments",
    "workflows",
    "events",
    "domains",
    "activity",
    "analytics",
    "uploads",
    "config",
    "webhooks",
    "health",
    "outbox",
    "metrics",
];

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
    let first = text.split('/').next().unwrap_or("");
    if API_PREFIXES.contains(&first) {
        return Err(ApiError::not_found(format!("No endpoint matches GET /{text}")));
    }
    if let Some(asset) = Asset::load(&text, &if_none_match) {
        return Ok(asset);
    }
    let last = text.rsplit('/').next().unwrap_or("");
    if last.contains('.') {
        return Err(ApiError::not_found(format!("No file /{text}")));
    }
    index_page(&if_none_match)
}
