//! Subscription topics and each contact's choices, as stored (migration V29).

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::Result;

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Topic {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub description: Option<String>,
    /// A contact that made no choice is subscribed.
    pub default_opt_in: bool,
    /// Listed on the preference centre and offered by forms.
    pub public: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, project_id, name, description, default_opt_in, public, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Topic> {
    Ok(Topic {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        description: r.get(3)?,
        default_opt_in: r.get(4)?,
        public: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

pub fn insert(conn: &Connection, t: &Topic) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO topics ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            t.id,
            t.project_id,
            t.name,
            t.description,
            t.default_opt_in,
            t.public,
            t.created_at,
            t.updated_at
        ],
    )?;
    Ok(())
}

pub fn update(conn: &Connection, t: &Topic) -> Result<()> {
    conn.execute(
        "UPDATE topics SET name = ?2, description = ?3, default_opt_in = ?4, public = ?5, updated_at = ?6
         WHERE id = ?1",
        params![t.id, t.name, t.description, t.default_opt_in, t.public, t.updated_at],
    )?;
    Ok(())
}

/// A project's topics, oldest first.
pub fn list(conn: &Connection, project: &str) -> Result<Vec<Topic>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM topics WHERE project_id = ?1 ORDER BY created_at, id"
    ))?;
    Ok(statement.query_map([project], from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn count(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM topics WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Topic>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM topics WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// The topic of the campaign email `email` was sent for, if the campaign targets one.
pub fn of_email(conn: &Connection, email: &str) -> Result<Option<Topic>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {} FROM emails e JOIN campaigns c ON c.id = e.campaign_id JOIN topics t ON t.id = c.topic_id
             WHERE e.id = ?1",
            COLUMNS.split(", ").map(|c| format!("t.{c}")).collect::<Vec<_>>().join(", ")
        ))?
        .query_row([email], from_row)
        .optional()?)
}

/// Deletes a topic; the contacts' choices go with it, and campaigns that targeted it target no
/// topic any more.
pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM topics WHERE id = ?1", [id])? == 1)
}

/// The topics contact `seq` chose: topic id and whether it is subscribed.
pub fn choices(conn: &Connection, seq: i64) -> Result<Vec<(String, bool)>> {
    let mut statement =
        conn.prepare_cached("SELECT topic_id, subscribed FROM contact_topics WHERE contact_seq = ?1")?;
    Ok(statement.query_map([seq], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?)
}

/// Contact `seq`'s choice for `topic`, if it made one.
pub fn choice(conn: &Connection, topic: &str, seq: i64) -> Result<Option<bool>> {
    Ok(conn
        .prepare_cached("SELECT subscribed FROM contact_topics WHERE topic_id = ?1 AND contact_seq = ?2")?
        .query_row(params![topic, seq], |r| r.get(0))
        .optional()?)
}

/// Records contact `seq`'s choice for `topic`.
pub fn choose(conn: &Connection, topic: &str, seq: i64, subscribed: bool, now: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO contact_topics (topic_id, contact_seq, subscribed, updated_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (topic_id, contact_seq) DO UPDATE SET subscribed = excluded.subscribed,
           updated_at = excluded.updated_at",
    )?
    .execute(params![topic, seq, subscribed, now])?;
    Ok(())
}
