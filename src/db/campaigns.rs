//! Campaigns: their content, audience, state, expansion cursor and counters.
//!
//! The counters are kept by triggers on `emails` (migration V7), so only reads live here.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A campaign as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Campaign {
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
    pub status: String,
    pub audience_type: String,
    pub segment_id: Option<String>,
    /// JSON text of the condition tree (FILTERED).
    pub audience_condition: Option<String>,
    pub template_id: Option<String>,
    /// MARKETING mail to a topic goes only to contacts subscribed to it (and to marketing).
    pub topic_id: Option<String>,
    pub scheduled_for: Option<i64>,
    /// Sent at this wall-clock time (`2026-12-01T09:00`) in each contact's time zone.
    pub local_time: Option<String>,
    /// Clicks on its links are tracked (unless the server tracks none).
    pub track_links: bool,
    pub sent_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub expand_cursor: i64,
    pub expanded: bool,
    pub total_recipients: i64,
    pub counts: Counts,
    pub created_at: i64,
    pub updated_at: i64,
    /// Why sending stopped before the whole audience was queued (the marketing cap was met).
    pub stopped_reason: Option<String>,
    /// Listed in the project's public archive once it has gone out.
    pub public: bool,
    /// JSON object: what the archived copy is rendered with in place of a contact's data.
    pub archive_data: Option<String>,
    /// What the author wrote in: `html`, `mjml`, `markdown` or `blocks`.
    pub format: String,
    /// The author's text, when `body` was compiled from it (not for `html`).
    pub source: Option<String>,
    /// Its A/B test, when it has one (the variants are `db::ab_tests::variants`).
    pub ab: Option<super::ab_tests::AbTest>,
}

/// What happened to a campaign's emails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub sent: i64,
    pub failed: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
    pub unsubscribed: i64,
    /// Emails answered by their recipient (inbound mail naming them).
    pub replied: i64,
    /// Emails opened, and clicked, by a person at least once (not only by machines).
    pub opened_by_people: i64,
    pub clicked_by_people: i64,
}

const COLUMNS: &str =
    "id, project_id, name, description, subject, body, from_email, from_name, reply_to, type,
     status, audience_type, segment_id, audience_condition, template_id, scheduled_for, sent_at, finished_at,
     expand_cursor, expanded, total_recipients, sent_count, failed_count, delivered_count, opened_count,
     clicked_count, bounced_count, complained_count, unsubscribed_count, created_at, updated_at, stopped_reason,
     replied_count, topic_id, public, archive_data, format, source, people_opened_count, people_clicked_count, local_time, track_links,
     ab_share, ab_metric, ab_wait_hours, ab_pick, ab_phase, ab_decide_at, ab_winner, ab_decided_by, ab_decided_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Campaign> {
    Ok(Campaign {
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
        status: r.get(10)?,
        audience_type: r.get(11)?,
        segment_id: r.get(12)?,
        audience_condition: r.get(13)?,
        template_id: r.get(14)?,
        scheduled_for: r.get(15)?,
        sent_at: r.get(16)?,
        finished_at: r.get(17)?,
        expand_cursor: r.get(18)?,
        expanded: r.get(19)?,
        total_recipients: r.get(20)?,
        counts: Counts {
            sent: r.get(21)?,
            failed: r.get(22)?,
            delivered: r.get(23)?,
            opened: r.get(24)?,
            clicked: r.get(25)?,
            bounced: r.get(26)?,
            complained: r.get(27)?,
            unsubscribed: r.get(28)?,
            replied: r.get(32)?,
            opened_by_people: r.get(38)?,
            clicked_by_people: r.get(39)?,
        },
        created_at: r.get(29)?,
        updated_at: r.get(30)?,
        stopped_reason: r.get(31)?,
        topic_id: r.get(33)?,
        public: r.get(34)?,
        archive_data: r.get(35)?,
        format: r.get(36)?,
        source: r.get(37)?,
        local_time: r.get(40)?,
        track_links: r.get(41)?,
        ab: super::ab_tests::from_row_at(r, 42)?,
    })
}

/// Sets the wall-clock time campaign `id` goes out at in each contact's zone (`None`: at one
/// instant for all).
pub fn set_local_time(conn: &Connection, id: &str, local_time: Option<&str>) -> Result<()> {
    conn.prepare_cached("UPDATE campaigns SET local_time = ?2 WHERE id = ?1")?
        .execute(params![id, local_time])?;
    Ok(())
}

/// Ends a campaign's expansion early, with the recipients queued so far and the reason.
pub fn stop_expansion(
    conn: &Connection,
    id: &str,
    cursor: i64,
    added: i64,
    reason: &str,
    now: i64,
) -> Result<()> {
    record_expansion(conn, id, cursor, added, true, now)?;
    conn.prepare_cached("UPDATE campaigns SET stopped_reason = ?2 WHERE id = ?1")?
        .execute(params![id, reason])?;
    Ok(())
}

/// Inserts a new campaign (counters start at zero).
pub fn insert(conn: &Connection, c: &Campaign) -> Result<()> {
    conn.execute(
        "INSERT INTO campaigns (id, project_id, name, description, subject, body, from_email, from_name, reply_to, type,
             status, audience_type, segment_id, audience_condition, template_id, scheduled_for, created_at, updated_at,
             topic_id, public, archive_data, format, source, track_links)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
        params![
            c.id,
            c.project_id,
            c.name,
            c.description,
            c.subject,
            c.body,
            c.from_email,
            c.from_name,
            c.reply_to,
            c.kind,
            c.status,
            c.audience_type,
            c.segment_id,
            c.audience_condition,
            c.template_id,
            c.scheduled_for,
            c.created_at,
            c.updated_at,
            c.topic_id,
            c.public,
            c.archive_data,
            c.format,
            c.source,
            c.track_links
        ],
    )?;
    Ok(())
}

/// Writes a campaign's content, audience and schedule (not its state or counters).
pub fn update_content(conn: &Connection, c: &Campaign) -> Result<()> {
    conn.execute(
        "UPDATE campaigns SET name = ?2, description = ?3, subject = ?4, body = ?5, from_email = ?6, from_name = ?7,
             reply_to = ?8, type = ?9, audience_type = ?10, segment_id = ?11, audience_condition = ?12,
             template_id = ?13, scheduled_for = ?14, updated_at = ?15, topic_id = ?16, public = ?17,
             archive_data = ?18, format = ?19, source = ?20, track_links = ?21
         WHERE id = ?1",
        params![
            c.id,
            c.name,
            c.description,
            c.subject,
            c.body,
            c.from_email,
            c.from_name,
            c.reply_to,
            c.kind,
            c.audience_type,
            c.segment_id,
            c.audience_condition,
            c.template_id,
            c.scheduled_for,
            c.updated_at,
            c.topic_id,
            c.public,
            c.archive_data,
            c.format,
            c.source,
            c.track_links
        ],
    )?;
    Ok(())
}

/// Whether a campaign is listed in the archive and what its archived copy is rendered with
/// (in any state: neither changes what was sent); whether it exists.
pub fn set_publication(
    conn: &Connection,
    id: &str,
    public: bool,
    archive_data: Option<&str>,
    now: i64,
) -> Result<bool> {
    Ok(conn
        .prepare_cached("UPDATE campaigns SET public = ?2, archive_data = ?3, updated_at = ?4 WHERE id = ?1")?
        .execute(params![id, public, archive_data, now])?
        == 1)
}

/// Moves a campaign to `status` when it is in one of `from`; whether it moved. `sent_at`,
/// `finished_at` and `scheduled_for` are set when given.
pub fn transition(
    conn: &Connection,
    id: &str,
    from: &[&str],
    status: &str,
    stamps: Stamps,
    now: i64,
) -> Result<bool> {
    let allowed = from.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
    Ok(conn.execute(
        &format!(
            "UPDATE campaigns SET status = ?2, sent_at = coalesce(?3, sent_at), finished_at = coalesce(?4, finished_at),
                 scheduled_for = CASE WHEN ?5 THEN ?6 ELSE scheduled_for END, updated_at = ?7
             WHERE id = ?1 AND status IN ({allowed})"
        ),
        params![
            id,
            status,
            stamps.sent_at,
            stamps.finished_at,
            stamps.scheduled_for.is_some(),
            stamps.scheduled_for.flatten(),
            now
        ],
    )? > 0)
}

/// Times a [`transition`] sets; `scheduled_for: Some(None)` clears it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stamps {
    pub sent_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub scheduled_for: Option<Option<i64>>,
}

/// Records an expansion batch: the new cursor, how many rows it added, and whether the audience
/// is done; a campaign whose emails have all left the queue by then becomes SENT.
pub fn record_expansion(
    conn: &Connection,
    id: &str,
    cursor: i64,
    added: i64,
    done: bool,
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "UPDATE campaigns SET expand_cursor = ?2, total_recipients = total_recipients + ?3, expanded = ?4
         WHERE id = ?1",
    )?
    .execute(params![id, cursor, added, done])?;
    if done {
        conn.prepare_cached(
            "UPDATE campaigns SET status = 'SENT', finished_at = ?2
             WHERE id = ?1 AND status = 'SENDING' AND sent_count + failed_count >= total_recipients",
        )?
        .execute(params![id, now])?;
    }
    Ok(())
}

pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Campaign>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM campaigns WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// A campaign by id alone (for jobs and the delivery worker, which hold ids from rows).
pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Campaign>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM campaigns WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM campaigns WHERE id = ?1", [id])? > 0)
}

/// One page of a project's campaigns (`only` a status; search in name, subject and sender).
pub fn page(conn: &Connection, q: &super::ListQuery) -> Result<(Vec<Campaign>, i64)> {
    Ok(super::list_page(conn, ("campaigns", COLUMNS, &["name", "subject", "from_email"]), q, from_row)?)
}

/// A campaign as the public archive lists it: what its entry shows, without its body.
#[derive(Debug, Clone, PartialEq)]
pub struct Archived {
    pub id: String,
    pub subject: String,
    pub archive_data: Option<String>,
    pub sent_at: i64,
    /// With the id, names the version of its content (see `core::archive`).
    pub updated_at: i64,
}

/// What makes a campaign part of the archive: public, and gone out (not cancelled).
const IN_ARCHIVE: &str = "public = 1 AND sent_at IS NOT NULL AND status IN ('SENDING', 'SENT')";

/// A page of the project's archive, newest first, and how many campaigns it holds in all.
pub fn archived(
    conn: &Connection,
    project: &str,
    offset: usize,
    limit: usize,
) -> Result<(Vec<Archived>, i64)> {
    let total = conn
        .prepare_cached(&format!("SELECT count(*) FROM campaigns WHERE project_id = ?1 AND {IN_ARCHIVE}"))?
        .query_row([project], |r| r.get(0))?;
    let rows = conn
        .prepare_cached(&format!(
            "SELECT id, subject, archive_data, sent_at, updated_at FROM campaigns
             WHERE project_id = ?1 AND {IN_ARCHIVE} ORDER BY sent_at DESC, id DESC LIMIT ?2 OFFSET ?3"
        ))?
        .query_map(params![project, limit as i64, offset as i64], |r| {
            Ok(Archived {
                id: r.get(0)?,
                subject: r.get(1)?,
                archive_data: r.get(2)?,
                sent_at: r.get(3)?,
                updated_at: r.get(4)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok((rows, total))
}

/// The version (`updated_at`) of campaign `id` of the project, when it is in the archive.
pub fn archived_version(conn: &Connection, project: &str, id: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT updated_at FROM campaigns WHERE id = ?1 AND project_id = ?2 AND {IN_ARCHIVE}"
        ))?
        .query_row([id, project], |r| r.get(0))
        .optional()?)
}

/// Campaign `id` of the project, when it is in the archive.
pub fn archived_one(conn: &Connection, project: &str, id: &str) -> Result<Option<Campaign>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM campaigns WHERE id = ?1 AND project_id = ?2 AND {IN_ARCHIVE}"
        ))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// The project's SCHEDULED campaigns, soonest first, at most `limit`.
pub fn scheduled(conn: &Connection, project: &str, limit: usize) -> Result<Vec<Campaign>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM campaigns WHERE project_id = ?1 AND status = 'SCHEDULED'
             ORDER BY scheduled_for LIMIT ?2"
        ))?
        .query_map(params![project, limit as i64], from_row)?
        .collect::<rusqlite::Result<_>>()?)
}

/// The project's campaigns that went out (SENDING or SENT), latest first, at most `limit`.
pub fn sent(conn: &Connection, project: &str, limit: usize) -> Result<Vec<Campaign>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM campaigns WHERE project_id = ?1 AND status IN ('SENDING', 'SENT')
             ORDER BY coalesce(sent_at, created_at) DESC LIMIT ?2"
        ))?
        .query_map(params![project, limit as i64], from_row)?
        .collect::<rusqlite::Result<_>>()?)
}
