//! A contact's history: its emails and its events, newest first, as one list. The `email.*`
//! events are left out: each email's status already says how far it went.

use rusqlite::{Connection, params};
use serde_json::Value;

use super::error::Result;

/// An email as the history shows it (never its body).
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub id: String,
    pub subject: String,
    pub status: String,
    pub source_type: String,
    pub campaign_id: Option<String>,
    pub workflow_id: Option<String>,
    pub template_id: Option<String>,
    pub error: Option<String>,
}

/// An event as the history shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Happened {
    pub id: String,
    pub name: String,
    pub data: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Email(Mail),
    Event(Happened),
}

/// Where an entry stands in the history's order: newest first, and at the same millisecond
/// emails (`source` 1) before events (0), then by key (an email's id, an event's row number),
/// highest first.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Position {
    pub at: i64,
    pub source: u8,
    pub key: String,
}

const EMAIL: u8 = 1;
const EVENT: u8 = 0;

/// The SQL bound on `(created_at, key)` of a source of rank `rank` for the entries after
/// `after`, with its two parameters (`?3`, `?4`).
fn bound(after: Option<&Position>, rank: u8, key: &str) -> (String, i64, String) {
    match after {
        None => ("1".into(), 0, String::new()),
        Some(p) if p.source > rank => ("created_at <= ?3".into(), p.at, p.key.clone()),
        Some(p) if p.source < rank => ("created_at < ?3".into(), p.at, p.key.clone()),
        Some(p) => (format!("(created_at, {key}) < (?3, ?4)"), p.at, p.key.clone()),
    }
}

/// Up to `limit` entries of contact `contact`'s history after `after`, each with its position.
pub fn page(
    conn: &Connection,
    project: &str,
    contact: &str,
    after: Option<&Position>,
    limit: usize,
) -> Result<Vec<(Entry, Position)>> {
    let (email_bound, at, key) = bound(after, EMAIL, "id");
    let mut entries = Vec::with_capacity(limit * 2);
    let mut statement = conn.prepare_cached(&format!(
        "SELECT id, subject, status, source_type, campaign_id, workflow_id, template_id, last_error, created_at
         FROM emails WHERE contact_id = ?1 AND project_id = ?2 AND {email_bound}
         ORDER BY created_at DESC, id DESC LIMIT ?5"
    ))?;
    let emails = statement.query_map(params![contact, project, at, key, limit as i64], |r| {
        let mail = Mail {
            id: r.get(0)?,
            subject: r.get(1)?,
            status: r.get(2)?,
            source_type: r.get(3)?,
            campaign_id: r.get(4)?,
            workflow_id: r.get(5)?,
            template_id: r.get(6)?,
            error: r.get(7)?,
        };
        let position = Position { at: r.get(8)?, source: EMAIL, key: mail.id.clone() };
        Ok((Entry::Email(mail), position))
    })?;
    for email in emails {
        entries.push(email?);
    }
    let (event_bound, at, key) = bound(after, EVENT, "rowid");
    // An event's key is its row number: compared as a number, not as text.
    let key: i64 = if after.is_some_and(|p| p.source == EVENT) { key.parse().unwrap_or(i64::MAX) } else { 0 };
    let mut statement = conn.prepare_cached(&format!(
        "SELECT id, name, data, created_at, rowid FROM events
         WHERE contact_id = ?1 AND project_id = ?2 AND name NOT LIKE 'email.%' AND {event_bound}
         ORDER BY created_at DESC, rowid DESC LIMIT ?5"
    ))?;
    let events = statement.query_map(params![contact, project, at, key, limit as i64], |r| {
        let data: String = r.get(2)?;
        let happened = Happened {
            id: r.get(0)?,
            name: r.get(1)?,
            data: serde_json::from_str(&data).unwrap_or(Value::Null),
        };
        let rowid: i64 = r.get(4)?;
        Ok((Entry::Event(happened), Position { at: r.get(3)?, source: EVENT, key: rowid.to_string() }))
    })?;
    for event in events {
        entries.push(event?);
    }
    entries.sort_by(|(_, a), (_, b)| {
        let key =
            |p: &Position| (p.at, p.source, if p.source == EVENT { p.key.parse::<i64>().ok() } else { None });
        key(b).cmp(&key(a)).then_with(|| b.key.cmp(&a.key))
    });
    entries.truncate(limit);
    Ok(entries)
}

/// How many entries contact `contact`'s history has in all.
pub fn count(conn: &Connection, project: &str, contact: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT (SELECT count(*) FROM emails WHERE contact_id = ?1 AND project_id = ?2)
                  + (SELECT count(*) FROM events
                     WHERE contact_id = ?1 AND project_id = ?2 AND name NOT LIKE 'email.%')",
        )?
        .query_row(params![contact, project], |r| r.get(0))?)
}
