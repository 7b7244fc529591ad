//! Email templates.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A template as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub description: Option<String>,
    pub subject: String,
    pub body: String,
    pub from_email: String,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub kind: String,
    pub created_at: i64,
    pub updated_at: i64,
    /// What the author wrote in: `html`, `mjml`, `markdown` or `blocks`.
    pub format: String,
    /// The author's text, when `body` was compiled from it (not for `html`).
    pub source: Option<String>,
}

const COLUMNS: &str = "id, project_id, name, description, subject, body, from_email, from_name, reply_to, type, created_at, updated_at, format, source";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Template> {
    Ok(Template {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        subject: r.get(4)?,
        body: r.get(5)?,
        from_email: r.get(6)?,
        from_name: r.get(7)?,
        reply_to: r.get(8)?,
        kind: r.get(9)?,
        created_at: r.get(10)?,
        updated_at: r.get(11)?,
        format: r.get(12)?,
        source: r.get(13)?,
    })
}

/// Inserts or replaces a template by id.
pub fn save(conn: &Connection, t: &Template) -> Result<()> {
    conn.execute(
        &format!("INSERT OR REPLACE INTO templates ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"),
        params![
            t.id,
            t.project_id,
            t.name,
            t.description,
            t.subject,
            t.body,
            t.from_email,
            t.from_name,
            t.reply_to,
            t.kind,
            t.created_at,
            t.updated_at,
            t.format,
            t.source
        ],
    )?;
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Template>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM templates WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, project: &str, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM templates WHERE id = ?1 AND project_id = ?2", [id, project])? > 0)
}

/// One page of a project's templates (`only` a type; search in name, description and subject).
pub fn page(conn: &Connection, q: &super::ListQuery) -> Result<(Vec<Template>, i64)> {
    Ok(super::list_page(conn, ("templates", COLUMNS, &["name", "description", "subject"]), q, from_row)?)
}

/// The name of one of the project's templates sending from `domain` or a subdomain of it.
pub fn one_sending_from(conn: &Connection, project: &str, domain: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row(
            "SELECT name FROM templates WHERE project_id = ?1
               AND substr(from_email, -length(?2) - 1) IN ('@' || ?2, '.' || ?2) LIMIT 1",
            [project, domain],
            |r| r.get(0),
        )
        .optional()?)
}
