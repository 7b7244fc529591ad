//! Import and bulk jobs as the API reports them: input, progress and counters.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};

/// One import or bulk job.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactJob {
    pub id: String,
    pub project_id: String,
    pub operation: String,
    pub status: String,
    /// Where the work resumes: a byte offset into the file, or an index into the id list.
    pub cursor: i64,
    pub total: i64,
    pub processed: i64,
    pub imported: i64,
    pub updated: i64,
    pub skipped: i64,
    /// JSON array of error items (at most the first 1,000).
    pub errors: String,
    pub error_count: i64,
    pub failure: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str =
    "id, project_id, operation, status, cursor, total, processed, imported, updated, skipped,
     errors, error_count, failure, created_at, finished_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ContactJob> {
    Ok(ContactJob {
        id: r.get(0)?,
        project_id: r.get(1)?,
        operation: r.get(2)?,
        status: r.get(3)?,
        cursor: r.get(4)?,
        total: r.get(5)?,
        processed: r.get(6)?,
        imported: r.get(7)?,
        updated: r.get(8)?,
        skipped: r.get(9)?,
        errors: r.get(10)?,
        error_count: r.get(11)?,
        failure: r.get(12)?,
        created_at: r.get(13)?,
        finished_at: r.get(14)?,
    })
}

/// Adds a queued job with its input.
pub fn insert(
    conn: &Connection,
    project: &str,
    operation: &str,
    input: &[u8],
    total: i64,
    now: i64,
) -> Result<ContactJob> {
    let id = super::ids::new_id();
    conn.execute(
        "INSERT INTO contact_jobs (id, project_id, operation, status, total, created_at)
         VALUES (?1, ?2, ?3, 'queued', ?4, ?5)",
        params![id, project, operation, total, now],
    )?;
    conn.execute("INSERT INTO contact_job_inputs (job_id, input) VALUES (?1, ?2)", params![id, input])?;
    Ok(get(conn, project, &id)?.expect("the job just inserted"))
}

/// A job of the project (never another project's).
pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<ContactJob>> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM contact_jobs WHERE id = ?1 AND project_id = ?2"),
            [id, project],
            from_row,
        )
        .optional()?)
}

/// A job by id alone, for the worker.
pub fn by_id(conn: &Connection, id: &str) -> Result<Option<ContactJob>> {
    Ok(conn
        .query_row(&format!("SELECT {COLUMNS} FROM contact_jobs WHERE id = ?1"), [id], from_row)
        .optional()?)
}

/// The job's input (dropped once the job is finished).
pub fn input(conn: &Connection, id: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .query_row("SELECT input FROM contact_job_inputs WHERE job_id = ?1", [id], |r| r.get(0))
        .optional()?)
}

/// Writes progress and counters; a finished job is completed and its input dropped.
pub fn save_progress(conn: &Connection, job: &ContactJob, done: bool, now: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE contact_jobs SET status = ?2, cursor = ?3, processed = ?4, imported = ?5, updated = ?6, skipped = ?7,
             errors = ?8, error_count = ?9, finished_at = ?10
         WHERE id = ?1",
    )?
    .execute(
        params![
            job.id,
            if done { "completed" } else { "processing" },
            job.cursor,
            job.processed,
            job.imported,
            job.updated,
            job.skipped,
            job.errors,
            job.error_count,
            done.then_some(now),
        ],
    )?;
    if done {
        drop_input(conn, &job.id)?;
    }
    Ok(())
}

/// The job failed for good.
pub fn fail(conn: &Connection, id: &str, failure: &str, now: i64) -> Result<()> {
    let failed = conn.execute(
        "UPDATE contact_jobs SET status = 'failed', failure = ?2, finished_at = ?3
         WHERE id = ?1 AND status IN ('queued', 'processing')",
        params![id, failure, now],
    )?;
    if failed > 0 {
        drop_input(conn, id)?;
    }
    Ok(())
}

fn drop_input(conn: &Connection, id: &str) -> Result<()> {
    Ok(conn.execute("DELETE FROM contact_job_inputs WHERE job_id = ?1", [id]).map(drop)?)
}

/// Keeps an import's choices (JSON) with its job.
pub fn set_options(conn: &Connection, id: &str, options: &str) -> Result<()> {
    conn.execute("UPDATE contact_jobs SET options = ?2 WHERE id = ?1", params![id, options])?;
    Ok(())
}

/// An import's choices (JSON), if it was given any.
pub fn options(conn: &Connection, id: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT options FROM contact_jobs WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .flatten())
}
