//! Images uploaded for templates.

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::uploads::Uploaded;

/// An image as stored.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadedImage {
    pub id: String,
    /// Where anyone with the address can fetch it (mail readers are not signed in).
    pub url: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, read from the bytes.
    pub content_type: String,
    /// Bytes.
    pub size: usize,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<Uploaded> for UploadedImage {
    fn from(u: Uploaded) -> Self {
        UploadedImage {
            id: u.token,
            url: u.url,
            content_type: u.content_type,
            size: u.size,
            created_at: iso(u.created_at),
        }
    }
}

/// An image, as the multipart part `file` (or `image`, as Plunk's clients send it; one of the
/// two).
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ImageUpload {
    /// PNG, JPEG, GIF or WebP (recognised by its bytes; SVG is refused).
    #[schema(value_type = Option<String>, format = Binary)]
    file: Option<Vec<u8>>,
    /// `file`, as Plunk's clients name the part.
    #[schema(value_type = Option<String>, format = Binary)]
    image: Option<Vec<u8>>,
}
