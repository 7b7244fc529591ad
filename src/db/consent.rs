//! Double opt-in and proof of consent, as stored (migration V30): a project's audience
//! settings, the open confirmation requests and the consent record.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::Result;

/// A project's audience settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// New subscribers from the project's forms confirm by mail unless a form says otherwise.
    pub double_opt_in: bool,
    /// The template of the confirmation mail; the built-in text when `None`.
    pub confirmation_template_id: Option<String>,
    /// The built-in mail's sender; `noreply@` the first verified domain when `None`.
    pub confirmation_from: Option<String>,
}

pub fn settings(conn: &Connection, project: &str) -> Result<Settings> {
    Ok(conn
        .prepare_cached(
            "SELECT double_opt_in, confirmation_template_id, confirmation_from
             FROM audience_settings WHERE project_id = ?1",
        )?
        .query_row([project], |r| {
            Ok(Settings {
                double_opt_in: r.get(0)?,
                confirmation_template_id: r.get(1)?,
                confirmation_from: r.get(2)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

pub fn put_settings(conn: &Connection, project: &str, s: &Settings, now: i64) -> Result<()> {
    conn.execute(
        "INSERT INTO audience_settings (project_id, double_opt_in, confirmation_template_id, confirmation_from, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(project_id) DO UPDATE SET double_opt_in = ?2, confirmation_template_id = ?3,
             confirmation_from = ?4, updated_at = ?5",
        params![project, s.double_opt_in, s.confirmation_template_id, s.confirmation_from, now],
    )?;
    Ok(())
}

/// How and where a subscription was asked for: what the consent record keeps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Proof {
    /// `api`, `form`, `import`, `preference_centre` or `dashboard`.
    pub method: String,
    pub form_id: Option<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// The words the person agreed to, as shown to them.
    pub consent_text: Option<String>,
}

/// An open or confirmed request for a subscription with confirmation.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirmation {
    pub id: String,
    pub project_id: String,
    pub contact_seq: i64,
    /// Topic ids the confirmation subscribes the contact to, besides marketing mail.
    pub topics: Vec<String>,
    pub proof: Proof,
    pub requested_at: i64,
    pub mailed_at: Option<i64>,
    pub expires_at: i64,
    pub confirmed_at: Option<i64>,
}

const CONFIRMATION: &str = "id, project_id, contact_seq, topics, method, form_id, ip, user_agent, \
                            consent_text, requested_at, mailed_at, expires_at, confirmed_at";

/// A [`Proof`] read from five columns from `at`: method, form, address, user agent, words.
fn proof_at(r: &Row<'_>, at: usize) -> rusqlite::Result<Proof> {
    Ok(Proof {
        method: r.get(at)?,
        form_id: r.get(at + 1)?,
        ip: r.get(at + 2)?,
        user_agent: r.get(at + 3)?,
        consent_text: r.get(at + 4)?,
    })
}

fn confirmation(r: &Row<'_>) -> rusqlite::Result<Confirmation> {
    let topics: String = r.get(3)?;
    Ok(Confirmation {
        id: r.get(0)?,
        project_id: r.get(1)?,
        contact_seq: r.get(2)?,
        topics: serde_json::from_str(&topics).unwrap_or_default(),
        proof: proof_at(r, 4)?,
        requested_at: r.get(9)?,
        mailed_at: r.get(10)?,
        expires_at: r.get(11)?,
        confirmed_at: r.get(12)?,
    })
}

/// The contact's open request, expired or not.
pub fn open_for(conn: &Connection, contact_seq: i64) -> Result<Option<Confirmation>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {CONFIRMATION} FROM confirmations WHERE contact_seq = ?1 AND confirmed_at IS NULL"
        ))?
        .query_row([contact_seq], confirmation)
        .optional()?)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Confirmation>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {CONFIRMATION} FROM confirmations WHERE id = ?1"))?
        .query_row([id], confirmation)
        .optional()?)
}

/// Stores a new request, or rewrites the open one of the same id.
pub fn save(conn: &Connection, c: &Confirmation) -> Result<()> {
    let topics = serde_json::to_string(&c.topics).unwrap_or_else(|_| "[]".into());
    conn.execute(
        &format!(
            "INSERT INTO confirmations ({CONFIRMATION}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
             ON CONFLICT(id) DO UPDATE SET topics = ?4, method = ?5, form_id = ?6, ip = ?7, user_agent = ?8,
                 consent_text = ?9, requested_at = ?10, mailed_at = ?11, expires_at = ?12"
        ),
        params![
            c.id,
            c.project_id,
            c.contact_seq,
            topics,
            c.proof.method,
            c.proof.form_id,
            c.proof.ip,
            c.proof.user_agent,
            c.proof.consent_text,
            c.requested_at,
            c.mailed_at,
            c.expires_at,
            c.confirmed_at
        ],
    )?;
    Ok(())
}

/// Marks request `id` confirmed at `now`; false when it already was (a second press).
pub fn mark_confirmed(conn: &Connection, id: &str, now: i64) -> Result<bool> {
    let n = conn.execute(
        "UPDATE confirmations SET confirmed_at = ?2 WHERE id = ?1 AND confirmed_at IS NULL",
        params![id, now],
    )?;
    Ok(n == 1)
}

/// One grant of the consent record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Consent {
    pub seq: i64,
    pub contact_seq: i64,
    /// `None`: marketing mail as a whole.
    pub topic_id: Option<String>,
    pub topic_name: Option<String>,
    pub proof: Proof,
    pub requested_at: i64,
    /// Set when a mailed link confirmed it, with who pressed the button.
    pub confirmed_at: Option<i64>,
    pub confirm_ip: Option<String>,
    pub confirm_user_agent: Option<String>,
}

const CONSENT: &str = "c.seq, c.contact_seq, c.topic_id, c.topic_name, c.method, c.form_id, c.ip, \
                       c.user_agent, c.consent_text, c.requested_at, c.confirmed_at, c.confirm_ip, \
                       c.confirm_user_agent";

fn consent(r: &Row<'_>) -> rusqlite::Result<Consent> {
    Ok(Consent {
        seq: r.get(0)?,
        contact_seq: r.get(1)?,
        topic_id: r.get(2)?,
        topic_name: r.get(3)?,
        proof: proof_at(r, 4)?,
        requested_at: r.get(9)?,
        confirmed_at: r.get(10)?,
        confirm_ip: r.get(11)?,
        confirm_user_agent: r.get(12)?,
    })
}

pub fn insert(conn: &Connection, project: &str, c: &Consent) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO consents (project_id, contact_seq, topic_id, topic_name, method, form_id, ip, user_agent,
             consent_text, requested_at, confirmed_at, confirm_ip, confirm_user_agent)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        project,
        c.contact_seq,
        c.topic_id,
        c.topic_name,
        c.proof.method,
        c.proof.form_id,
        c.proof.ip,
        c.proof.user_agent,
        c.proof.consent_text,
        c.requested_at,
        c.confirmed_at,
        c.confirm_ip,
        c.confirm_user_agent
    ])?;
    Ok(())
}

/// A contact's latest `limit` grants, newest first.
pub fn of_contact(conn: &Connection, contact_seq: i64, limit: i64) -> Result<Vec<Consent>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {CONSENT} FROM consents c WHERE c.contact_seq = ?1 ORDER BY c.seq DESC LIMIT ?2"
    ))?;
    Ok(statement.query_map(params![contact_seq, limit], consent)?.collect::<rusqlite::Result<_>>()?)
}

/// Up to `limit` grants of the project after `after` (a `seq`), oldest first, each with its
/// contact's id and address: a page of the export.
pub fn page(
    conn: &Connection,
    project: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<(Consent, String, String)>> {
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {CONSENT}, k.id, k.email FROM consents c JOIN contacts k ON k.seq = c.contact_seq
         WHERE c.project_id = ?1 AND c.seq > ?2 ORDER BY c.seq LIMIT ?3"
    ))?;
    let rows =
        statement.query_map(params![project, after, limit], |r| Ok((consent(r)?, r.get(13)?, r.get(14)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
