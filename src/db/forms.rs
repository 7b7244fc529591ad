//! Signup forms as stored (migration V31), and the proof-of-work challenges already spent.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::error::Result;

/// A custom field a form asks for, stored in the contact's `data` under `key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormField {
    pub key: String,
    pub label: String,
    /// `string`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Form {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub fields: Vec<FormField>,
    /// Topic ids offered.
    pub topics: Vec<String>,
    /// `None`: the project's setting.
    pub double_opt_in: Option<bool>,
    pub consent_text: Option<String>,
    pub success_message: Option<String>,
    pub redirect_url: Option<String>,
    pub allowed_origins: Vec<String>,
    pub submissions: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, project_id, name, fields, topics, double_opt_in, consent_text, success_message, \
                       redirect_url, allowed_origins, submissions, created_at, updated_at";

fn json<T: serde::de::DeserializeOwned + Default>(text: String) -> T {
    serde_json::from_str(&text).unwrap_or_default()
}

fn text<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".into())
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<Form> {
    Ok(Form {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        fields: json(r.get(3)?),
        topics: json(r.get(4)?),
        double_opt_in: r.get(5)?,
        consent_text: r.get(6)?,
        success_message: r.get(7)?,
        redirect_url: r.get(8)?,
        allowed_origins: json(r.get(9)?),
        submissions: r.get(10)?,
        created_at: r.get(11)?,
        updated_at: r.get(12)?,
    })
}

/// Stores a new form, or rewrites the settings of the one with its id.
pub fn save(conn: &Connection, f: &Form) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO forms ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT(id) DO UPDATE SET name = ?3, fields = ?4, topics = ?5, double_opt_in = ?6,
                 consent_text = ?7, success_message = ?8, redirect_url = ?9, allowed_origins = ?10,
                 updated_at = ?13"
        ),
        params![
            f.id,
            f.project_id,
            f.name,
            text(&f.fields),
            text(&f.topics),
            f.double_opt_in,
            f.consent_text,
            f.success_message,
            f.redirect_url,
            text(&f.allowed_origins),
            f.submissions,
            f.created_at,
            f.updated_at
        ],
    )?;
    Ok(())
}

pub fn list(conn: &Connection, project: &str) -> Result<Vec<Form>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM forms WHERE project_id = ?1 ORDER BY created_at, id"
    ))?;
    Ok(statement.query_map([project], from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM forms WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

/// Form `id` of `project`; of any project when `project` is `None` (its public pages).
pub fn get(conn: &Connection, project: Option<&str>, id: &str) -> Result<Option<Form>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM forms WHERE id = ?1 AND (?2 IS NULL OR project_id = ?2)"
        ))?
        .query_row(params![id, project], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("DELETE FROM forms WHERE id = ?1", [id])?;
    Ok(())
}

pub fn count_submission(conn: &Connection, id: &str) -> Result<()> {
    conn.prepare_cached("UPDATE forms SET submissions = submissions + 1 WHERE id = ?1")?.execute([id])?;
    Ok(())
}

/// Spends a challenge (by its signature) until `expires_at`; false when it was spent before.
/// A few expired ones go on the way, so the table stays as small as the challenges alive.
pub fn spend_challenge(conn: &Connection, signature: &str, expires_at: i64, now: i64) -> Result<bool> {
    conn.prepare_cached(
        "DELETE FROM spent_challenges WHERE signature IN
             (SELECT signature FROM spent_challenges WHERE expires_at < ?1 ORDER BY expires_at LIMIT 8)",
    )?
    .execute([now])?;
    let n = conn
        .prepare_cached(
            "INSERT INTO spent_challenges (signature, expires_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
        )?
        .execute(params![signature, expires_at])?;
    Ok(n == 1)
}
