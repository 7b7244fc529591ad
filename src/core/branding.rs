//! How a project's public pages look and speak (issue 32, item 7): the name they show, a logo,
//! an accent colour kept readable, the default language, and the project's own wording over
//! the shipped texts ([`super::i18n`]).

use serde_json::{Map, Value};

use super::i18n::{self, Lang, Texts, Wishes};
use crate::core::error::{Error, Result};
use crate::db::Tx;
use crate::db::branding::{self as rows, Branding};
use crate::db::projects;

/// The accent of pages without one: the dashboard's blue.
pub const DEFAULT_COLOR: &str = "#2f5d8a";
/// The longest name a page shows.
const MAX_NAME: usize = 100;
/// The longest text a project may write for one key.
pub const MAX_TEXT: usize = 500;

/// What a public page of the project is dressed in.
#[derive(Debug, Clone, Default)]
pub struct Look {
    /// The branding's name, else the project's.
    pub name: String,
    /// `/uploads/<token>.<ext>`.
    pub logo: Option<String>,
    pub palette: Palette,
    /// The project's default language, if it chose one.
    pub language: Option<String>,
    pub texts: Map<String, Value>,
}

impl Look {
    /// The look of `branding` for a project named `project`.
    pub fn of(project: &str, branding: Branding, logo: Option<String>) -> Self {
        Look {
            name: branding.name.unwrap_or_else(|| project.to_string()),
            logo,
            palette: Palette::of(branding.color.as_deref().unwrap_or(DEFAULT_COLOR)),
            language: branding.language,
            texts: branding.texts,
        }
    }

    /// The texts for a reader: `wishes` with the project's default language added.
    pub fn texts(&self, wishes: Wishes<'_>) -> Texts {
        let lang = Wishes { project: self.language.as_deref(), ..wishes }.pick();
        Texts::new(lang, &self.texts).for_project(&self.name)
    }
}

/// The look of project `project`'s pages (a project that no longer exists gets the defaults).
pub fn look(conn: &Tx, project: &str) -> Result<Look> {
    let name = projects::get(conn, project)?.map(|p| p.name).unwrap_or_default();
    let (branding, logo) = rows::get(conn, project)?;
    Ok(Look::of(&name, branding, logo))
}

/// An accent colour and the colours that stay readable with it (WCAG 2 contrast of 4.5 or
/// more): the text on an accent background, and the accent itself as text on white when it is
/// dark enough (the page's ink when it is not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Palette {
    pub accent: String,
    pub on_accent: &'static str,
    pub accent_text: String,
}

impl Default for Palette {
    fn default() -> Self {
        Palette::of(DEFAULT_COLOR)
    }
}

/// The page's ink: body text.
pub const INK: &str = "#1d2430";

impl Palette {
    pub fn of(color: &str) -> Self {
        let Some(rgb) = rgb(color) else { return Palette::of(DEFAULT_COLOR) };
        // White or black: one of them always reaches 4.5 on any colour.
        let dark_enough = contrast(luminance(rgb), 1.0) >= 4.5;
        let on_accent = if dark_enough { "#ffffff" } else { "#000000" };
        let accent_text = if dark_enough { color.to_ascii_lowercase() } else { INK.to_string() };
        Palette { accent: color.to_ascii_lowercase(), on_accent, accent_text }
    }
}

fn rgb(color: &str) -> Option<[u8; 3]> {
    let hex = color.strip_prefix('#').filter(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()))?;
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

/// WCAG 2 relative luminance.
fn luminance([r, g, b]: [u8; 3]) -> f64 {
    let channel = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.03928 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
    };
    0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
}

fn contrast(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    (hi + 0.05) / (lo + 0.05)
}

/// A change to the branding: `None` keeps a part, `Some(None)` clears it; `texts` is patched
/// key by key (a null text goes back to the shipped one).
#[derive(Debug, Default)]
pub struct Changes {
    pub name: Option<Option<String>>,
    pub logo: Option<Option<String>>,
    pub color: Option<Option<String>>,
    pub language: Option<Option<String>>,
    pub texts: Option<Map<String, Value>>,
    pub slug: Option<Option<String>>,
}

/// Applies `changes` to the project's branding and stores it; returns it with its logo's path.
pub fn update(tx: &Tx, project: &str, changes: Changes, now: i64) -> Result<(Branding, Option<String>)> {
    let branding = apply(tx, project, changes)?;
    rows::put(tx, project, &branding, now)?;
    rows::get(tx, project).map_err(Into::into)
}

/// The look the project's pages would have with `changes` (the dashboard's preview), stored
/// nowhere.
pub fn preview(tx: &Tx, project: &str, changes: Changes) -> Result<Look> {
    let branding = apply(tx, project, changes)?;
    let logo = match branding.logo.as_deref() {
        Some(token) => rows::upload_path(tx, token)?,
        None => None,
    };
    let name = projects::get(tx, project)?.map(|p| p.name).unwrap_or_default();
    Ok(Look::of(&name, branding, logo))
}

/// The project's branding with `changes` applied, each part checked first (422 naming it): a
/// name on one line, a logo that is an image the project uploaded, a `#rrggbb` colour, a
/// shipped language, and texts for shipped languages and known keys that render.
fn apply(tx: &Tx, project: &str, changes: Changes) -> Result<Branding> {
    let (mut branding, _) = rows::get(tx, project)?;
    if let Some(name) = changes.name {
        branding.name = match name.map(|n| n.trim().to_string()).filter(|n| !n.is_empty()) {
            Some(n) if n.chars().count() > MAX_NAME || n.chars().any(char::is_control) => {
                return Err(Error::invalid(
                    "name",
                    "invalid_string",
                    "name is one line of at most 100 characters",
                ));
            }
            other => other,
        };
    }
    if let Some(logo) = changes.logo {
        if let Some(token) = logo.as_deref()
            && !rows::owns_upload(tx, project, token)?
        {
            return Err(Error::invalid(
                "logo",
                "not_found",
                "logo is the id of an image uploaded to the project (POST /uploads/image)",
            ));
        }
        branding.logo = logo;
    }
    if let Some(color) = changes.color {
        if color.as_deref().is_some_and(|c| rgb(c).is_none()) {
            return Err(Error::invalid("color", "invalid_string", "color is a hex colour like #2f5d8a"));
        }
        branding.color = color.map(|c| c.to_ascii_lowercase());
    }
    if let Some(language) = changes.language {
        branding.language = match language {
            None => None,
            Some(code) => Some(shipped_language(&code, "language")?.code().to_string()),
        };
    }
    if let Some(texts) = changes.texts {
        patch_texts(&mut branding.texts, texts)?;
    }
    if let Some(slug) = changes.slug {
        branding.slug = match slug.map(|s| s.trim().to_ascii_lowercase()).filter(|s| !s.is_empty()) {
            None => None,
            Some(slug) => Some(check_slug(tx, project, slug)?),
        };
    }
    Ok(branding)
}

/// A slug the archive can answer at: 3 to 64 lowercase letters, digits and inner hyphens, not
/// shaped like a project id (the archive's other address), and no other project's (409).
fn check_slug(tx: &Tx, project: &str, slug: String) -> Result<String> {
    let fits = (3..=64).contains(&slug.len())
        && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-');
    if !fits || uuid::Uuid::parse_str(&slug).is_ok() {
        return Err(Error::invalid(
            "slug",
            "invalid_string",
            "slug is 3 to 64 lowercase letters, digits and hyphens, such as acme-news",
        ));
    }
    match rows::project_of_slug(tx, &slug)? {
        Some(owner) if owner != project => Err(Error::conflict(format!(
            "The address /archive/{slug} is another project's; choose another slug"
        ))),
        _ => Ok(slug),
    }
}

/// The shipped language named exactly by `code` (`de`), or 422 on `field`.
fn shipped_language(code: &str, field: &str) -> Result<Lang> {
    Lang::ALL.into_iter().find(|l| l.code() == code).ok_or_else(|| {
        let codes: Vec<_> = Lang::ALL.iter().map(|l| l.code()).collect();
        Error::invalid(field, "invalid_enum", format!("{field} is one of {}", codes.join(", ")))
    })
}

fn patch_texts(texts: &mut Map<String, Value>, patch: Map<String, Value>) -> Result<()> {
    for (code, entries) in patch {
        let field = format!("texts.{code}");
        let lang = shipped_language(&code, &field)?;
        let Value::Object(entries) = entries else {
            return Err(Error::invalid(
                &field,
                "invalid_type",
                format!("{field} is an object of texts by key"),
            ));
        };
        let mut own = texts.get(lang.code()).and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, text) in entries {
            let field = format!("texts.{code}.{key}");
            if i18n::shipped(Lang::En, &key).is_none() {
                return Err(Error::invalid(
                    &field,
                    "unknown_key",
                    "no shipped text has this key (GET /branding/texts)",
                ));
            }
            match text {
                Value::Null => {
                    own.remove(&key);
                }
                Value::String(text) if text.trim().is_empty() => {
                    own.remove(&key);
                }
                Value::String(text) => {
                    if text.chars().count() > MAX_TEXT || text.chars().any(char::is_control) {
                        return Err(Error::invalid(
                            &field,
                            "invalid_string",
                            "a text is one line of at most 500 characters",
                        ));
                    }
                    // Not cached: a tenant's wording must not push the mail's templates out.
                    super::render::check_alone(&text, super::render::Mode::Text, &field)?;
                    own.insert(key, Value::String(text));
                }
                _ => {
                    return Err(Error::invalid(
                        &field,
                        "invalid_type",
                        "a text is a string, or null for the shipped one",
                    ));
                }
            }
        }
        if own.is_empty() {
            texts.remove(lang.code());
        } else {
            texts.insert(lang.code().to_string(), Value::Object(own));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accent_keeps_its_text_readable() {
        let dark = Palette::of("#2F5D8A");
        assert_eq!(
            (dark.accent.as_str(), dark.on_accent, dark.accent_text.as_str()),
            ("#2f5d8a", "#ffffff", "#2f5d8a")
        );
        let light = Palette::of("#ffd500");
        assert_eq!((light.on_accent, light.accent_text.as_str()), ("#000000", INK));
        assert_eq!(Palette::of("#808080").on_accent, "#000000");
        assert_eq!(Palette::of("red"), Palette::default());
        assert!(contrast(luminance([0, 0, 0]), 1.0) > 20.0);
    }
}
