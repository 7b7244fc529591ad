//! Retention (issue 35, item 1): a project's periods as stored, and the pruning of what has
//! outlived them, one bounded transaction at a time ([`step`]).
//!
//! What goes: events and the opens and clicks recorded with them (the hourly rollups that
//! analytics read stay), the content of emails (body, one-off variables, headers, attachments;
//! the row, its status and its events stay) and the captured messages of the outbox, and the
//! log of webhook deliveries that are over. Received mail expires by its own sweep.

use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use super::batches::Batches;
use super::error::Result;

/// A project's own periods in days; `None`: the server's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Periods {
    pub email_content_days: Option<u32>,
    pub events_days: Option<u32>,
    pub inbound_days: Option<u32>,
    pub webhook_deliveries_days: Option<u32>,
}

pub fn get(conn: &Connection, project: &str) -> Result<Periods> {
    Ok(conn
        .prepare_cached(
            "SELECT email_content_days, events_days, inbound_days, webhook_deliveries_days
             FROM retention_settings WHERE project_id = ?1",
        )?
        .query_row([project], |r| {
            Ok(Periods {
                email_content_days: r.get(0)?,
                events_days: r.get(1)?,
                inbound_days: r.get(2)?,
                webhook_deliveries_days: r.get(3)?,
            })
        })
        .optional()?
        .unwrap_or_default())
}

pub fn put(conn: &Connection, project: &str, p: &Periods, now: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO retention_settings (project_id, email_content_days, events_days, inbound_days,
             webhook_deliveries_days, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(project_id) DO UPDATE SET email_content_days = ?2, events_days = ?3, inbound_days = ?4,
             webhook_deliveries_days = ?5, updated_at = ?6",
    )?
    .execute(params![
        project,
        p.email_content_days,
        p.events_days,
        p.inbound_days,
        p.webhook_deliveries_days,
        now
    ])?;
    Ok(())
}

/// The instants (ms) before which each kind of data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cutoffs {
    pub email_content: i64,
    pub events: i64,
    pub webhook_deliveries: i64,
}

/// Which cutoff a stage uses.
#[derive(Clone, Copy)]
enum Kind {
    Events,
    Content,
    Webhooks,
}

struct Stage {
    name: &'static str,
    kind: Kind,
    /// `?1` the project, `?2` the cutoff, `?3` the batch.
    sql: &'static str,
}

const STAGES: &[Stage] = &[
    Stage {
        name: "events",
        kind: Kind::Events,
        sql: "DELETE FROM events WHERE rowid IN
                (SELECT rowid FROM events WHERE project_id = ?1 AND created_at < ?2 LIMIT ?3)",
    },
    Stage {
        name: "email_engagements",
        kind: Kind::Events,
        sql: "DELETE FROM email_engagements WHERE id IN
                (SELECT id FROM email_engagements WHERE project_id = ?1 AND at < ?2 AND held_until IS NULL
                 LIMIT ?3)",
    },
    Stage {
        name: "emails",
        kind: Kind::Content,
        sql: "UPDATE emails SET body = '', variables = '{}', headers = '{}', attachments = NULL
              WHERE rowid IN (SELECT rowid FROM emails
                WHERE (body != '' OR variables != '{}' OR headers != '{}' OR attachments IS NOT NULL)
                  AND project_id = ?1 AND created_at < ?2 AND status != 'QUEUED' LIMIT ?3)",
    },
    Stage {
        name: "outbox",
        kind: Kind::Content,
        sql: "DELETE FROM outbox WHERE id IN
                (SELECT id FROM outbox WHERE project_id = ?1 AND created_at < ?2 LIMIT ?3)",
    },
    Stage {
        name: "webhook_deliveries",
        kind: Kind::Webhooks,
        sql: "DELETE FROM webhook_deliveries WHERE rowid IN
                (SELECT rowid FROM webhook_deliveries
                 WHERE project_id = ?1 AND created_at < ?2 AND status != 'pending' LIMIT ?3)",
    },
];

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The budget ran out in the stage of `table`; the next step starts with `chunk` rows.
    More { pruned: usize, table: &'static str, chunk: i64 },
    /// Nothing of the project is past its period any more.
    Done { pruned: usize },
}

/// Prunes `project`'s data older than `cutoffs` for about `budget`, in a transaction of its
/// own, starting with batches of `chunk` rows.
pub fn step(
    conn: &Connection,
    project: &str,
    cutoffs: Cutoffs,
    budget: Duration,
    chunk: i64,
) -> Result<Step> {
    // Events that age out stay counted in the rollups (see V44): the flag is seen only inside
    // this transaction.
    conn.execute("INSERT OR IGNORE INTO retention_pruning (one) VALUES (1)", [])?;
    let step = prune(conn, project, cutoffs, budget, chunk);
    conn.execute("DELETE FROM retention_pruning", [])?;
    step
}

fn prune(conn: &Connection, project: &str, cutoffs: Cutoffs, budget: Duration, chunk: i64) -> Result<Step> {
    let mut batches = Batches::new(budget, chunk);
    let mut pruned = 0;
    for stage in STAGES {
        let cutoff = match stage.kind {
            Kind::Events => cutoffs.events,
            Kind::Content => cutoffs.email_content,
            Kind::Webhooks => cutoffs.webhook_deliveries,
        };
        let mut statement = conn.prepare_cached(stage.sql)?;
        loop {
            let (n, full) = batches.run(|chunk| statement.execute(params![project, cutoff, chunk]))?;
            pruned += n;
            if !full {
                break;
            }
            if batches.spent() {
                return Ok(Step::More { pruned, table: stage.name, chunk: batches.chunk() });
            }
        }
    }
    Ok(Step::Done { pruned })
}

/// The projects whose data may be past its periods: every one not being wiped.
pub fn projects(conn: &Connection) -> Result<Vec<String>> {
    let mut statement = conn.prepare("SELECT id FROM projects WHERE wiping IS NULL ORDER BY id")?;
    let rows = statement.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Pages the database file holds free (returned by an incremental vacuum), and whether the
/// file returns them at all (`auto_vacuum = INCREMENTAL`).
pub fn free_pages(conn: &Connection) -> Result<(i64, bool)> {
    let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    Ok((free, mode == 2))
}

/// Gives free pages back to the file system for about `budget` (the file shrinks at the next
/// checkpoint); how many are left. The pragma returns one page each time it is stepped, so it is
/// stepped until the freelist is empty or the budget is spent.
pub fn vacuum_step(conn: &Connection, budget: Duration) -> Result<i64> {
    let started = Instant::now();
    let mut statement = conn.prepare_cached("PRAGMA incremental_vacuum")?;
    let mut rows = statement.raw_query();
    while rows.next()?.is_some() && started.elapsed() < budget {}
    drop(rows);
    Ok(conn.query_row("PRAGMA freelist_count", [], |r| r.get(0))?)
}

/// The largest older database rewritten at start to give space back (256 MiB of 4 KiB pages:
/// a few seconds).
pub const REWRITE_AT_START_PAGES: i64 = 65_536;

/// Makes the file give freed pages back ([`vacuum_step`]): a new database is made so at once; an
/// older one is rewritten (`VACUUM`, which holds the database for as long as it takes to copy
/// it) only when it has at most `max_pages` pages. Whether the file now returns space.
pub fn enable_space_return(conn: &Connection, max_pages: Option<i64>) -> Result<bool> {
    let mode: i64 = conn.query_row("PRAGMA auto_vacuum", [], |r| r.get(0))?;
    if mode == 2 {
        return Ok(true);
    }
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL")?;
    if pages == 0 {
        return Ok(true);
    }
    if max_pages.is_some_and(|max| pages > max) {
        return Ok(false);
    }
    conn.execute_batch("VACUUM")?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::{STAGES, vacuum_step};
    use std::time::Duration;

    /// One step gives back every free page its budget allows, not one page (the pragma stops
    /// after each page it returns until it is stepped again).
    #[test]
    fn a_vacuum_step_returns_many_pages() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("PRAGMA auto_vacuum = INCREMENTAL").unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        conn.execute_batch(
            "CREATE TABLE filler (b BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
             INSERT INTO filler SELECT zeroblob(8192) FROM n;
             DROP TABLE filler;",
        )
        .unwrap();
        let free: i64 = conn.query_row("PRAGMA freelist_count", [], |r| r.get(0)).unwrap();
        assert!(free > 1_000, "{free}");
        // A spent budget still makes progress: one page.
        assert_eq!(vacuum_step(&conn, Duration::ZERO).unwrap(), free - 1);
        assert_eq!(vacuum_step(&conn, Duration::from_secs(10)).unwrap(), 0);
    }

    /// Each batch finds its rows through an index, whatever the size of the tables.
    #[test]
    fn every_stage_searches_an_index() {
        for stage in STAGES {
            let plan = crate::db::batches::searches_an_index(stage.sql, &[&"p", &0, &200]);
            assert!(plan.is_ok(), "{}: {plan:?}", stage.name);
        }
    }
}
