//! Each open and click of a sent email as it came (V37), and what a campaign's report reads from
//! it and from the campaign's emails: opens and clicks over time, clicks per link, the
//! recipients with their status, the receiving domains.

use super::error::Result;
use rusqlite::{Connection, Row, params};

/// One open or click.
#[derive(Debug, Clone, PartialEq)]
pub struct Engagement {
    pub project_id: String,
    pub email_id: String,
    pub campaign_id: Option<String>,
    /// `open` or `click`.
    pub kind: &'static str,
    pub url: Option<String>,
    /// Why a machine made it (`privacy_proxy`, `scanner`, `crawler`), or `None` for a person.
    pub machine: Option<&'static str>,
    pub at: i64,
    /// A person's click whose event waits until then (`core::engagement::BURST_MS`).
    pub held_until: Option<i64>,
}

/// A click whose event is held.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub id: i64,
    pub email_id: String,
    pub url: Option<String>,
    pub machine: Option<String>,
}

/// How many opens or clicks of email `email` are recorded: in all, and by people.
pub fn count(conn: &Connection, email: &str, kind: &str) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*), count(*) FILTER (WHERE machine IS NULL) FROM email_engagements
             WHERE email_id = ?1 AND kind = ?2",
        )?
        .query_row(params![email, kind], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// Whether a link of email `email` other than `url` was clicked since `since`.
pub fn other_link_since(conn: &Connection, email: &str, url: &str, since: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM email_engagements
                            WHERE email_id = ?1 AND kind = 'click' AND at >= ?3 AND url IS NOT ?2)",
        )?
        .query_row(params![email, url, since], |r| r.get(0))?)
}

/// Marks as a machine's (`machine` names why) the clicks of email `email` since `since`.
pub fn mark_machine(conn: &Connection, email: &str, since: i64, machine: &str) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE email_engagements SET machine = ?3
             WHERE email_id = ?1 AND kind = 'click' AND at >= ?2 AND machine IS NULL",
        )?
        .execute(params![email, since, machine])?)
}

pub fn insert(conn: &Connection, e: &Engagement) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO email_engagements (project_id, email_id, campaign_id, kind, url, machine, at, held_until)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![e.project_id, e.email_id, e.campaign_id, e.kind, e.url, e.machine, e.at, e.held_until])?;
    Ok(())
}

/// Project `project`'s held clicks due by `now`, oldest first, at most `limit`.
pub fn held_due(conn: &Connection, project: &str, now: i64, limit: i64) -> Result<Vec<Held>> {
    let mut statement = conn.prepare_cached(
        "SELECT id, email_id, url, machine FROM email_engagements
         WHERE project_id = ?1 AND held_until IS NOT NULL AND held_until <= ?2 ORDER BY held_until LIMIT ?3",
    )?;
    let rows = statement.query_map(params![project, now, limit], |r| {
        Ok(Held { id: r.get(0)?, email_id: r.get(1)?, url: r.get(2)?, machine: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When project `project`'s next held click is due, if one is held.
pub fn next_held(conn: &Connection, project: &str) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT min(held_until) FROM email_engagements WHERE project_id = ?1 AND held_until IS NOT NULL",
        )?
        .query_row(params![project], |r| r.get(0))?)
}

/// The held click `id`'s event was emitted.
pub fn released(conn: &Connection, id: i64) -> Result<()> {
    conn.prepare_cached("UPDATE email_engagements SET held_until = NULL WHERE id = ?1")?
        .execute(params![id])?;
    Ok(())
}

/// Opens and clicks of campaign `campaign` per bucket of `bucket_ms` from `start`:
/// (bucket, kind, by a machine, count), for the buckets before `buckets`.
pub fn timeline(
    conn: &Connection,
    campaign: &str,
    start: i64,
    bucket_ms: i64,
    buckets: i64,
) -> Result<Vec<(i64, String, bool, i64)>> {
    let mut statement = conn.prepare_cached(
        "SELECT (at - ?2) / ?3 AS bucket, kind, machine IS NOT NULL, count(*) FROM email_engagements
         WHERE campaign_id = ?1 AND at >= ?2 AND at < ?2 + ?3 * ?4
         GROUP BY bucket, kind, machine IS NOT NULL ORDER BY bucket",
    )?;
    let rows = statement.query_map(params![campaign, start, bucket_ms, buckets], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A link's clicks: by people, by distinct recipients among them, and by machines.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkClicks {
    pub url: String,
    pub clicks: i64,
    pub unique: i64,
    pub machine: i64,
}

/// The most clicked links of campaign `campaign`, at most `limit`.
pub fn links(conn: &Connection, campaign: &str, limit: i64) -> Result<Vec<LinkClicks>> {
    let mut statement = conn.prepare_cached(
        "SELECT url, sum(machine IS NULL), count(DISTINCT CASE WHEN machine IS NULL THEN email_id END),
                sum(machine IS NOT NULL)
         FROM email_engagements WHERE campaign_id = ?1 AND kind = 'click'
         GROUP BY url ORDER BY 2 DESC, 4 DESC, url LIMIT ?2",
    )?;
    let rows = statement.query_map(params![campaign, limit], |r| {
        Ok(LinkClicks { url: r.get(0)?, clicks: r.get(1)?, unique: r.get(2)?, machine: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Recipients of campaign `campaign` who opened (or clicked): (by a person, only by machines).
pub fn people_and_machines(conn: &Connection, campaign: &str, kind: &str) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached(
            "SELECT count(*) FILTER (WHERE people > 0), count(*) FILTER (WHERE people = 0) FROM (
               SELECT sum(machine IS NULL) AS people FROM email_engagements
               WHERE campaign_id = ?1 AND kind = ?2 GROUP BY email_id)",
        )?
        .query_row(params![campaign, kind], |r| Ok((r.get(0)?, r.get(1)?)))?)
}

/// What became of one recipient's email.
#[derive(Debug, Clone, PartialEq)]
pub struct Recipient {
    pub email_id: String,
    pub contact_id: Option<String>,
    pub email: String,
    /// `queued`, `sent`, `delivered`, `opened`, `clicked`, `bounced`, `complained`,
    /// `unsubscribed` or `failed`: the furthest it went.
    pub status: String,
    pub sent_at: Option<i64>,
    pub opened_at: Option<i64>,
    pub clicked_at: Option<i64>,
    pub bounce_type: Option<String>,
    pub unsubscribed_at: Option<i64>,
    pub error: Option<String>,
}

/// A recipient's status from its email's row, the furthest it went.
const STATUS: &str = "CASE WHEN unsubscribed_at IS NOT NULL THEN 'unsubscribed'
    WHEN status = 'COMPLAINED' THEN 'complained' WHEN status = 'BOUNCED' THEN 'bounced'
    WHEN status = 'FAILED' THEN 'failed' WHEN status = 'CLICKED' THEN 'clicked'
    WHEN status = 'OPENED' THEN 'opened' WHEN status = 'DELIVERED' THEN 'delivered'
    WHEN status = 'SENT' THEN 'sent' ELSE 'queued' END";

/// The statuses a recipient can have.
pub const RECIPIENT_STATUSES: [&str; 9] =
    ["queued", "sent", "delivered", "opened", "clicked", "bounced", "complained", "unsubscribed", "failed"];

fn recipient(r: &Row<'_>) -> rusqlite::Result<Recipient> {
    Ok(Recipient {
        email_id: r.get(0)?,
        contact_id: r.get(1)?,
        email: r.get(2)?,
        status: r.get(3)?,
        sent_at: r.get(4)?,
        opened_at: r.get(5)?,
        clicked_at: r.get(6)?,
        bounce_type: r.get(7)?,
        unsubscribed_at: r.get(8)?,
        error: r.get(9)?,
    })
}

/// Which recipients: with a status, with an address containing a text.
#[derive(Debug, Clone, Default)]
pub struct RecipientFilter {
    pub status: Option<String>,
    pub search: Option<String>,
}

/// A page of campaign `campaign`'s recipients in the order of their emails' ids (the order they
/// were queued) after `after` (an email id). A contact deleted since leaves its email, without
/// a contact id, so the page goes by the email.
pub fn recipients(
    conn: &Connection,
    campaign: &str,
    filter: &RecipientFilter,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<Recipient>> {
    let sql = format!(
        "SELECT id, contact_id, to_email, {STATUS} AS state, sent_at, opened_at, clicked_at, bounce_type,
                unsubscribed_at, CASE WHEN status = 'FAILED' THEN last_error END
         FROM emails WHERE campaign_id = ?1 AND source_type = 'CAMPAIGN' AND (?2 IS NULL OR state = ?2)
           AND (?3 IS NULL OR instr(to_email, lower(?3)) > 0) AND (?4 IS NULL OR id > ?4)
         ORDER BY id LIMIT ?5"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows =
        statement.query_map(params![campaign, filter.status, filter.search, after, limit], recipient)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// How many of campaign `campaign`'s recipients the filter matches.
pub fn recipient_count(conn: &Connection, campaign: &str, filter: &RecipientFilter) -> Result<i64> {
    let sql = format!(
        "SELECT count(*) FROM emails WHERE campaign_id = ?1 AND source_type = 'CAMPAIGN' AND (?2 IS NULL OR {STATUS} = ?2)
           AND (?3 IS NULL OR instr(to_email, lower(?3)) > 0)"
    );
    Ok(conn.prepare_cached(&sql)?.query_row(params![campaign, filter.status, filter.search], |r| r.get(0))?)
}

/// A receiving domain's results among the recipients of some mail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DomainResults {
    pub domain: String,
    pub recipients: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub hard_bounces: i64,
    pub soft_bounces: i64,
    pub complained: i64,
    pub failed: i64,
}

impl DomainResults {
    /// Adds `other`'s figures to these.
    pub fn add(&mut self, other: &DomainResults) {
        self.recipients += other.recipients;
        self.delivered += other.delivered;
        self.opened += other.opened;
        self.clicked += other.clicked;
        self.hard_bounces += other.hard_bounces;
        self.soft_bounces += other.soft_bounces;
        self.complained += other.complained;
        self.failed += other.failed;
    }

    pub fn bounced(&self) -> i64 {
        self.hard_bounces + self.soft_bounces
    }
}

/// The figures of a [`DomainResults`] as SQL over `emails` (as `e`), after its domain.
pub(super) const DOMAIN_FIGURES: &str = "count(*), sum(e.status IN ('DELIVERED', 'OPENED', 'CLICKED')),
    sum(e.opened_at IS NOT NULL), sum(e.clicked_at IS NOT NULL),
    sum(e.status = 'BOUNCED' AND e.bounce_type = 'hard'), sum(e.status = 'BOUNCED' AND coalesce(e.bounce_type, 'soft') = 'soft'),
    sum(e.status = 'COMPLAINED'), sum(e.status = 'FAILED')";

/// A row of `domain, DOMAIN_FIGURES`.
pub(super) fn domain_results(r: &Row<'_>) -> rusqlite::Result<DomainResults> {
    Ok(DomainResults {
        domain: r.get(0)?,
        recipients: r.get(1)?,
        delivered: r.get(2)?,
        opened: r.get(3)?,
        clicked: r.get(4)?,
        hard_bounces: r.get(5)?,
        soft_bounces: r.get(6)?,
        complained: r.get(7)?,
        failed: r.get(8)?,
    })
}

/// Campaign `campaign`'s recipients (not its test sends) by the domain of their address, most
/// first (at most `limit` domains).
pub fn domains(conn: &Connection, campaign: &str, limit: i64) -> Result<Vec<DomainResults>> {
    let sql = format!(
        "SELECT substr(e.to_email, instr(e.to_email, '@') + 1) AS domain, {DOMAIN_FIGURES}
         FROM emails e WHERE e.campaign_id = ?1 AND e.source_type = 'CAMPAIGN'
         GROUP BY domain ORDER BY 2 DESC, domain LIMIT ?2"
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![campaign, limit], domain_results)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// A campaign's emails in one receiving provider's queue (issue 34, item 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueResults {
    /// The queue (`gmail`, ..., or a domain); empty for emails the worker has not looked at.
    pub provider: String,
    pub sent: i64,
    pub queued: i64,
    /// Queued and held back by the provider's rate, its rest, or the sender's warm-up.
    pub held_rate: i64,
    pub held_backoff: i64,
    pub held_warmup: i64,
}

/// Campaign `campaign`'s emails per receiving queue, most first, at most `limit`.
pub fn queues(conn: &Connection, campaign: &str, limit: i64) -> Result<Vec<QueueResults>> {
    let mut statement = conn.prepare_cached(
        "SELECT coalesce(provider, ''), count(sent_at), sum(status = 'QUEUED'),
                sum(status = 'QUEUED' AND held = 'rate'), sum(status = 'QUEUED' AND held = 'backoff'),
                sum(status = 'QUEUED' AND held = 'warmup')
         FROM emails WHERE campaign_id = ?1 AND source_type = 'CAMPAIGN'
         GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT ?2",
    )?;
    let rows = statement.query_map(params![campaign, limit], |r| {
        Ok(QueueResults {
            provider: r.get(0)?,
            sent: r.get(1)?,
            queued: r.get(2)?,
            held_rate: r.get(3)?,
            held_backoff: r.get(4)?,
            held_warmup: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// What a contact did with the email campaign `campaign` sent them, for a condition decided in
/// memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Received {
    /// Opened (a click counts) and clicked, by anyone.
    pub opened: bool,
    pub clicked: bool,
    /// Opened (a click counts) and clicked by a person.
    pub opened_by_people: bool,
    pub clicked_by_people: bool,
}

/// What contact `contact` did with campaign `campaign`'s email, if it was sent to them.
pub fn received(conn: &Connection, campaign: &str, contact: &str) -> Result<Option<Received>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached(
            "SELECT m.opened_at IS NOT NULL, m.clicked_at IS NOT NULL,
                    EXISTS (SELECT 1 FROM email_engagements e WHERE e.email_id = m.id
                            AND e.kind IN ('open', 'click') AND e.machine IS NULL),
                    EXISTS (SELECT 1 FROM email_engagements e WHERE e.email_id = m.id
                            AND e.kind = 'click' AND e.machine IS NULL)
             FROM emails m WHERE m.campaign_id = ?1 AND m.contact_id = ?2 AND m.source_type = 'CAMPAIGN'
               AND m.sent_at IS NOT NULL",
        )?
        .query_row(params![campaign, contact], |r| {
            Ok(Received {
                opened: r.get(0)?,
                clicked: r.get(1)?,
                opened_by_people: r.get(2)?,
                clicked_by_people: r.get(3)?,
            })
        })
        .optional()?)
}
