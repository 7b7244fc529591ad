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
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
        params![format!("c{n}"), project, email, subscribed, data.to_string(), created_at],
    )
    .unwrap();
    conn.last_insert_rowid()
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

/// Every contact, in seq order.
pub fn all_contacts(conn: &Connection) -> Vec<Contact> {
    let mut stmt =
        conn.prepare(&format!("SELECT {} FROM contacts c ORDER BY c.seq", contacts::COLUMNS)).unwrap();
    stmt.query_map([], contacts::from_row).unwrap().collect::<Result<_, _>>().unwrap()
}
