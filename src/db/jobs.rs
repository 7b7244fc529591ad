//! The durable jobs table: enqueue, claim with a lease, and the moves a claimed job can make.
//!
//! Every move of a claimed job names its lease token, so a worker whose lease ran out (and whose
//! job another worker has taken since) can no longer change the job.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::fair;

/// A job to add.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: String,
    pub project_id: Option<String>,
    /// At most one unfinished job exists per dedupe key.
    pub dedupe_key: Option<String>,
    pub run_at: i64,
    pub max_attempts: u32,
}

impl NewJob {
    /// A job of `kind` with a JSON payload, due now, tried at most 5 times.
    pub fn new(kind: impl Into<String>, payload: &serde_json::Value) -> Self {
        Self {
            kind: kind.into(),
            payload: payload.to_string(),
            project_id: None,
            dedupe_key: None,
            run_at: crate::clock::now_ms(),
            max_attempts: 5,
        }
    }

    pub fn project(mut self, project_id: &str) -> Self {
        self.project_id = Some(project_id.into());
        self
    }

    pub fn dedupe(mut self, key: impl Into<String>) -> Self {
        self.dedupe_key = Some(key.into());
        self
    }

    pub fn at(mut self, run_at: i64) -> Self {
        self.run_at = run_at;
        self
    }

    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }
}

/// A job as claimed by a worker.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub id: i64,
    pub kind: String,
    pub payload: String,
    pub project_id: Option<String>,
    /// Including this one.
    pub attempt: u32,
    pub max_attempts: u32,
    pub lease: String,
}

/// A job row, for inspection.
#[derive(Debug, Clone)]
pub struct JobRow {
    pub id: i64,
    pub kind: String,
    pub status: String,
    pub run_at: i64,
    pub attempts: u32,
    pub max_attempts: u32,
    pub lease: Option<String>,
    pub locked_until: Option<i64>,
    pub last_error: Option<String>,
    pub finished_at: Option<i64>,
}

fn job_row(r: &Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        kind: r.get(1)?,
        status: r.get(2)?,
        run_at: r.get(3)?,
        attempts: r.get(4)?,
        max_attempts: r.get(5)?,
        lease: r.get(6)?,
        locked_until: r.get(7)?,
        last_error: r.get(8)?,
        finished_at: r.get(9)?,
    })
}

const ROW_COLUMNS: &str =
    "id, kind, status, run_at, attempts, max_attempts, lease, locked_until, last_error, finished_at";

/// Adds a job; `None` when an unfinished job with the same dedupe key exists.
pub fn enqueue(conn: &Connection, job: &NewJob) -> Result<Option<i64>> {
    let now = crate::clock::now_ms();
    let inserted = conn.execute(
        "INSERT INTO jobs (kind, payload, project_id, dedupe_key, status, run_at, max_attempts, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?7) ON CONFLICT(dedupe_key) DO NOTHING",
        params![job.kind, job.payload, job.project_id, job.dedupe_key, job.run_at, job.max_attempts, now],
    )?;
    if inserted > 0 {
        // Also for a later job: the scheduler then sleeps until it is due, not until its
        // next idle look.
        super::effects::wake(super::effects::Wake::Jobs);
    }
    Ok((inserted > 0).then(|| conn.last_insert_rowid()))
}

/// Adds `job` unless a job of its kind for its project is queued (not yet claimed): that one
/// will do this one's work. A job already running does not count, since it may have looked
/// at its work before the caller's.
pub fn enqueue_unless_queued(conn: &Connection, job: &NewJob) -> Result<()> {
    let now = crate::clock::now_ms();
    let inserted = conn
        .prepare_cached(
            "INSERT INTO jobs (kind, payload, project_id, status, run_at, max_attempts, created_at, updated_at)
             SELECT ?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?6
             WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE project_id IS ?3 AND status = 'queued' AND kind = ?1)",
        )?
        .execute(params![job.kind, job.payload, job.project_id, job.run_at, job.max_attempts, now])?;
    if inserted > 0 {
        super::effects::wake(super::effects::Wake::Jobs);
    }
    Ok(())
}

/// As [`enqueue`], but when a queued job with the same dedupe key exists, it is brought forward
/// to this job's time if that is sooner (a scheduled start that is asked for now).
pub fn enqueue_soonest(conn: &Connection, job: &NewJob) -> Result<()> {
    let now = crate::clock::now_ms();
    conn.execute(
        "INSERT INTO jobs (kind, payload, project_id, dedupe_key, status, run_at, max_attempts, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?7)
         ON CONFLICT(dedupe_key) DO UPDATE SET run_at = min(run_at, excluded.run_at), updated_at = excluded.updated_at
           WHERE jobs.status = 'queued'",
        params![job.kind, job.payload, job.project_id, job.dedupe_key, job.run_at, job.max_attempts, now],
    )?;
    super::effects::wake(super::effects::Wake::Jobs);
    Ok(())
}

/// How many jobs there are of each kind and status (for the metrics).
pub fn counts(conn: &Connection) -> Result<Vec<(String, String, i64)>> {
    Ok(conn
        .prepare_cached(
            "SELECT kind, status, count(*) FROM jobs GROUP BY kind, status ORDER BY kind, status",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn get(conn: &Connection, id: i64) -> rusqlite::Result<Option<JobRow>> {
    conn.query_row(&format!("SELECT {ROW_COLUMNS} FROM jobs WHERE id = ?1"), [id], job_row).optional()
}

/// Every job of a kind, oldest first (for inspection and tests).
pub fn of_kind(conn: &Connection, kind: &str) -> rusqlite::Result<Vec<JobRow>> {
    let mut stmt = conn.prepare(&format!("SELECT {ROW_COLUMNS} FROM jobs WHERE kind = ?1 ORDER BY id"))?;
    stmt.query_map([kind], job_row)?.collect()
}

/// Claims up to `limit` due jobs: queued ones whose time has come, and running ones whose lease
/// ran out (their worker died), round-robin across projects (the service's own jobs as one)
/// within their room in `turns` ([`fair`]), each one's longest due first. Call inside an
/// IMMEDIATE transaction. A job whose lease ran out on its last allowed attempt is marked failed
/// instead of being run again.
pub fn claim(
    conn: &Connection,
    now: i64,
    limit: usize,
    lease_ms: i64,
    turns: &mut fair::Turns,
) -> Result<Vec<Claimed>> {
    let due = fair::claim(conn, &Due { now }, turns, limit)?;
    let mut claimed = Vec::with_capacity(due.len());
    for (_, (mut job, lease_expired)) in due {
        if lease_expired && job.attempt >= job.max_attempts {
            fail_row(
                conn,
                job.id,
                "the worker running this job stopped before it finished, on every attempt",
                now,
            )?;
            continue;
        }
        conn.execute(
            "UPDATE jobs SET status = 'running', lease = ?2, locked_until = ?3, attempts = attempts + 1,
                 updated_at = ?4 WHERE id = ?1",
            params![job.id, job.lease, now + lease_ms, now],
        )?;
        job.attempt += 1;
        claimed.push(job);
    }
    Ok(claimed)
}

/// The jobs due at `now`, for [`fair::claim`]: each with whether its lease ran out.
struct Due {
    now: i64,
}

impl fair::Queue for Due {
    type Row = (Claimed, bool);

    /// Few jobs are due at once, so the owners are read from the due jobs themselves.
    fn owners(
        &self,
        conn: &Connection,
        after: Option<&fair::Owner>,
        limit: usize,
    ) -> Result<Vec<fair::Owner>> {
        let owners: Vec<fair::Owner> = conn
            .prepare_cached(
                "SELECT DISTINCT project_id FROM (
                     SELECT project_id FROM jobs WHERE status = 'queued' AND run_at <= ?1
                     UNION ALL
                     SELECT project_id FROM jobs WHERE status = 'running' AND locked_until <= ?1
                 ) ORDER BY project_id",
            )?
            .query_map([self.now], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        // NULL (the service's own) sorts first, as `None` does.
        Ok(owners.into_iter().filter(|o| after.is_none_or(|a| o > a)).take(limit).collect())
    }

    fn due(
        &self,
        conn: &Connection,
        owner: &fair::Owner,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<(Claimed, bool)>> {
        Ok(conn
            .prepare_cached(
                "SELECT id, kind, payload, project_id, attempts, max_attempts, status FROM (
                 SELECT * FROM jobs WHERE status = 'queued' AND run_at <= ?1 AND project_id IS ?2
                 UNION ALL
                 SELECT * FROM jobs WHERE status = 'running' AND locked_until <= ?1 AND project_id IS ?2
             ) ORDER BY run_at, id LIMIT ?3 OFFSET ?4",
            )?
            .query_map(params![self.now, owner, limit as i64, offset as i64], |r| {
                let job = Claimed {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    payload: r.get(2)?,
                    project_id: r.get(3)?,
                    attempt: r.get(4)?,
                    max_attempts: r.get(5)?,
                    lease: uuid::Uuid::new_v4().simple().to_string(),
                };
                Ok((job, r.get::<_, String>(6)? == "running"))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

fn fail_row(conn: &Connection, id: i64, error: &str, now: i64) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'failed', lease = NULL, locked_until = NULL, dedupe_key = NULL,
             last_error = ?2, finished_at = ?3, updated_at = ?3 WHERE id = ?1",
        params![id, error, now],
    )?)
}

/// The job finished: it is kept as `done` until the retention sweep.
pub fn finish(conn: &Connection, id: i64, lease: &str, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'done', lease = NULL, locked_until = NULL, dedupe_key = NULL,
             finished_at = ?3, updated_at = ?3 WHERE id = ?1 AND lease = ?2",
        params![id, lease, now],
    )? > 0)
}

/// The job wants to run again at `run_at` (a periodic job, or a long job continuing in steps);
/// its attempt count starts over.
pub fn reschedule(conn: &Connection, id: i64, lease: &str, run_at: i64, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'queued', lease = NULL, locked_until = NULL, attempts = 0, last_error = NULL,
             run_at = ?3, updated_at = ?4 WHERE id = ?1 AND lease = ?2",
        params![id, lease, run_at, now],
    )? > 0)
}

/// The attempt failed and may be tried again at `run_at`.
pub fn retry(conn: &Connection, id: i64, lease: &str, error: &str, run_at: i64, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'queued', lease = NULL, locked_until = NULL, last_error = ?3,
             run_at = ?4, updated_at = ?5 WHERE id = ?1 AND lease = ?2",
        params![id, lease, error, run_at, now],
    )? > 0)
}

/// The job failed for good.
pub fn fail(conn: &Connection, id: i64, lease: &str, error: &str, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'failed', lease = NULL, locked_until = NULL, dedupe_key = NULL,
             last_error = ?3, finished_at = ?4, updated_at = ?4 WHERE id = ?1 AND lease = ?2",
        params![id, lease, error, now],
    )? > 0)
}

/// Fails a job for good, whoever holds it (the quarantine: see `scheduler::inflight`).
pub fn give_up(conn: &Connection, id: i64, error: &str, now: i64) -> Result<()> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'failed', lease = NULL, locked_until = NULL, dedupe_key = NULL,
             last_error = ?2, finished_at = ?3, updated_at = ?3 WHERE id = ?1 AND status IN ('queued', 'running')",
        params![id, error, now],
    )
    .map(drop)?)
}

/// Gives a claimed job back untouched (the worker is shutting down): due at once, and the
/// interrupted attempt does not count.
pub fn release(conn: &Connection, id: i64, lease: &str, now: i64) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE jobs SET status = 'queued', lease = NULL, locked_until = NULL,
             attempts = max(attempts - 1, 0), run_at = ?3, updated_at = ?3 WHERE id = ?1 AND lease = ?2",
        params![id, lease, now],
    )? > 0)
}

/// Ends every lease at once (the process that held them is known to be gone: see
/// [`crate::lock`]), so the jobs are claimed again now instead of when the leases run out. The
/// interrupted run counts as an attempt, as it would have after the lease ran out.
pub fn take_back_leases(conn: &Connection, now: i64) -> Result<usize> {
    Ok(conn.execute(
        "UPDATE jobs SET locked_until = ?1, updated_at = ?1 WHERE status = 'running' AND locked_until > ?1",
        [now],
    )?)
}

/// Extends the leases of jobs this worker is still running.
pub fn renew(conn: &Connection, leases: &[String], locked_until: i64) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("UPDATE jobs SET locked_until = ?2 WHERE lease = ?1 AND status = 'running'")?;
    for lease in leases {
        stmt.execute(params![lease, locked_until])?;
    }
    Ok(())
}

/// When the next job becomes due: the earliest queued `run_at` or running `locked_until`.
pub fn next_due(conn: &Connection) -> Result<Option<i64>> {
    Ok(conn.query_row(
        "SELECT min(t) FROM (
             SELECT min(run_at) AS t FROM jobs WHERE status = 'queued'
             UNION ALL
             SELECT min(locked_until) FROM jobs WHERE status = 'running')",
        [],
        |r| r.get(0),
    )?)
}

/// Makes sure the periodic job `kind` exists, due no later than `now + interval_ms`.
pub fn ensure_periodic(conn: &Connection, kind: &str, interval_ms: i64, now: i64) -> Result<()> {
    let job = NewJob::new(kind, &serde_json::json!({})).dedupe(kind).at(now);
    if enqueue(conn, &job)?.is_none() {
        conn.execute(
            "UPDATE jobs SET run_at = min(run_at, ?2) WHERE dedupe_key = ?1 AND status = 'queued'",
            params![kind, now + interval_ms],
        )?;
    }
    Ok(())
}

/// Deletes finished and failed jobs that ended before `before`; returns how many.
pub fn sweep_finished(conn: &Connection, before: i64) -> Result<usize> {
    Ok(conn.execute("DELETE FROM jobs WHERE status IN ('done', 'failed') AND finished_at < ?1", [before])?)
}
