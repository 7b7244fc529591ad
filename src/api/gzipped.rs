//! Bodies the binary carries gzipped (the dashboard's files and the OpenAPI document, gzipped by
//! `build.rs`): sent as they are, with `Content-Encoding: gzip`, to a client that takes gzip (every
//! browser, and most HTTP libraries), and inflated for one that does not (curl without
//! `--compressed`). Every answer says `Vary: Accept-Encoding`, so a cache in between keeps the two
//! apart, and the two carry different ETags.
//!
//! A file is inflated once, on the first request that needs it, and kept: inflating the OpenAPI
//! document takes milliseconds, which a stream of requests without gzip would otherwise cost
//! the async workers each time. What is kept is bounded by what the binary carries (1.3 MB).

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{Cursor, Read};
use std::sync::{Arc, LazyLock, Mutex};

use rocket::http::{ContentType, Header, Status};
use rocket::request::Request;
use rocket::response::{self, Responder, Response};

/// A gzipped body, with what its answer says about it.
pub struct Gzipped {
    pub content_type: ContentType,
    pub gzip: Cow<'static, [u8]>,
    /// The hash of the gzipped bytes, in hex: the answers carry it as their ETag (the inflated
    /// one's as it is, the gzipped one's with `-gzip`), and a request whose `If-None-Match` holds
    /// it gets a 304. The inflated copy is kept under it.
    pub hash: String,
    /// `Cache-Control`, if any.
    pub cache_control: Option<&'static str>,
}

/// Whether an `Accept-Encoding` header takes gzip (RFC 9110 §12.5.3): named (or as `x-gzip`)
/// with a weight above 0, or not named while `*` is. Without the header the answer is not
/// encoded, as a client that sends none may not inflate it.
pub fn takes_gzip(accept_encoding: Option<&str>) -> bool {
    let mut any = false;
    for item in accept_encoding.unwrap_or_default().split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let weight = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .map(|q| q.trim().parse::<f32>().unwrap_or(0.0))
            .next()
            .unwrap_or(1.0);
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            return weight > 0.0;
        }
        if coding == "*" {
            any = weight > 0.0;
        }
    }
    any
}

/// Whether an `If-None-Match` header names `etag` (or is `*`).
fn matches(if_none_match: Option<&str>, etag: &str) -> bool {
    if_none_match.is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"))
}

impl<'r> Responder<'r, 'static> for Gzipped {
    fn respond_to(self, req: &'r Request<'_>) -> response::Result<'static> {
        let gzip = takes_gzip(req.headers().get_one("Accept-Encoding"));
        let mut response = Response::build();
        response.header(Header::new("Vary", "Accept-Encoding"));
        if let Some(cache_control) = self.cache_control {
            response.header(Header::new("Cache-Control", cache_control));
        }
        let etag = if gzip { format!("\"{}-gzip\"", self.hash) } else { format!("\"{}\"", self.hash) };
        let not_modified = matches(req.headers().get_one("If-None-Match"), &etag);
        response.header(Header::new("ETag", etag));
        if not_modified {
            return response.status(Status::NotModified).ok();
        }
        response.header(self.content_type);
        if gzip {
            response.header(Header::new("Content-Encoding", "gzip"));
            return response.sized_body(self.gzip.len(), Cursor::new(self.gzip)).ok();
        }
        let body = inflated(&self.hash, &self.gzip)?;
        response.sized_body(body.len(), Cursor::new(body)).ok()
    }
}

/// The files inflated so far, by the hash of their gzipped bytes.
static INFLATED: LazyLock<Mutex<HashMap<String, Arc<[u8]>>>> = LazyLock::new(Default::default);

/// `gzip` inflated, from [`INFLATED`] or else inflated now and kept there.
fn inflated(hash: &str, gzip: &[u8]) -> Result<Arc<[u8]>, Status> {
    if let Some(body) = INFLATED.lock().unwrap_or_else(|e| e.into_inner()).get(hash) {
        return Ok(body.clone());
    }
    let mut body = Vec::new();
    if let Err(e) = flate2::read::GzDecoder::new(gzip).read_to_end(&mut body) {
        tracing::error!("an embedded file does not inflate: {e}");
        return Err(Status::InternalServerError);
    }
    let body: Arc<[u8]> = body.into();
    INFLATED.lock().unwrap_or_else(|e| e.into_inner()).insert(hash.to_string(), body.clone());
    Ok(body)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Arc;

    use super::{inflated, takes_gzip};

    #[test]
    fn a_file_is_inflated_once_and_kept() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(&b"a line of the file\n".repeat(1000)).unwrap();
        let gzip = encoder.finish().unwrap();
        let first = inflated("test-hash-of-the-file", &gzip).unwrap();
        assert_eq!(&first[..], &b"a line of the file\n".repeat(1000)[..]);
        let again = inflated("test-hash-of-the-file", &gzip).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the second request takes the kept copy");
        assert!(inflated("test-hash-of-a-broken-file", &gzip[..gzip.len() / 2]).is_err());
    }

    #[test]
    fn accept_encoding_is_read_with_its_weights() {
        for yes in ["gzip", "gzip, deflate, br, zstd", "br;q=1.0, GZIP;q=0.5", "x-gzip", "*", "br, *;q=0.1"] {
            assert!(takes_gzip(Some(yes)), "{yes}");
        }
        for no in ["", "identity", "br, deflate", "gzip;q=0", "gzip; q=0.0, *", "*;q=0", "gzip;q=x"] {
            assert!(!takes_gzip(Some(no)), "{no}");
        }
        assert!(!takes_gzip(None), "no header: not encoded");
    }
}
