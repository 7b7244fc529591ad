//! A campaign's A/B test: its settings and state (columns of `campaigns`, read with the
//! campaign) and its variants, whose counters the triggers of V42 keep.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// A campaign's A/B test: how it is run and where it stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AbTest {
    /// Percent of the audience in the test share.
    pub share: i64,
    /// `opens`, `humanOpens`, `clicks` or `humanClicks`.
    pub metric: String,
    pub wait_hours: i64,
    /// `auto` (the metric picks at the end of the wait) or `manual`.
    pub pick: String,
    /// `READY`, `TESTING` or `DECIDED`.
    pub phase: String,
    /// When the wait ends; set once the whole test share is queued.
    pub decide_at: Option<i64>,
    pub winner: Option<i64>,
    /// `metric` or `hand`.
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
}

/// The test of the campaign row `r` from its `ab_*` columns starting at `at`.
pub fn from_row_at(r: &Row<'_>, at: usize) -> rusqlite::Result<Option<AbTest>> {
    let Some(share) = r.get::<_, Option<i64>>(at)? else { return Ok(None) };
    Ok(Some(AbTest {
        share,
        metric: r.get::<_, Option<String>>(at + 1)?.unwrap_or_default(),
        wait_hours: r.get::<_, Option<i64>>(at + 2)?.unwrap_or_default(),
        pick: r.get::<_, Option<String>>(at + 3)?.unwrap_or_default(),
        phase: r.get::<_, Option<String>>(at + 4)?.unwrap_or_default(),
        decide_at: r.get(at + 5)?,
        winner: r.get(at + 6)?,
        decided_by: r.get(at + 7)?,
        decided_at: r.get(at + 8)?,
    }))
}

/// What happened to the test share's emails of one variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VariantCounts {
    pub recipients: i64,
    pub sent: i64,
    pub delivered: i64,
    pub bounced: i64,
    pub opened: i64,
    pub clicked: i64,
    pub opened_by_people: i64,
    pub clicked_by_people: i64,
    pub unsubscribed: i64,
}

/// A variant: what it changes of the campaign's content (`None`: the campaign's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Variant {
    pub position: i64,
    pub subject: Option<String>,
    pub from_name: Option<String>,
    /// Compiled HTML, as `campaigns.body`.
    pub body: Option<String>,
    pub format: Option<String>,
    pub source: Option<String>,
    pub template_id: Option<String>,
    pub counts: VariantCounts,
}

const VARIANT_COLUMNS: &str = "position, subject, from_name, body, format, source, template_id, recipients,
     sent_count, delivered_count, bounced_count, opened_count, clicked_count, people_opened_count,
     people_clicked_count, unsubscribed_count";

fn variant_of(r: &Row<'_>) -> rusqlite::Result<Variant> {
    Ok(Variant {
        position: r.get(0)?,
        subject: r.get(1)?,
        from_name: r.get(2)?,
        body: r.get(3)?,
        format: r.get(4)?,
        source: r.get(5)?,
        template_id: r.get(6)?,
        counts: VariantCounts {
            recipients: r.get(7)?,
            sent: r.get(8)?,
            delivered: r.get(9)?,
            bounced: r.get(10)?,
            opened: r.get(11)?,
            clicked: r.get(12)?,
            opened_by_people: r.get(13)?,
            clicked_by_people: r.get(14)?,
            unsubscribed: r.get(15)?,
        },
    })
}

/// Gives campaign `campaign` this test (READY, nothing decided) and these variants, in place of
/// any it had.
pub fn set(conn: &Connection, campaign: &str, test: &AbTest, variants: &[Variant], now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE campaigns SET ab_share = ?2, ab_metric = ?3, ab_wait_hours = ?4, ab_pick = ?5, ab_phase = 'READY',
             ab_decide_at = NULL, ab_winner = NULL, ab_decided_by = NULL, ab_decided_at = NULL, updated_at = ?6
         WHERE id = ?1",
    )?
    .execute(params![campaign, test.share, test.metric, test.wait_hours, test.pick, now])?;
    conn.prepare_cached("DELETE FROM ab_variants WHERE campaign_id = ?1")?.execute([campaign])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO ab_variants (campaign_id, position, subject, from_name, body, format, source, template_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for v in variants {
        insert.execute(params![
            campaign,
            v.position,
            v.subject,
            v.from_name,
            v.body,
            v.format,
            v.source,
            v.template_id
        ])?;
    }
    Ok(())
}

/// Takes campaign `campaign`'s test away; whether it had one.
pub fn clear(conn: &Connection, campaign: &str, now: i64) -> Result<bool> {
    conn.prepare_cached("DELETE FROM ab_variants WHERE campaign_id = ?1")?.execute([campaign])?;
    Ok(conn
        .prepare_cached(
            "UPDATE campaigns SET ab_share = NULL, ab_metric = NULL, ab_wait_hours = NULL, ab_pick = NULL,
                 ab_phase = NULL, ab_decide_at = NULL, ab_winner = NULL, ab_decided_by = NULL,
                 ab_decided_at = NULL, updated_at = ?2
             WHERE id = ?1 AND ab_share IS NOT NULL",
        )?
        .execute(params![campaign, now])?
        > 0)
}

/// Campaign `campaign`'s variants, in order.
pub fn variants(conn: &Connection, campaign: &str) -> Result<Vec<Variant>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {VARIANT_COLUMNS} FROM ab_variants WHERE campaign_id = ?1 ORDER BY position"
        ))?
        .query_map([campaign], variant_of)?
        .collect::<rusqlite::Result<_>>()?)
}

/// Variant `position` of campaign `campaign`.
pub fn variant(conn: &Connection, campaign: &str, position: i64) -> Result<Option<Variant>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {VARIANT_COLUMNS} FROM ab_variants WHERE campaign_id = ?1 AND position = ?2"
        ))?
        .query_row(params![campaign, position], variant_of)
        .optional()?)
}

/// A READY test starts: TESTING.
pub fn begin(conn: &Connection, campaign: &str) -> Result<()> {
    conn.prepare_cached("UPDATE campaigns SET ab_phase = 'TESTING' WHERE id = ?1 AND ab_phase = 'READY'")?
        .execute([campaign])?;
    Ok(())
}

/// The whole test share of campaign `campaign` is queued: the wait runs until `decide_at`, and
/// the expansion starts over from the first contact for the rest, once the winner is known.
pub fn wait(conn: &Connection, campaign: &str, added: i64, decide_at: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE campaigns SET ab_decide_at = ?2, expand_cursor = 0, total_recipients = total_recipients + ?3
         WHERE id = ?1 AND ab_phase = 'TESTING'",
    )?
    .execute(params![campaign, decide_at, added])?;
    Ok(())
}

/// Records variant `winner` as the test's winner, picked `by` the metric or by hand, when the
/// test is still waiting for one; whether it was.
pub fn decide(conn: &Connection, campaign: &str, winner: i64, by: &str, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "UPDATE campaigns SET ab_phase = 'DECIDED', ab_winner = ?2, ab_decided_by = ?3, ab_decided_at = ?4,
                 updated_at = ?4
             WHERE id = ?1 AND ab_phase = 'TESTING' AND ab_decide_at IS NOT NULL
               AND EXISTS (SELECT 1 FROM ab_variants WHERE campaign_id = ?1 AND position = ?2)",
        )?
        .execute(params![campaign, winner, by, now])?
        == 1)
}

/// Gives campaign `to` the test of campaign `from` (READY), variants included.
pub fn copy(conn: &Connection, from: &str, to: &str, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE campaigns SET (ab_share, ab_metric, ab_wait_hours, ab_pick, ab_phase) =
             (SELECT ab_share, ab_metric, ab_wait_hours, ab_pick, iif(ab_share IS NULL, NULL, 'READY')
                FROM campaigns WHERE id = ?1), updated_at = ?3
         WHERE id = ?2",
    )?
    .execute(params![from, to, now])?;
    conn.prepare_cached(
        "INSERT INTO ab_variants (campaign_id, position, subject, from_name, body, format, source, template_id)
         SELECT ?2, position, subject, from_name, body, format, source, template_id
           FROM ab_variants WHERE campaign_id = ?1",
    )?
    .execute(params![from, to])?;
    Ok(())
}
