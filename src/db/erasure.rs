//! A contact's data on request (issue 35, item 6): what an export reads, and the erasure, one
//! bounded transaction at a time ([`step`]), with the contact's row last, so that a step
//! interrupted anywhere is resumed from what is left.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::batches::Batches;
use super::error::Result;

/// An erasure as recorded: no personal data.
#[derive(Debug, Clone, PartialEq)]
pub struct Erasure {
    pub id: String,
    pub project_id: String,
    pub contact_id: String,
    pub status: String,
    pub rows: i64,
    pub requested_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, project_id, contact_id, status, rows, requested_at, finished_at";

fn erasure(r: &rusqlite::Row) -> rusqlite::Result<Erasure> {
    Ok(Erasure {
        id: r.get(0)?,
        project_id: r.get(1)?,
        contact_id: r.get(2)?,
        status: r.get(3)?,
        rows: r.get(4)?,
        requested_at: r.get(5)?,
        finished_at: r.get(6)?,
    })
}

pub fn insert(conn: &Connection, e: &Erasure) -> Result<()> {
    conn.execute(
        &format!("INSERT INTO erasures ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
        params![e.id, e.project_id, e.contact_id, e.status, e.rows, e.requested_at, e.finished_at],
    )?;
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Erasure>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM erasures WHERE id = ?1 AND project_id = ?2"),
            [id, project],
            erasure,
        )
        .optional()?)
}

/// The running erasure of `contact`, if one was asked for.
pub fn running_of(conn: &Connection, project: &str, contact: &str) -> Result<Option<Erasure>> {
    Ok(conn
        .query_row(
            &format!(
                "SELECT {COLUMNS} FROM erasures WHERE project_id = ?1 AND contact_id = ?2 AND status = 'running'"
            ),
            [project, contact],
            erasure,
        )
        .optional()?)
}

/// `?1` the contact, `?2` the project, `?3` the batch, `?4` the address, `?5` the time (ms).
const STAGES: &[(&str, &str)] = &[
    ("events", "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE contact_id = ?1 LIMIT ?3)"),
    (
        "email_engagements",
        "DELETE FROM email_engagements WHERE id IN (SELECT g.id FROM emails e JOIN email_engagements g
             ON g.email_id = e.id WHERE e.contact_id = ?1 LIMIT ?3)",
    ),
    (
        "outbox",
        "DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE project_id = ?2 AND envelope_to = ?4 LIMIT ?3)",
    ),
    (
        "inbound_messages",
        "DELETE FROM inbound_messages WHERE rowid IN
             (SELECT rowid FROM inbound_messages WHERE contact_id = ?1 LIMIT ?3)",
    ),
    (
        "webhook_deliveries",
        "DELETE FROM webhook_deliveries WHERE rowid IN (SELECT rowid FROM webhook_deliveries
             WHERE project_id = ?2 AND (instr(payload, ?4) > 0 OR instr(payload, ?1) > 0) LIMIT ?3)",
    ),
    (
        "workflow_executions",
        "DELETE FROM workflow_executions WHERE rowid IN
             (SELECT rowid FROM workflow_executions WHERE contact_id = ?1 LIMIT ?3)",
    ),
    // The emails stay for the project's counts, naming no one; mail still queued fails.
    (
        "emails",
        "UPDATE emails SET contact_id = NULL, to_email = 'erased', to_name = NULL, subject = '', body = '',
             variables = '{}', headers = '{}', attachments = NULL, last_error = NULL,
             failed_at = CASE WHEN status = 'QUEUED' THEN ?5 ELSE failed_at END,
             status = CASE WHEN status = 'QUEUED' THEN 'FAILED' ELSE status END
         WHERE rowid IN (SELECT rowid FROM emails WHERE contact_id = ?1 LIMIT ?3)",
    ),
];

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    More {
        rows: usize,
        chunk: i64,
    },
    /// The contact is gone (in this step, or before).
    Done {
        rows: usize,
    },
}

/// Erases `contact`'s data of `project` for about `budget`, its row last (which takes what is
/// left with it: consents, topics, memberships, suppressions). Event counts of analytics stay.
pub fn step(
    conn: &Connection,
    project: &str,
    contact: &str,
    (budget, chunk): (Duration, i64),
    now: i64,
) -> Result<Step> {
    let address: Option<String> = conn
        .query_row("SELECT email FROM contacts WHERE id = ?1 AND project_id = ?2", [contact, project], |r| {
            r.get(0)
        })
        .optional()?;
    let Some(address) = address else { return Ok(Step::Done { rows: 0 }) };
    conn.execute("INSERT OR IGNORE INTO retention_pruning (one) VALUES (1)", [])?;
    let step = erase(conn, [contact, project, &address], budget, chunk, now);
    conn.execute("DELETE FROM retention_pruning", [])?;
    step
}

/// `who` is the contact, the project and the address.
fn erase(conn: &Connection, who: [&str; 3], budget: Duration, chunk: i64, now: i64) -> Result<Step> {
    let [contact, project, address] = who;
    let mut batches = Batches::new(budget, chunk);
    let mut rows = 0;
    for (_, sql) in STAGES {
        let mut statement = conn.prepare_cached(sql)?;
        // A stage names the parameters up to the last it uses.
        let used = statement.parameter_count();
        loop {
            let (n, full) = batches.run(|chunk| {
                let all = params![contact, project, chunk, address, now];
                statement.execute(&all[..used])
            })?;
            rows += n;
            if !full {
                break;
            }
            if batches.spent() {
                return Ok(Step::More { rows, chunk: batches.chunk() });
            }
        }
    }
    rows += conn.execute("DELETE FROM contacts WHERE id = ?1", [contact])?;
    Ok(Step::Done { rows })
}

/// Records that erasure `id` is done, with the rows it took.
pub fn finish(conn: &Connection, id: &str, rows: i64, now: i64) -> Result<()> {
    conn.execute(
        "UPDATE erasures SET status = 'done', rows = rows + ?2, finished_at = ?3 WHERE id = ?1",
        params![id, rows, now],
    )?;
    Ok(())
}

/// Adds rows to a running erasure's count.
pub fn progress(conn: &Connection, id: &str, rows: i64) -> Result<()> {
    conn.execute("UPDATE erasures SET rows = rows + ?2 WHERE id = ?1", params![id, rows])?;
    Ok(())
}

/// A contact's events for an export, oldest first: `(id, name, data, created_at)`.
pub fn events_of(
    conn: &Connection,
    contact: &str,
    limit: usize,
) -> Result<Vec<(String, String, Value, i64)>> {
    let mut statement = conn.prepare(
        "SELECT id, name, data, created_at FROM events WHERE contact_id = ?1 ORDER BY created_at, rowid LIMIT ?2",
    )?;
    let rows = statement.query_map(params![contact, limit as i64], |r| {
        let data: String = r.get(2)?;
        Ok((r.get(0)?, r.get(1)?, serde_json::from_str(&data).unwrap_or(Value::Null), r.get(3)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// An email as an export shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailRecord {
    pub id: String,
    pub to_email: String,
    pub from_email: String,
    pub subject: String,
    pub status: String,
    pub source_type: String,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub opened_at: Option<i64>,
    pub clicked_at: Option<i64>,
    /// The body, one-off variables and headers, while the project keeps them (retention).
    pub content: Option<(String, Value, Value)>,
}

/// A contact's emails for an export, oldest first.
pub fn emails_of(conn: &Connection, contact: &str, limit: usize) -> Result<Vec<EmailRecord>> {
    let mut statement = conn.prepare(
        "SELECT id, to_email, from_email, subject, status, source_type, created_at, sent_at, opened_at, clicked_at,
                body, variables, headers
         FROM emails WHERE contact_id = ?1 ORDER BY created_at, rowid LIMIT ?2",
    )?;
    let rows = statement.query_map(params![contact, limit as i64], |r| {
        let (body, variables, headers): (String, String, String) = (r.get(10)?, r.get(11)?, r.get(12)?);
        let kept = !body.is_empty() || variables != "{}" || headers != "{}";
        let json = |t: &str| serde_json::from_str(t).unwrap_or(Value::Null);
        Ok(EmailRecord {
            id: r.get(0)?,
            to_email: r.get(1)?,
            from_email: r.get(2)?,
            subject: r.get(3)?,
            status: r.get(4)?,
            source_type: r.get(5)?,
            created_at: r.get(6)?,
            sent_at: r.get(7)?,
            opened_at: r.get(8)?,
            clicked_at: r.get(9)?,
            content: kept.then(|| (body, json(&variables), json(&headers))),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A contact's consent records for an export, oldest first, as JSON objects.
pub fn consents_of(conn: &Connection, contact_seq: i64) -> Result<Vec<Value>> {
    let mut statement = conn.prepare(
        "SELECT json_object('topic', topic_name, 'method', method, 'formId', form_id, 'ip', ip,
                 'userAgent', user_agent, 'consentText', consent_text, 'requestedAt', requested_at,
                 'confirmedAt', confirmed_at, 'confirmIp', confirm_ip, 'confirmUserAgent', confirm_user_agent)
         FROM consents WHERE contact_seq = ?1 ORDER BY seq",
    )?;
    let rows = statement.query_map([contact_seq], |r| r.get::<_, String>(0))?;
    rows.map(|r| Ok(serde_json::from_str(&r?).unwrap_or(Value::Null))).collect()
}

/// The mail a contact sent the project, for an export: `(id, from, subject, received_at)`.
pub fn inbound_of(
    conn: &Connection,
    contact: &str,
    limit: usize,
) -> Result<Vec<(String, String, String, i64)>> {
    let mut statement = conn.prepare(
        "SELECT id, from_email, subject, received_at FROM inbound_messages WHERE contact_id = ?1
         ORDER BY received_at LIMIT ?2",
    )?;
    let rows = statement
        .query_map(params![contact, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod tests {
    use super::STAGES;

    /// Each batch finds its rows through an index (the webhook log is searched within the
    /// project's own deliveries).
    #[test]
    fn every_stage_searches_an_index() {
        for (table, sql) in STAGES {
            let plan = crate::db::batches::searches_an_index(sql, &[&"c", &"p", &200, &"a@b.c", &0]);
            assert!(plan.is_ok(), "{table}: {plan:?}");
        }
    }
}
