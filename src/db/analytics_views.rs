//! What the project-wide analytics views read (Plunk v2's newest: links, heatmap,
//! deliverability, audience), over a range of time and a stream of mail.

use super::error::Result;
use rusqlite::{Connection, params};

use super::engagements::{DOMAIN_FIGURES, DomainResults, LinkClicks, domain_results};

/// Which mail: every kind, or the mail of `/v1/send`, of campaigns or of workflows
/// (`emails.source_type`; test sends belong to none but every).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    All,
    Transactional,
    Campaign,
    Workflow,
}

impl Stream {
    /// The SQL test of `emails.source_type` (as `e.source_type`).
    fn sql(self) -> &'static str {
        match self {
            Stream::All => "1",
            Stream::Transactional => "e.source_type = 'TRANSACTIONAL'",
            Stream::Campaign => "e.source_type = 'CAMPAIGN'",
            Stream::Workflow => "e.source_type = 'WORKFLOW'",
        }
    }
}

/// People's opens and clicks per hour (UTC) between `range`: (hour start, opens, clicks).
pub fn hourly_engagement(
    conn: &Connection,
    project: &str,
    stream: Stream,
    range: (i64, i64),
) -> Result<Vec<(i64, i64, i64)>> {
    let sql = format!(
        "SELECT (g.at / 3600000) * 3600000 AS hour, sum(g.kind = 'open'), sum(g.kind = 'click')
         FROM email_engagements g JOIN emails e ON e.id = g.email_id
         WHERE g.project_id = ?1 AND g.at >= ?2 AND g.at < ?3 AND g.machine IS NULL AND {}
         GROUP BY hour",
        stream.sql()
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows =
        statement.query_map(params![project, range.0, range.1], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The most clicked links of the project's mail between `range`, at most `limit`.
pub fn links(
    conn: &Connection,
    project: &str,
    stream: Stream,
    range: (i64, i64),
    limit: i64,
) -> Result<Vec<LinkClicks>> {
    let sql = format!(
        "SELECT g.url, sum(g.machine IS NULL), count(DISTINCT CASE WHEN g.machine IS NULL THEN g.email_id END),
                sum(g.machine IS NOT NULL)
         FROM email_engagements g JOIN emails e ON e.id = g.email_id
         WHERE g.project_id = ?1 AND g.at >= ?2 AND g.at < ?3 AND g.kind = 'click' AND {}
         GROUP BY g.url ORDER BY 2 DESC, 4 DESC, g.url LIMIT ?4",
        stream.sql()
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![project, range.0, range.1, limit], |r| {
        Ok(LinkClicks { url: r.get(0)?, clicks: r.get(1)?, unique: r.get(2)?, machine: r.get(3)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The project's mail created between `range` and no longer queued, by receiving domain, most
/// first (at most `limit`).
pub fn deliverability(
    conn: &Connection,
    project: &str,
    stream: Stream,
    range: (i64, i64),
    limit: i64,
) -> Result<Vec<DomainResults>> {
    let sql = format!(
        "SELECT substr(e.to_email, instr(e.to_email, '@') + 1) AS domain, {DOMAIN_FIGURES}
         FROM emails e WHERE e.project_id = ?1 AND e.created_at >= ?2 AND e.created_at < ?3
           AND e.status <> 'QUEUED' AND {}
         GROUP BY domain ORDER BY 2 DESC, domain LIMIT ?4",
        stream.sql()
    );
    let mut statement = conn.prepare_cached(&sql)?;
    let rows = statement.query_map(params![project, range.0, range.1, limit], domain_results)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Per bucket of `bucket_ms` between `range`: contacts created and addresses suppressed, as
/// (bucket start, created, suppressed).
pub fn audience(
    conn: &Connection,
    project: &str,
    range: (i64, i64),
    bucket_ms: i64,
) -> Result<Vec<(i64, i64, i64)>> {
    let mut statement = conn.prepare_cached(
        "SELECT bucket, sum(created), sum(suppressed) FROM (
           SELECT (created_at / ?4) * ?4 AS bucket, 1 AS created, 0 AS suppressed FROM contacts
           WHERE project_id = ?1 AND created_at >= ?2 AND created_at < ?3
           UNION ALL
           SELECT (created_at / ?4) * ?4, 0, 1 FROM suppression_list
           WHERE project_id = ?1 AND created_at >= ?2 AND created_at < ?3)
         GROUP BY bucket ORDER BY bucket",
    )?;
    let rows = statement.query_map(params![project, range.0, range.1, bucket_ms], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The project's contacts now: (all, subscribed).
pub fn contact_totals(conn: &Connection, project: &str) -> Result<(i64, i64)> {
    Ok(conn
        .prepare_cached("SELECT count(*), coalesce(sum(subscribed), 0) FROM contacts WHERE project_id = ?1")?
        .query_row(params![project], |r| Ok((r.get(0)?, r.get(1)?)))?)
}
