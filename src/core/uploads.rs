//! Images for template and campaign bodies: recognised by their bytes (never by the name or
//! type the client declares), kept as files under `<data>/uploads/<project>/`, and served at an
//! address whose 40 random characters are the only way to find them.
//!
//! SVG is refused: it is a document that can carry scripts, not a picture. The file is written
//! under a temporary name and renamed into place before its row is committed, so a file is
//! never half there; a crash between the two leaves only an unlisted file.

use std::path::{Path, PathBuf};

use crate::db::{Tx, uploads};

use super::keys::random_token;
use crate::clock;
use crate::core::error::{Error, FieldError, Limit, Result};

/// Whether bytes look like one format.
type Matcher = fn(&[u8]) -> bool;

/// The formats taken: content type and extension.
const FORMATS: [(Matcher, &str, &str); 4] = [
    (infer::image::is_png, "image/png", "png"),
    (infer::image::is_jpeg, "image/jpeg", "jpg"),
    (infer::image::is_gif, "image/gif", "gif"),
    (infer::image::is_webp, "image/webp", "webp"),
];

/// The content type and extension of an image in a format we take, by its bytes.
pub fn sniff(bytes: &[u8]) -> Option<(&'static str, &'static str)> {
    // WebP is a RIFF container; infer looks at the `WEBP` tag only.
    let riff_ok = |b: &[u8]| !infer::image::is_webp(b) || b.starts_with(b"RIFF");
    FORMATS
        .iter()
        .find(|(matches, _, _)| matches(bytes) && riff_ok(bytes))
        .map(|(_, kind, ext)| (*kind, *ext))
}

/// Checks an upload: 422 naming what was sent when it is not a PNG, JPEG, GIF or WebP image.
pub fn check(bytes: &[u8]) -> Result<(&'static str, &'static str)> {
    sniff(bytes).ok_or_else(|| {
        let svg =
            String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase().contains("<svg");
        let message = if svg {
            "SVG is not accepted (it can carry scripts); upload a PNG, JPEG, GIF or WebP image"
        } else {
            "the file is not a PNG, JPEG, GIF or WebP image (recognised by its contents, not its name)"
        };
        Error::Invalid(vec![FieldError::new("file", "invalid_image", message)])
    })
}

/// Where the project's uploads are kept.
pub fn project_dir(uploads: &Path, project: &str) -> PathBuf {
    uploads.join(project)
}

/// Writes the file of a new upload and returns its token; the caller records it with
/// [`record`]. Blocking.
pub fn write_file(uploads: &Path, project: &str, extension: &str, bytes: &[u8]) -> std::io::Result<String> {
    let dir = project_dir(uploads, project);
    crate::db::files::create_private_dir(uploads)?;
    crate::db::files::create_private_dir(&dir)?;
    let token = random_token();
    let temporary = dir.join(format!(".{token}.part"));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, dir.join(format!("{token}.{extension}")))?;
    Ok(token)
}

/// An image as recorded.
#[derive(Debug)]
pub struct Uploaded {
    pub token: String,
    /// Where anyone with the address can fetch it.
    pub url: String,
    pub content_type: String,
    pub size: usize,
    pub created_at: i64,
}

/// Records an upload written by [`write_file`]. Refused (413) when it would
/// take the project's images past `total_cap` bytes: counted in the writer's transaction, so
/// uploads racing each other cannot pass it together.
pub fn record(
    conn: &Tx,
    project: &str,
    token: &str,
    (content_type, extension): (&str, &str),
    bytes: usize,
    total_cap: u64,
    public_url: &str,
) -> Result<Uploaded> {
    let kept = uploads::kept_bytes(conn, project)?;
    if kept as u64 + bytes as u64 > total_cap {
        return Err(Error::OverLimit(Limit::UploadSpace { cap: total_cap, kept }));
    }
    let now = clock::now_ms();
    uploads::insert(conn, token, project, (content_type, extension), bytes as i64, now)?;
    Ok(Uploaded {
        token: token.to_string(),
        url: format!("{public_url}/uploads/{token}.{extension}"),
        content_type: content_type.to_string(),
        size: bytes,
        created_at: now,
    })
}

/// The file behind `/uploads/<name>`: its path and content type, when `name` is an upload's
/// token and extension.
pub fn find(conn: &Tx, uploads: &Path, name: &str) -> crate::db::Result<Option<(PathBuf, String)>> {
    let Some((token, extension)) = name.split_once('.') else { return Ok(None) };
    if token.len() != 40 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Ok(None);
    }
    let found = uploads::by_token(conn, token)?;
    Ok(found.filter(|(_, _, ext)| ext == extension).map(|(project, content_type, ext)| {
        (project_dir(uploads, &project).join(format!("{token}.{ext}")), content_type)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_known_by_their_bytes() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"), Some(("image/png", "png")));
        assert_eq!(sniff(b"\xff\xd8\xff\xe0\0\x10JFIF"), Some(("image/jpeg", "jpg")));
        assert_eq!(sniff(b"GIF89a\x01\0\x01\0"), Some(("image/gif", "gif")));
        assert_eq!(sniff(b"RIFF\x24\0\0\0WEBPVP8 "), Some(("image/webp", "webp")));
        assert_eq!(sniff(b"XXXX\x24\0\0\0WEBPVP8 "), None, "WebP is a RIFF file");
        assert_eq!(sniff(b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>"), None);
        assert_eq!(sniff(b"<html><body>hi</body></html>"), None);
        assert_eq!(sniff(b""), None);
        let svg = check(b"<?xml version=\"1.0\"?><svg/>").unwrap_err();
        assert!(format!("{svg:?}").contains("SVG is not accepted"));
    }
}
