//! How a project's public pages look and speak: `/branding`, its catalogue of texts and the
//! dashboard's preview.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::core::branding::Changes;
use crate::core::i18n::{self, Lang};
use crate::db::branding::Branding as Row;

/// The branding of the project's pages.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({ "name": "Acme News", "logo": null, "logoUrl": null, "color": "#2f5d8a",
    "language": "de", "texts": { "de": { "manage.title": "Ihre Post von {{ project }}" } },
    "slug": "acme-news", "archiveUrl": "https://mail.acme.test/archive/acme-news" }))]
pub struct Branding {
    /// The name the pages show; the project's when null.
    pub name: Option<String>,
    /// The id of the logo, an image uploaded with `POST /uploads/image`.
    pub logo: Option<String>,
    /// Where the logo is served (a path of this server).
    pub logo_url: Option<String>,
    /// The accent colour, `#rrggbb`; the pages keep text readable on it.
    pub color: Option<String>,
    /// The language of a reader whose contact has no `locale` and whose browser names no shipped
    /// language: `en`, `de`, `fr`, `es`, `pt` or `nl`.
    pub language: Option<String>,
    /// The project's own wording: `{language: {key: text}}` over the shipped texts.
    #[schema(value_type = Object)]
    pub texts: Map<String, Value>,
    /// The address of the archive of the project's public campaigns, `/archive/<slug>`; the
    /// archive answers at the project's id when null.
    pub slug: Option<String>,
    /// Where the archive is read (its Atom feed is `<archiveUrl>/feed.atom`).
    pub archive_url: String,
}

impl Branding {
    /// The branding of `project` as stored, its archive under `public_url`.
    pub fn new((row, logo_url): (Row, Option<String>), public_url: &str, project: &str) -> Self {
        let archive_url = format!("{public_url}/archive/{}", row.slug.as_deref().unwrap_or(project));
        Branding {
            name: row.name,
            logo: row.logo,
            logo_url,
            color: row.color,
            language: row.language,
            texts: row.texts,
            slug: row.slug,
            archive_url,
        }
    }
}

/// `PATCH /branding`: what is left out stays; null clears a part. `texts` changes only the keys
/// it names, a null or empty text going back to the shipped one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrandingChanges {
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>, max_length = 100)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>)]
    pub logo: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>, pattern = "^#[0-9a-fA-F]{6}$")]
    pub color: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>)]
    pub language: Option<Option<String>>,
    /// `{language: {key: text or null}}`; a text is one line of at most 500 characters, Liquid
    /// without markup (`{{ project }}`).
    #[schema(value_type = Option<Object>)]
    pub texts: Option<Map<String, Value>>,
    /// 3 to 64 lowercase letters, digits and hyphens, no other project's (409); null goes back
    /// to the project's id.
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>, pattern = "^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$")]
    pub slug: Option<Option<String>>,
}

impl From<BrandingChanges> for Changes {
    fn from(b: BrandingChanges) -> Self {
        let BrandingChanges { name, logo, color, language, texts, slug } = b;
        Changes { name, logo, color, language, texts, slug }
    }
}

/// A shipped language.
#[derive(Debug, Serialize, ToSchema)]
pub struct Language {
    /// `en`, `de`, ...
    pub code: &'static str,
    /// Its name in itself.
    pub name: &'static str,
}

/// A text the pages and mail use, as shipped in each language.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShippedText {
    /// `manage.title`, `mail.confirm_subject`, ...
    pub key: &'static str,
    /// The variables it may print (`{{ project }}`).
    pub variables: Vec<String>,
    /// The shipped text by language code.
    #[schema(value_type = Object)]
    pub shipped: Map<String, Value>,
}

/// `GET /branding/texts`: the shipped languages and every text a project may override.
#[derive(Debug, Serialize, ToSchema)]
pub struct TextCatalogue {
    pub languages: Vec<Language>,
    pub texts: Vec<ShippedText>,
}

impl TextCatalogue {
    pub fn shipped() -> Self {
        TextCatalogue {
            languages: Lang::ALL.iter().map(|l| Language { code: l.code(), name: l.name() }).collect(),
            texts: i18n::keys()
                .map(|(key, _)| ShippedText {
                    key,
                    variables: i18n::variables(key),
                    shipped: Lang::ALL
                        .iter()
                        .filter_map(|l| {
                            i18n::shipped(*l, key).map(|t| (l.code().to_string(), Value::from(t)))
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// `POST /branding/preview`: a page as it would look with these (unsaved) changes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PagePreview {
    /// `manage` (the default), `unsubscribe` or `confirm`.
    pub page: Option<String>,
    /// A shipped language; the project's default (else English) when left out.
    pub language: Option<String>,
    /// Changes not saved yet, as `PATCH /branding` takes them.
    pub changes: Option<BrandingChanges>,
}
