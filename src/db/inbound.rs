//! Inbound mail as stored (migration V28): a project's inbound domains, its routes, and the
//! messages received.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::Result;

/// A domain a project receives mail for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Domain {
    pub id: String,
    pub project_id: String,
    pub domain: String,
    pub token: String,
    /// `pending` or `verified`.
    pub status: String,
    /// The last check's findings (JSON).
    pub checks: Option<String>,
    pub created_at: i64,
    pub verified_at: Option<i64>,
    pub last_checked_at: Option<i64>,
    pub next_check_at: i64,
}

const DOMAIN_COLUMNS: &str =
    "id, project_id, domain, token, status, checks, created_at, verified_at, last_checked_at, next_check_at";

fn domain_from_row(r: &Row<'_>) -> rusqlite::Result<Domain> {
    Ok(Domain {
        id: r.get(0)?,
        project_id: r.get(1)?,
        domain: r.get(2)?,
        token: r.get(3)?,
        status: r.get(4)?,
        checks: r.get(5)?,
        created_at: r.get(6)?,
        verified_at: r.get(7)?,
        last_checked_at: r.get(8)?,
        next_check_at: r.get(9)?,
    })
}

pub fn insert_domain(conn: &Connection, d: &Domain) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO inbound_domains ({DOMAIN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        ),
        params![
            d.id,
            d.project_id,
            d.domain,
            d.token,
            d.status,
            d.checks,
            d.created_at,
            d.verified_at,
            d.last_checked_at,
            d.next_check_at
        ],
    )?;
    Ok(())
}

/// A project's inbound domains, oldest first.
pub fn domains(conn: &Connection, project: &str) -> Result<Vec<Domain>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {DOMAIN_COLUMNS} FROM inbound_domains WHERE project_id = ?1 ORDER BY created_at, id"
    ))?;
    Ok(statement.query_map([project], domain_from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn count_domains(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM inbound_domains WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub fn domain(conn: &Connection, project: &str, id: &str) -> Result<Option<Domain>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {DOMAIN_COLUMNS} FROM inbound_domains WHERE id = ?1 AND project_id = ?2"
        ))?
        .query_row([id, project], domain_from_row)
        .optional()?)
}

pub fn domain_by_id(conn: &Connection, id: &str) -> Result<Option<Domain>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {DOMAIN_COLUMNS} FROM inbound_domains WHERE id = ?1"))?
        .query_row([id], domain_from_row)
        .optional()?)
}

/// The verified domain named `name`, whichever project has it.
pub fn verified(conn: &Connection, name: &str) -> Result<Option<Domain>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {DOMAIN_COLUMNS} FROM inbound_domains WHERE domain = ?1 AND status = 'verified'"
        ))?
        .query_row([name], domain_from_row)
        .optional()?)
}

/// Whether a project other than `project` has `name` verified.
pub fn verified_elsewhere(conn: &Connection, project: &str, name: &str) -> Result<bool> {
    Ok(verified(conn, name)?.is_some_and(|d| d.project_id != project))
}

/// Stores a check's outcome and when the next one is due.
pub fn save_check(
    conn: &Connection,
    id: &str,
    status: &str,
    verified_at: Option<i64>,
    checks: &str,
    (now, next): (i64, i64),
) -> Result<()> {
    conn.execute(
        "UPDATE inbound_domains SET status = ?2, verified_at = ?3, checks = ?4, last_checked_at = ?5,
                next_check_at = ?6 WHERE id = ?1",
        params![id, status, verified_at, checks, now, next],
    )?;
    Ok(())
}

/// Up to `limit` domains whose check is due at `now`.
pub fn due_domains(conn: &Connection, now: i64, limit: usize) -> Result<Vec<String>> {
    let mut statement = conn.prepare_cached(
        "SELECT id FROM inbound_domains WHERE next_check_at <= ?1 ORDER BY next_check_at LIMIT ?2",
    )?;
    Ok(statement.query_map(params![now, limit as i64], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?)
}

/// Deletes a domain and its routes.
pub fn delete_domain(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM inbound_domains WHERE id = ?1", [id])? == 1)
}

/// A route: what becomes of mail to one address (or every address) of an inbound domain.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Route {
    pub id: String,
    pub project_id: String,
    pub domain_id: String,
    /// The domain's name (read with the route).
    pub domain: String,
    /// A local part, lowercase, or `*`.
    pub local_part: String,
    /// The actions, JSON.
    pub actions: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const ROUTE_SELECT: &str = "SELECT r.id, r.project_id, r.domain_id, d.domain, r.local_part, r.actions,
        r.created_at, r.updated_at
   FROM inbound_routes r JOIN inbound_domains d ON d.id = r.domain_id";

fn route_from_row(r: &Row<'_>) -> rusqlite::Result<Route> {
    Ok(Route {
        id: r.get(0)?,
        project_id: r.get(1)?,
        domain_id: r.get(2)?,
        domain: r.get(3)?,
        local_part: r.get(4)?,
        actions: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

pub fn insert_route(conn: &Connection, r: &Route) -> Result<()> {
    conn.execute(
        "INSERT INTO inbound_routes (id, project_id, domain_id, local_part, actions, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![r.id, r.project_id, r.domain_id, r.local_part, r.actions, r.created_at, r.updated_at],
    )?;
    Ok(())
}

pub fn update_route(conn: &Connection, r: &Route) -> Result<()> {
    conn.execute(
        "UPDATE inbound_routes SET local_part = ?2, actions = ?3, updated_at = ?4 WHERE id = ?1",
        params![r.id, r.local_part, r.actions, r.updated_at],
    )?;
    Ok(())
}

/// A project's routes, oldest first.
pub fn routes(conn: &Connection, project: &str) -> Result<Vec<Route>> {
    let mut statement =
        conn.prepare_cached(&format!("{ROUTE_SELECT} WHERE r.project_id = ?1 ORDER BY r.created_at, r.id"))?;
    Ok(statement.query_map([project], route_from_row)?.collect::<rusqlite::Result<_>>()?)
}

pub fn count_routes(conn: &Connection, project: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM inbound_routes WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}

pub fn route(conn: &Connection, project: &str, id: &str) -> Result<Option<Route>> {
    Ok(conn
        .prepare_cached(&format!("{ROUTE_SELECT} WHERE r.id = ?1 AND r.project_id = ?2"))?
        .query_row([id, project], route_from_row)
        .optional()?)
}

/// The route of domain `domain_id` for the first of `local_parts` that has one (most specific
/// first).
pub fn route_for(conn: &Connection, domain_id: &str, local_parts: &[&str]) -> Result<Option<Route>> {
    let mut statement =
        conn.prepare_cached(&format!("{ROUTE_SELECT} WHERE r.domain_id = ?1 AND r.local_part = ?2"))?;
    for local in local_parts {
        if let Some(route) = statement.query_row([domain_id, local], route_from_row).optional()? {
            return Ok(Some(route));
        }
    }
    Ok(None)
}

/// The route of `project` whose webhook action posts through endpoint `endpoint`, if one does.
pub fn route_with_endpoint(conn: &Connection, project: &str, endpoint: &str) -> Result<Option<Route>> {
    Ok(conn
        .prepare_cached(&format!(
            "{ROUTE_SELECT} WHERE r.project_id = ?1
               AND EXISTS (SELECT 1 FROM json_each(r.actions) a WHERE a.value ->> 'endpointId' = ?2)"
        ))?
        .query_row([project, endpoint], route_from_row)
        .optional()?)
}

pub fn delete_route(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM inbound_routes WHERE id = ?1", [id])? == 1)
}

/// A message received.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    pub id: String,
    pub project_id: String,
    pub peer: String,
    pub helo: String,
    pub mail_from: String,
    /// This project's recipients.
    pub recipients: Vec<String>,
    pub from_email: String,
    pub from_name: Option<String>,
    pub subject: String,
    pub message_id: Option<String>,
    pub spf: String,
    pub dkim: String,
    pub dmarc: String,
    pub size: i64,
    pub contact_id: Option<String>,
    /// The email of ours it replies to.
    pub email_id: Option<String>,
    /// Whether its content is kept ([`content`]).
    pub stored: bool,
    pub received_at: i64,
    pub expires_at: i64,
}

const MESSAGE_COLUMNS: &str =
    "id, project_id, peer, helo, mail_from, recipients, from_email, from_name, subject,
     message_id, spf, dkim, dmarc, size, contact_id, email_id, received_at, expires_at";
/// The columns read back, and whether the content is kept.
const MESSAGE_SELECT: &str =
    "SELECT id, project_id, peer, helo, mail_from, recipients, from_email, from_name,
     subject, message_id, spf, dkim, dmarc, size, contact_id, email_id, received_at, expires_at,
     raw IS NOT NULL";

fn message_from_row(r: &Row<'_>) -> rusqlite::Result<Message> {
    let recipients: String = r.get(5)?;
    Ok(Message {
        id: r.get(0)?,
        project_id: r.get(1)?,
        peer: r.get(2)?,
        helo: r.get(3)?,
        mail_from: r.get(4)?,
        recipients: serde_json::from_str(&recipients).unwrap_or_default(),
        from_email: r.get(6)?,
        from_name: r.get(7)?,
        subject: r.get(8)?,
        message_id: r.get(9)?,
        spf: r.get(10)?,
        dkim: r.get(11)?,
        dmarc: r.get(12)?,
        size: r.get(13)?,
        contact_id: r.get(14)?,
        email_id: r.get(15)?,
        received_at: r.get(16)?,
        expires_at: r.get(17)?,
        stored: r.get(18)?,
    })
}

/// Records `m`, with its content `raw` when it is kept.
pub fn insert_message(conn: &Connection, m: &Message, raw: Option<&[u8]>) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO inbound_messages ({MESSAGE_COLUMNS}, raw)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"
    ))?
    .execute(params![
        m.id,
        m.project_id,
        m.peer,
        m.helo,
        m.mail_from,
        serde_json::to_string(&m.recipients).unwrap_or_default(),
        m.from_email,
        m.from_name,
        m.subject,
        m.message_id,
        m.spf,
        m.dkim,
        m.dmarc,
        m.size,
        m.contact_id,
        m.email_id,
        m.received_at,
        m.expires_at,
        raw,
    ])?;
    Ok(())
}

/// A project's messages, newest first, after the cursor `(received_at, id)`; with only
/// `contact`'s when given.
pub fn messages(
    conn: &Connection,
    project: &str,
    contact: Option<&str>,
    after: Option<(i64, String)>,
    limit: usize,
) -> Result<Vec<Message>> {
    let (at, id) = after.unzip();
    let mut statement = conn.prepare_cached(&format!(
        "{MESSAGE_SELECT} FROM inbound_messages
          WHERE project_id = ?1 AND (?2 IS NULL OR contact_id = ?2)
            AND (?3 IS NULL OR (received_at, id) < (?3, ?4))
          ORDER BY received_at DESC, id DESC LIMIT ?5"
    ))?;
    Ok(statement
        .query_map(params![project, contact, at, id, limit as i64], message_from_row)?
        .collect::<rusqlite::Result<_>>()?)
}

pub fn count_messages(conn: &Connection, project: &str, contact: Option<&str>) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FROM inbound_messages WHERE project_id = ?1 AND (?2 IS NULL OR contact_id = ?2)",
        )?
        .query_row(params![project, contact], |r| r.get(0))?)
}

/// One message (without its content: see [`content`]).
pub fn message(conn: &Connection, project: &str, id: &str) -> Result<Option<Message>> {
    Ok(conn
        .prepare_cached(&format!("{MESSAGE_SELECT} FROM inbound_messages WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], message_from_row)
        .optional()?)
}

/// A message's content as received, when it is kept.
pub fn content(conn: &Connection, project: &str, id: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT raw FROM inbound_messages WHERE id = ?1 AND project_id = ?2")?
        .query_row([id, project], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Deletes up to `limit` messages kept past `now`; how many went.
pub fn expire(conn: &Connection, now: i64, limit: usize) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "DELETE FROM inbound_messages WHERE rowid IN
               (SELECT rowid FROM inbound_messages WHERE expires_at <= ?1 LIMIT ?2)",
        )?
        .execute(params![now, limit as i64])?)
}

/// The bytes of received mail `project` holds.
pub fn bytes_held(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT bytes FROM inbound_usage WHERE project_id = ?1")?
        .query_row([project], |r| r.get(0))
        .optional()?
        .unwrap_or(0))
}
