//! Rows for unit tests above `db`: an in-memory database and the few rows a test puts in it
//! directly (a project need not exist: foreign keys are off), so tests elsewhere hold no SQL.

use rusqlite::{Connection, params};
use serde_json::Value;

use super::contacts::{self, Contact};

/// A migrated in-memory database with the custom functions and foreign keys off.
pub fn memory() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    super::migrate::run(&mut conn).unwrap();
    super::functions::register(&conn).unwrap();
    conn.execute_batch("PRAGMA foreign_keys=OFF").unwrap();
    conn
}

/// A segment of `project` named and slugged `id`: `STATIC` or `DYNAMIC` with its condition's JSON.
pub fn segment(conn: &Connection, project: &str, id: &str, kind: &str, condition: Option<&Value>) {
    conn.execute(
        "INSERT INTO segments (id, project_id, name, slug, type, condition, created_at, updated_at)
         VALUES (?1, ?2, ?1, ?1, ?3, ?4, 0, 0)",
        params![id, project, kind, condition.map(Value::to_string)],
    )
    .unwrap();
}

/// Replaces segment `id`'s condition.
pub fn set_condition(conn: &Connection, id: &str, condition: &Value) {
    conn.execute("UPDATE segments SET condition = ?1 WHERE id = ?2", params![condition.to_string(), id])
        .unwrap();
}

/// A contact of `project` with id `c<n>` (`n` the contacts so far); its seq.
pub fn contact(
    conn: &Connection,
    project: &str,
    email: &str,
    subscribed: bool,
    data: &Value,
    created_at: i64,
) -> i64 {
    let n: i64 = conn.query_row("SELECT count(*) FROM contacts", [], |r| r.get(0)).unwrap();
    conn.execute(
        "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, jsonb(?5), ?6, ?6)",
        params![format!("c{n}"), project, email, subscribed, data.to_string(), created_at],
    )
    .unwrap();
    let seq = conn.last_insert_rowid();
    super::contacts::count_inserted(conn, project, 1, i64::from(subscribed)).unwrap();
    seq
}

/// An event `name` of `project` at `at`, of the contact at `contact_seq` (of none with `None`).
pub fn event(conn: &Connection, project: &str, contact_seq: Option<i64>, name: &str, at: i64) {
    conn.execute(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at)
         VALUES (?1, ?2, (SELECT id FROM contacts WHERE seq = ?3), ?4, '{}', ?5)",
        params![super::new_id(), project, contact_seq, name, at],
    )
    .unwrap();
}

/// Adds an event a machine made (`machine` names why).
pub fn machine_event(conn: &Connection, project: &str, contact_seq: i64, name: &str, at: i64, machine: &str) {
    conn.execute(
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at, machine)
         VALUES (?1, ?2, (SELECT id FROM contacts WHERE seq = ?3), ?4, '{}', ?5, ?6)",
        params![super::new_id(), project, contact_seq, name, at, machine],
    )
    .unwrap();
}

/// A sent campaign `id` of `project`.
pub fn campaign(conn: &Connection, project: &str, id: &str) {
    conn.execute(
        "INSERT INTO campaigns (id, project_id, name, subject, body, from_email, type, status, audience_type,
                                created_at, updated_at)
         VALUES (?1, ?2, ?1, 's', 'b', 'a@x.io', 'MARKETING', 'SENT', 'ALL', 0, 0)",
        params![id, project],
    )
    .unwrap();
}

/// Campaign `campaign`'s email to the contact `contact_seq`, sent, with its opens and clicks as
/// (kind, machine) pairs; the email's own times are set by any of them.
pub fn campaign_email(conn: &Connection, campaign: &str, contact_seq: i64, engaged: &[(&str, Option<&str>)]) {
    let id = super::new_id();
    let opened = (!engaged.is_empty()).then_some(1);
    let clicked = engaged.iter().any(|(kind, _)| *kind == "click").then_some(1);
    conn.execute(
        "INSERT INTO emails (id, project_id, contact_id, to_email, from_email, subject, body, type, source_type,
                             campaign_id, status, message_id, next_attempt_at, created_at, updated_at, sent_at,
                             opened_at, clicked_at)
         SELECT ?1, project_id, id, email, 'a@x.io', 's', 'b', 'MARKETING', 'CAMPAIGN', ?2, 'SENT', ?1, 0, 0, 0, 0,
                ?4, ?5
         FROM contacts WHERE seq = ?3",
        params![id, campaign, contact_seq, opened, clicked],
    )
    .unwrap();
    for (kind, machine) in engaged {
        conn.execute(
            "INSERT INTO email_engagements (project_id, email_id, campaign_id, kind, machine, at)
             SELECT project_id, id, campaign_id, ?2, ?3, 1 FROM emails WHERE id = ?1",
            params![id, kind, machine],
        )
        .unwrap();
    }
}

/// Every contact, in seq order.
pub fn all_contacts(conn: &Connection) -> Vec<Contact> {
    let mut stmt =
        conn.prepare(&format!("SELECT {} FROM contacts c ORDER BY c.seq", contacts::COLUMNS)).unwrap();
    stmt.query_map([], contacts::from_row).unwrap().collect::<Result<_, _>>().unwrap()
}
