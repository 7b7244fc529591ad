//! How a project's public pages look and speak (issue 32, item 7): one row per project that
//! changed anything.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value};

use super::error::Result;

/// A project's branding as stored; every part optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Branding {
    /// The name the pages show; the project's when `None`.
    pub name: Option<String>,
    /// An upload's token.
    pub logo: Option<String>,
    /// `#rrggbb`.
    pub color: Option<String>,
    /// A shipped language's code.
    pub language: Option<String>,
    /// `{lang: {key: text}}`.
    pub texts: Map<String, Value>,
    /// The address of the project's archive (`/archive/<slug>`), unique across the server.
    pub slug: Option<String>,
}

/// The project's branding, with the logo's path (`/uploads/<token>.<ext>`) when it has one.
pub fn get(conn: &Connection, project: &str) -> Result<(Branding, Option<String>)> {
    Ok(conn
        .prepare_cached(
            "SELECT b.name, b.logo, b.color, b.language, b.texts, u.extension, b.slug
             FROM branding b LEFT JOIN uploads u ON u.token = b.logo WHERE b.project_id = ?1",
        )?
        .query_row([project], |r| {
            let texts: String = r.get(4)?;
            let logo: Option<String> = r.get(1)?;
            let extension: Option<String> = r.get(5)?;
            let path = logo.as_ref().zip(extension).map(|(token, ext)| format!("/uploads/{token}.{ext}"));
            let texts = match serde_json::from_str(&texts) {
                Ok(Value::Object(map)) => map,
                _ => Map::new(),
            };
            let slug = r.get(6)?;
            Ok((Branding { name: r.get(0)?, logo, color: r.get(2)?, language: r.get(3)?, texts, slug }, path))
        })
        .optional()?
        .unwrap_or_default())
}

pub fn put(conn: &Connection, project: &str, b: &Branding, now: i64) -> Result<()> {
    let texts = Value::Object(b.texts.clone()).to_string();
    conn.execute(
        "INSERT INTO branding (project_id, name, logo, color, language, texts, updated_at, slug)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(project_id) DO UPDATE SET name = ?2, logo = ?3, color = ?4, language = ?5,
             texts = ?6, updated_at = ?7, slug = ?8",
        params![project, b.name, b.logo, b.color, b.language, texts, now, b.slug],
    )?;
    Ok(())
}

/// The path an upload is served at (`/uploads/<token>.<ext>`).
pub fn upload_path(conn: &Connection, token: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT extension FROM uploads WHERE token = ?1")?
        .query_row([token], |r| r.get::<_, String>(0))
        .optional()?
        .map(|ext| format!("/uploads/{token}.{ext}")))
}

/// Whether upload `token` is one of the project's.
pub fn owns_upload(conn: &Connection, project: &str, token: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM uploads WHERE token = ?1 AND project_id = ?2")?
        .query_row([token, project], |_| Ok(()))
        .optional()?
        .is_some())
}

/// The project whose archive answers at `slug`, if one chose it.
pub fn project_of_slug(conn: &Connection, slug: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT project_id FROM branding WHERE slug = ?1")?
        .query_row([slug], |r| r.get(0))
        .optional()?)
}
