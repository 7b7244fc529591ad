//! Wiping a project's rows in small batches: what a reset or a deletion runs, one bounded
//! transaction at a time, so the writer is never held for long whatever the project's size.
//!
//! The stages run in order, each deleting a project's rows [`CHUNK`] at a time. Rows that make
//! more rows go first (executions, workflows, campaigns, imports), then the rows that others point
//! at last (contacts after their events, emails, suppressions and segment memberships), so a
//! deletion never cascades into a large number of rows at once. A step ends when its time budget
//! is spent; the next one starts the pass again, where the stages already emptied cost one index
//! lookup each. A pass that finds every stage empty finishes the wipe in the same transaction, so
//! nothing written before that commit survives it.

use super::error::Result;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::batches::Batches;
use super::effects::{self, Wake};
use super::projects::Wipe;
use crate::clock;

/// Most rows deleted per statement; fewer where rows cost more (see [`step`]).
pub use super::batches::CHUNK;

/// How a table's rows of the project are found, and the key that names one of them.
struct Stage {
    table: &'static str,
    /// `rowid`, or the primary key of a `WITHOUT ROWID` table.
    key: &'static str,
    /// Selects the project's rows; `?1` is the project.
    filter: &'static str,
}

impl Stage {
    fn sql(&self) -> String {
        format!(
            "DELETE FROM {table} WHERE {key} IN (SELECT {columns} FROM {table} WHERE {filter} LIMIT ?2)",
            table = self.table,
            key = self.key,
            columns = self.key.trim_start_matches('(').trim_end_matches(')'),
            filter = self.filter,
        )
    }
}

const BY_PROJECT: &str = "project_id = ?1";

const fn stage(table: &'static str) -> Stage {
    Stage { table, key: "rowid", filter: BY_PROJECT }
}

/// The data a reset removes, in the order it goes. A deletion removes it too, then the project
/// row, whose foreign keys take the rest (members, keys, domains, webhook endpoints, sending
/// history), all small.
const STAGES: &[Stage] = &[
    stage("workflow_executions"),
    stage("workflows"),
    stage("campaigns"),
    stage("contact_jobs"),
    stage("webhook_deliveries"),
    stage("outbox"),
    stage("email_engagements"),
    stage("emails"),
    stage("events"),
    stage("inbound_messages"),
    stage("erasures"),
    stage("project_exports"),
    Stage {
        table: "segment_members",
        key: "(segment_id, contact_seq)",
        filter: "segment_id IN (SELECT id FROM segments WHERE project_id = ?1)",
    },
    Stage { table: "suppressions", key: "contact_id", filter: BY_PROJECT },
    Stage {
        table: "contact_topics",
        key: "(topic_id, contact_seq)",
        filter: "topic_id IN (SELECT id FROM topics WHERE project_id = ?1)",
    },
    stage("confirmations"),
    stage("consents"),
    stage("contacts"),
    stage("segments"),
    stage("topics"),
    stage("forms"),
    stage("templates"),
    stage("attachment_sets"),
    stage("raw_messages"),
    Stage { table: "idempotency_keys", key: "(project_id, request, key)", filter: BY_PROJECT },
    Stage { table: "refs", key: "(owner_kind, owner_id, kind, name)", filter: BY_PROJECT },
    Stage { table: "contact_fields", key: "(project_id, path)", filter: BY_PROJECT },
    Stage { table: "event_names", key: "(project_id, name)", filter: BY_PROJECT },
    Stage { table: "event_hours", key: "(project_id, hour, name)", filter: BY_PROJECT },
];

/// What one step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Rows were deleted and the budget ran out, in the stage of `table`: more steps are needed,
    /// each deleting `chunk` rows a statement to begin with.
    More { deleted: usize, table: &'static str, chunk: i64 },
    /// The wipe finished in this step (the project reset or gone).
    Finished { deleted: usize, wipe: Wipe },
    /// The project is not being wiped (or no longer exists): nothing to do.
    Idle,
}

/// Marks the project for `wipe` and stops what would go on making its rows: its queued jobs
/// go; for a deletion also its keys, members and invitations, so it is gone for every user and
/// key at once. Workers skip a project being wiped. Run inside the request's transaction.
pub fn begin(conn: &Connection, project: &str, wipe: Wipe) -> Result<()> {
    conn.execute(
        "UPDATE projects SET wiping = ?2, updated_at = ?3 WHERE id = ?1",
        params![project, wipe.as_str(), clock::now_ms()],
    )?;
    conn.execute("DELETE FROM jobs WHERE project_id = ?1 AND status IN ('queued', 'running')", [project])?;
    if wipe == Wipe::Delete {
        for table in ["api_keys", "smtp_credentials", "memberships", "invitations"] {
            conn.execute(&format!("DELETE FROM {table} WHERE project_id = ?1"), [project])?;
        }
    }
    effects::wake(Wake::Keys);
    Ok(())
}

/// Deletes the project's rows for about `budget`, and finishes the wipe when none are left.
/// Run in a transaction of its own. Statements delete `chunk` rows at first; one that takes
/// over a quarter of the budget (rows with many index entries, pages not in memory) halves it,
/// one under a sixteenth doubles it, up to [`CHUNK`], so no single statement holds the writer
/// long whatever a row costs. The step says where to begin the next one.
pub fn step(conn: &Connection, project: &str, budget: Duration, chunk: i64) -> Result<Step> {
    let wipe: Option<Option<Wipe>> =
        conn.query_row("SELECT wiping FROM projects WHERE id = ?1", [project], |r| r.get(0)).optional()?;
    let Some(Some(wipe)) = wipe else { return Ok(Step::Idle) };
    let mut batches = Batches::new(budget, chunk);
    let mut deleted = 0;
    for stage in STAGES {
        let mut delete = conn.prepare_cached(&stage.sql())?;
        loop {
            let (n, full) = batches.run(|chunk| delete.execute(params![project, chunk]))?;
            deleted += n;
            if !full {
                break;
            }
            if batches.spent() {
                return Ok(Step::More { deleted, table: stage.table, chunk: batches.chunk() });
            }
        }
    }
    // Every stage came up short in this transaction: nothing of the project's data is left.
    match wipe {
        Wipe::Reset => {
            conn.execute(
                "UPDATE projects SET wiping = NULL, updated_at = ?2 WHERE id = ?1",
                params![project, clock::now_ms()],
            )?;
        }
        Wipe::Delete => {
            conn.execute("DELETE FROM projects WHERE id = ?1", [project])?;
        }
    }
    effects::wake(Wake::Keys);
    Ok(Step::Finished { deleted, wipe })
}

#[cfg(test)]
mod tests {
    use super::STAGES;

    /// The project's tables a reset keeps: its settings, its sending history (a reset must not
    /// clear the bounce and complaint record its suspensions are judged on) and its consumption.
    const KEPT: &[&str] = &[
        "projects",
        "memberships",
        "api_keys",
        "smtp_credentials",
        "invitations",
        "domains",
        "inbound_domains",
        "inbound_routes",
        // Emptied by the deletion of the messages it counts (its triggers).
        "inbound_usage",
        "webhook_endpoints",
        "sending_days",
        "suspensions",
        "contact_counts",
        "jobs",
        // What the project used this month stays used, and its caps stay.
        "billing_limits",
        "billing_usage",
        "project_billing",
        // Images stay: mail already sent shows them. A deletion removes them with the project.
        "uploads",
        // Whether forms ask for confirmation, and with which template (its id goes null when
        // the reset removes the template).
        "audience_settings",
        // Addresses and domains the project must not mail stay unmailed after a reset.
        "suppression_list",
        // How its public pages look and speak.
        "branding",
        // Its time zone and quiet hours, and the host its tracked links use.
        "sending_settings",
        "tracking_domains",
        // A sender domain's warm-up plan goes with the domain, which a reset keeps.
        "domain_warmups",
        // How long the project keeps its data.
        "retention_settings",
    ];

    fn migrated() -> rusqlite::Connection {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        conn
    }

    /// Each batch finds its rows through an index, whatever the size of other projects' tables.
    #[test]
    fn every_stage_searches_an_index() {
        for stage in STAGES {
            let plan = crate::db::batches::searches_an_index(&stage.sql(), &[&"p", &200]);
            assert!(plan.is_ok(), "{}: {plan:?}", stage.table);
        }
    }

    /// A new table with a project's rows must be wiped by a stage or kept on purpose.
    #[test]
    fn every_table_of_a_project_is_wiped_or_kept() {
        let conn = migrated();
        let mut stmt = conn
            .prepare(
                "SELECT m.name FROM sqlite_master m WHERE m.type = 'table'
                   AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'project_id')",
            )
            .unwrap();
        let tables: Vec<String> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
        assert!(tables.len() > 20, "{tables:?}");
        for table in tables {
            let wiped = STAGES.iter().any(|s| s.table == table);
            assert!(wiped || KEPT.contains(&table.as_str()), "{table} is neither wiped nor kept");
        }
    }
}
