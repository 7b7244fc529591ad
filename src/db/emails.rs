//! The emails queue and each message's state.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{email_parts, fair};

/// An email row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Email {
    pub id: String,
    pub project_id: String,
    pub contact_id: Option<String>,
    pub to_email: String,
    pub to_name: Option<String>,
    pub from_email: String,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub subject: String,
    pub body: String,
    pub headers: String,
    pub attachments: Option<String>,
    pub variables: String,
    pub kind: String,
    pub source_type: String,
    pub template_id: Option<String>,
    pub campaign_id: Option<String>,
    pub workflow_id: Option<String>,
    pub status: String,
    pub message_id: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub opened_at: Option<i64>,
    pub clicked_at: Option<i64>,
    /// The request's attachments, stored once (`attachment_sets`) for all its recipients.
    pub attachment_set: Option<String>,
    /// A message submitted over SMTP, kept as written (`raw_messages`) for all its recipients.
    pub raw_message: Option<String>,
    /// The bytes of `body` and `attachments` a claim left out, as each was larger than
    /// [`email_parts::WITH_BATCH_BYTES`] (0: nothing left out): read with
    /// [`email_parts::left_out`] when the email is sent.
    pub left_out: u64,
    /// The A/B test variant of a campaign's test share it carries (`db::ab_tests`).
    pub variant: Option<i64>,
    /// Its receiving provider's queue, once the delivery worker has looked (written with its
    /// outcome; not read back).
    pub provider: Option<String>,
}

const COLUMNS: &str = "id, project_id, contact_id, to_email, to_name, from_email, from_name, reply_to, subject, body,
     headers, attachments, variables, type, source_type, template_id, campaign_id, workflow_id, status, message_id,
     attempts, last_error, created_at, sent_at, opened_at, clicked_at, attachment_set, raw_message, variant";

/// [`COLUMNS`] as a claim reads them: `body` and `attachments` only when small, and then the
/// bytes of those left out.
const CLAIMED_COLUMNS: &str = "id, project_id, contact_id, to_email, to_name, from_email, from_name, reply_to, subject,
     CASE WHEN octet_length(body) <= ?6 THEN body ELSE '' END,
     headers, CASE WHEN octet_length(attachments) <= ?6 THEN attachments END,
     variables, type, source_type, template_id, campaign_id, workflow_id, status, message_id,
     attempts, last_error, created_at, sent_at, opened_at, clicked_at, attachment_set, raw_message, variant,
     iif(octet_length(body) > ?6, octet_length(body), 0) + iif(octet_length(attachments) > ?6, octet_length(attachments), 0)";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Email> {
    from_row_at(r, 0)
}

/// An email from the [`COLUMNS`] starting at column `at`.
fn from_row_at(r: &Row<'_>, at: usize) -> rusqlite::Result<Email> {
    Ok(Email {
        id: r.get(at)?,
        project_id: r.get(at + 1)?,
        contact_id: r.get(at + 2)?,
        to_email: r.get(at + 3)?,
        to_name: r.get(at + 4)?,
        from_email: r.get(at + 5)?,
        from_name: r.get(at + 6)?,
        reply_to: r.get(at + 7)?,
        subject: r.get(at + 8)?,
        body: r.get(at + 9)?,
        headers: r.get(at + 10)?,
        attachments: r.get(at + 11)?,
        variables: r.get(at + 12)?,
        kind: r.get(at + 13)?,
        source_type: r.get(at + 14)?,
        template_id: r.get(at + 15)?,
        campaign_id: r.get(at + 16)?,
        workflow_id: r.get(at + 17)?,
        status: r.get(at + 18)?,
        message_id: r.get(at + 19)?,
        attempts: r.get(at + 20)?,
        last_error: r.get(at + 21)?,
        created_at: r.get(at + 22)?,
        sent_at: r.get(at + 23)?,
        opened_at: r.get(at + 24)?,
        clicked_at: r.get(at + 25)?,
        attachment_set: r.get(at + 26)?,
        raw_message: r.get(at + 27)?,
        variant: r.get(at + 28)?,
        provider: None,
        left_out: 0,
    })
}

/// One page of a contact's emails, newest first, after the (created_at, id) of the previous
/// page's last email (the `emails_by_contact` index carries this order).
pub fn for_contact(
    conn: &Connection,
    project: &str,
    contact: &str,
    after: Option<(i64, String)>,
    limit: usize,
) -> Result<Vec<Email>> {
    let (at, id) = after.unzip();
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM emails WHERE contact_id = ?1 AND project_id = ?2
           AND (?3 IS NULL OR (created_at, id) < (?3, ?4))
         ORDER BY created_at DESC, id DESC LIMIT ?5"
    ))?;
    Ok(stmt
        .query_map(params![contact, project, at, id, limit as i64], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// How many emails a contact has.
pub fn count_for_contact(conn: &Connection, project: &str, contact: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM emails WHERE contact_id = ?1 AND project_id = ?2")?
        .query_row([contact, project], |r| r.get(0))?)
}

/// Queues an email (status QUEUED, due now) or records one that will not be sent (FAILED with
/// `last_error`), in the caller's transaction.
pub fn insert(conn: &Connection, e: &Email, now: i64) -> Result<()> {
    conn.prepare_cached(&format!(
        "INSERT INTO emails ({COLUMNS}, next_attempt_at, updated_at, failed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,
                 ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?30, ?31)"
    ))?
    .execute(params![
        e.id,
        e.project_id,
        e.contact_id,
        e.to_email,
        e.to_name,
        e.from_email,
        e.from_name,
        e.reply_to,
        e.subject,
        e.body,
        e.headers,
        e.attachments,
        e.variables,
        e.kind,
        e.source_type,
        e.template_id,
        e.campaign_id,
        e.workflow_id,
        e.status,
        e.message_id,
        e.attempts,
        e.last_error,
        e.created_at,
        e.sent_at,
        e.opened_at,
        e.clicked_at,
        e.attachment_set,
        e.raw_message,
        e.variant,
        now,
        (e.status == "FAILED").then_some(now),
    ])?;
    if e.status == "QUEUED" {
        super::effects::wake(super::effects::Wake::Delivery);
    }
    Ok(())
}

/// Whether `project` already has an email with this Message-ID to `to` (a message submitted
/// again).
pub fn has_message_to(conn: &Connection, project: &str, message_id: &str, to: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM emails WHERE project_id = ?1 AND message_id = ?2 AND to_email = ?3)",
        )?
        .query_row([project, message_id, to], |r| r.get(0))?)
}

/// Queues one recipient's email of a campaign at `priority`, unless the campaign already has an
/// email for this contact; whether it was added. Its subject and body stay empty: the worker
/// reads them from the campaign.
/// `due`: when it may go (`next_attempt_at`), at or after `now`.
pub fn insert_campaign_row(conn: &Connection, e: &Email, priority: i64, due: i64, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO emails (id, project_id, contact_id, to_email, from_email, from_name, reply_to, subject, body,
                 headers, variables, type, source_type, template_id, campaign_id, status, message_id, priority,
                 next_attempt_at, created_at, updated_at, variant)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, '', '', '{}', '{}', ?8, 'CAMPAIGN', ?9, ?10, 'QUEUED', ?11, ?12, ?14, ?13, ?13,
                     ?15)
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![
            e.id,
            e.project_id,
            e.contact_id,
            e.to_email,
            e.from_email,
            e.from_name,
            e.reply_to,
            e.kind,
            e.template_id,
            e.campaign_id,
            e.message_id,
            priority,
            now,
            due,
            e.variant
        ])?
        > 0)
    .inspect(|added| {
        if *added {
            super::effects::wake(super::effects::Wake::Delivery);
        }
    })
}

/// The id of the email campaign `campaign` sent to contact `contact`, if it did.
pub fn of_campaign_contact(conn: &Connection, campaign: &str, contact: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM emails WHERE campaign_id = ?1 AND contact_id = ?2 AND source_type = 'CAMPAIGN'",
        )?
        .query_row([campaign, contact], |r| r.get(0))
        .optional()?)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Email>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM emails WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

/// Claims up to `limit` queued emails that are due and not held by another worker, round-robin
/// across projects within their room in `turns` ([`fair`]), each project's highest priority and
/// longest due first. `in_hand` (ids) are the claiming worker's own emails, still being sent or
/// just recorded: they are neither claimed nor locked again.
pub fn claim(
    conn: &Connection,
    now: i64,
    limit: usize,
    lease_ms: i64,
    in_hand: &[String],
    turns: &mut fair::Turns,
) -> Result<Vec<Email>> {
    let queue = Queued { now, in_hand: serde_json::to_string(in_hand).unwrap_or_else(|_| "[]".into()) };
    let claimed: Vec<Email> = fair::claim(conn, &queue, turns, limit)?.into_iter().map(|(_, e)| e).collect();
    let ids = serde_json::to_string(&claimed.iter().map(|e| &e.id).collect::<Vec<_>>()).unwrap_or_default();
    conn.prepare_cached("UPDATE emails SET locked_until = ?1 WHERE id IN (SELECT value FROM json_each(?2))")?
        .execute(params![now + lease_ms, ids])?;
    Ok(claimed)
}

/// The queue of emails due at `now`, for [`fair::claim`].
struct Queued {
    now: i64,
    /// The claiming worker's emails, as a JSON array of ids.
    in_hand: String,
}

impl fair::Queue for Queued {
    type Row = Email;

    fn owners(
        &self,
        conn: &Connection,
        after: Option<&fair::Owner>,
        limit: usize,
    ) -> Result<Vec<fair::Owner>> {
        fair::projects_with(conn, "emails", "status = 'QUEUED'", after, limit)
    }

    fn due(&self, conn: &Connection, owner: &fair::Owner, limit: usize, offset: usize) -> Result<Vec<Email>> {
        Ok(conn
            .prepare_cached(&format!(
                "SELECT {CLAIMED_COLUMNS} FROM emails
             WHERE status = 'QUEUED' AND project_id = ?1 AND next_attempt_at <= ?2
               AND (locked_until IS NULL OR locked_until <= ?2)
               AND id NOT IN (SELECT value FROM json_each(?3))
             ORDER BY priority, next_attempt_at LIMIT ?4 OFFSET ?5"
            ))?
            .query_map(
                params![
                    owner,
                    self.now,
                    self.in_hand,
                    limit as i64,
                    offset as i64,
                    email_parts::WITH_BATCH_BYTES
                ],
                |r| {
                    let left_out: i64 = r.get(29)?;
                    Ok(Email { left_out: left_out.max(0) as u64, ..from_row(r)? })
                },
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

/// The relay accepted the message; `subject` is the subject as sent (rendered).
pub fn mark_sent(
    conn: &Connection,
    id: &str,
    subject: &str,
    provider: Option<&str>,
    now: i64,
) -> Result<bool> {
    Ok(conn.prepare_cached(
        "UPDATE emails SET status = 'SENT', sent_at = ?2, subject = ?3, attempts = attempts + 1, locked_until = NULL,
             last_error = NULL, updated_at = ?2, provider = coalesce(?4, provider), held = NULL
         WHERE id = ?1 AND status = 'QUEUED'",
    )?
    .execute(params![id, now, subject, provider])? > 0)
}

/// Holds a queued email back until `next_at` for `reason` (its provider's rate or rest, its
/// sender domain's warm-up), in `provider`'s queue, without using up a try.
pub fn hold(conn: &Connection, id: &str, next_at: i64, provider: Option<&str>, reason: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE emails SET locked_until = NULL, next_attempt_at = ?2, provider = coalesce(?3, provider), held = ?4
         WHERE id = ?1 AND status = 'QUEUED'",
    )?
    .execute(params![id, next_at, provider, reason])?;
    Ok(())
}

/// A temporary failure: try again at `next_at`.
pub fn retry_later(conn: &Connection, id: &str, error: &str, next_at: i64, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE emails SET attempts = attempts + 1, last_error = ?2, next_attempt_at = ?3, locked_until = NULL,
             updated_at = ?4 WHERE id = ?1 AND status = 'QUEUED'",
    )?
    .execute(params![id, error, next_at, now])?;
    Ok(())
}

/// The message will not be sent.
pub fn mark_failed(conn: &Connection, id: &str, error: &str, count_attempt: bool, now: i64) -> Result<bool> {
    Ok(conn.prepare_cached(
        "UPDATE emails SET status = 'FAILED', last_error = ?2, attempts = attempts + ?3, locked_until = NULL,
             failed_at = ?4, updated_at = ?4 WHERE id = ?1 AND status = 'QUEUED'",
    )?
    .execute(params![id, error, i64::from(count_attempt), now])? > 0)
}

/// Extends the leases of claimed emails still queued to `locked_until`.
pub fn renew_leases(conn: &Connection, ids: &[String], locked_until: i64) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("UPDATE emails SET locked_until = ?2 WHERE id = ?1 AND status = 'QUEUED'")?;
    for id in ids {
        stmt.execute(params![id, locked_until])?;
    }
    Ok(())
}

/// Gives a claimed email back untouched, due at `next_at` (shutdown, throttling).
pub fn release(conn: &Connection, id: &str, next_at: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE emails SET locked_until = NULL, next_attempt_at = ?2 WHERE id = ?1 AND status = 'QUEUED'",
    )?
    .execute(params![id, next_at])?;
    Ok(())
}

/// Ends every email lease at once (their process is known to be gone: see [`crate::lock`]).
pub fn take_back_leases(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE emails SET locked_until = NULL WHERE status = 'QUEUED' AND locked_until > ?1",
        [now],
    )?)
}

/// The queued emails by state, for the metrics: `due` (waiting for a worker), `retrying` (a
/// temporary failure, due later), `sending` (held by a worker now).
pub fn queue_states(conn: &Connection, now: i64) -> Result<Vec<(String, i64)>> {
    Ok(conn.prepare_cached(
        "SELECT CASE WHEN locked_until > ?1 THEN 'sending' WHEN next_attempt_at > ?1 THEN 'retrying' ELSE 'due' END AS state,
                count(*)
         FROM emails WHERE status = 'QUEUED' GROUP BY state ORDER BY state",
    )?
    .query_map([now], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// When the next queued email is due (for the worker's sleep), leaving out the worker's own
/// emails in hand (`in_hand`, ids): it hears of those when their sends finish.
pub fn next_due(conn: &Connection, in_hand: &[String]) -> Result<Option<i64>> {
    let in_hand = serde_json::to_string(in_hand).unwrap_or_else(|_| "[]".into());
    Ok(conn.query_row(
        "SELECT min(max(next_attempt_at, coalesce(locked_until, 0))) FROM emails
         WHERE status = 'QUEUED' AND id NOT IN (SELECT value FROM json_each(?1))",
        [in_hand],
        |r| r.get(0),
    )?)
}

/// Takes a cancelled campaign's queued emails out of the queue, up to `limit` of its rows with a
/// contact id after `after` (keyset order): they fail with the reason and are not sent. Rows a
/// worker holds right now are left to it (it sees the cancellation before sending, or has sent).
/// Returns the last contact id visited, or `None` when the rows ran out.
pub fn cancel_queued(
    conn: &Connection,
    campaign: &str,
    after: &str,
    limit: usize,
    now: i64,
) -> Result<Option<String>> {
    let rows: Vec<(i64, String, String)> = conn
        .prepare_cached(
            "SELECT rowid, contact_id, status FROM emails
             WHERE campaign_id = ?1 AND source_type = 'CAMPAIGN' AND contact_id > ?2
             ORDER BY contact_id LIMIT ?3",
        )?
        .query_map(params![campaign, after, limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    let mut fail = conn.prepare_cached(
        "UPDATE emails SET status = 'FAILED', last_error = 'not sent: the campaign was cancelled', failed_at = ?2,
             updated_at = ?2
         WHERE rowid = ?1 AND status = 'QUEUED' AND (locked_until IS NULL OR locked_until <= ?2)",
    )?;
    for (rowid, _, status) in &rows {
        if status == "QUEUED" {
            fail.execute(params![rowid, now])?;
        }
    }
    Ok(if rows.len() < limit { None } else { rows.last().map(|(_, contact, _)| contact.clone()) })
}

/// Records that the recipient unsubscribed through this email (the first time only).
/// Deletes a QUEUED email that is not to be sent at all (its campaign was cancelled or deleted).
pub fn discard_queued(conn: &Connection, id: &str) -> Result<()> {
    conn.execute("DELETE FROM emails WHERE id = ?1 AND status = 'QUEUED'", [id])?;
    Ok(())
}

pub fn credit_unsubscribe(conn: &Connection, id: &str, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE emails SET unsubscribed_at = ?2 WHERE id = ?1 AND unsubscribed_at IS NULL AND sent_at IS NOT NULL",
        params![id, now],
    )? > 0)
}

/// The rank of a delivered email's status: it only ever moves up (appliance.md section 11).
pub fn rank(status: &str) -> u8 {
    match status {
        "SENT" => 1,
        "DELIVERED" => 2,
        "OPENED" => 3,
        "CLICKED" => 4,
        "BOUNCED" => 5,
        "COMPLAINED" => 6,
        _ => 0,
    }
}

/// Moves a sent email forward to `status` (never back); stamps the matching time. Returns
/// whether the status changed.
pub fn advance(conn: &Connection, id: &str, status: &str, now: i64) -> Result<bool> {
    let Some(email) = get(conn, id)? else { return Ok(false) };
    if email.sent_at.is_none() {
        return Ok(false);
    }
    let stamp = match status {
        "OPENED" => "opened_at = coalesce(opened_at, ?3),",
        "CLICKED" => "clicked_at = coalesce(clicked_at, ?3), opened_at = coalesce(opened_at, ?3),",
        _ => "",
    };
    conn.execute(
        &format!("UPDATE emails SET {stamp} updated_at = ?3 WHERE id = ?1"),
        params![id, status, now],
    )?;
    if rank(status) <= rank(&email.status) {
        return Ok(false);
    }
    conn.execute("UPDATE emails SET status = ?2 WHERE id = ?1", params![id, status])?;
    Ok(true)
}

/// The email that went out with this `Message-ID` (with or without its angle brackets).
pub fn by_message_id(conn: &Connection, message_id: &str) -> Result<Option<Email>> {
    let bare = message_id.trim().trim_start_matches('<').trim_end_matches('>');
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM emails WHERE message_id = ?1 LIMIT 1"))?
        .query_row([format!("<{bare}>")], from_row)
        .optional()?)
}

/// The email of `project` a reply answers: the one that went out with `message_id` (`<…>` or
/// bare), to `from` when several share it.
pub fn answered(conn: &Connection, project: &str, message_id: &str, from: &str) -> Result<Option<Email>> {
    let bare = message_id.trim().trim_start_matches('<').trim_end_matches('>');
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM emails WHERE message_id = ?1 AND project_id = ?2
             ORDER BY to_email = ?3 COLLATE NOCASE DESC, rowid LIMIT 1"
        ))?
        .query_row(params![format!("<{bare}>"), project, from], from_row)
        .optional()?)
}

/// Marks an email replied to; false when it already was (a campaign counts it once).
pub fn mark_replied(conn: &Connection, id: &str, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE emails SET replied_at = ?2 WHERE id = ?1 AND replied_at IS NULL")?
        .execute(params![id, now])?
        == 1)
}

/// Up to `limit` emails with this Message-ID (`<…>` or bare), in any project, oldest first.
pub fn all_by_message_id(conn: &Connection, message_id: &str, limit: usize) -> Result<Vec<Email>> {
    let bare = message_id.trim().trim_start_matches('<').trim_end_matches('>');
    let mut statement = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM emails WHERE message_id = ?1 ORDER BY rowid LIMIT ?2"
    ))?;
    let rows = statement
        .query_map(params![format!("<{bare}>"), limit as i64], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// The kind of bounce recorded on an email, if any.
pub fn bounce_type(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT bounce_type FROM emails WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()
        .map(Option::flatten)?)
}

/// Records the kind of bounce; a hard bounce is never turned back into a soft one. Whether it
/// changed.
pub fn set_bounce_type(conn: &Connection, id: &str, kind: &str, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE emails SET bounce_type = ?2, updated_at = ?3
             WHERE id = ?1 AND (bounce_type IS NULL OR (bounce_type = 'soft' AND ?2 = 'hard'))",
        )?
        .execute(params![id, kind, now])?
        > 0)
}
