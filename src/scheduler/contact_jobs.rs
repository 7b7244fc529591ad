//! The worker of contact jobs: CSV imports, bulk operations and field removals, in batches that
//! each commit their progress, so an interrupted job resumes where it stopped.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobError, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::core::Error as CoreError;
use crate::core::contact_filters::Narrowing;
use crate::core::jobs::JobKind;
use crate::core::{bulk, import, import_rows};
use crate::db::Db;
use crate::db::contact_jobs::{self, ContactJob};

/// Records imported per transaction.
pub const IMPORT_BATCH: usize = 5000;
/// Contacts visited per transaction when removing a field.
pub const FIELD_BATCH: usize = 5000;
/// Contacts visited per transaction by a query-mode bulk job (each may be deleted, with its
/// events and emails).
pub const QUERY_BATCH: usize = 2000;

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::ContactJob.name(), Duration::from_secs(6 * 3600), run);
}

#[derive(Deserialize)]
struct Payload {
    id: String,
}

async fn run(ctx: JobContext) -> JobResult {
    let id = ctx.payload::<Payload>()?.id;
    match work(&ctx, &id).await {
        Ok(()) => Ok(JobOutcome::Done),
        Err(e) => {
            let message = e.to_string();
            if ctx.job.attempt >= ctx.job.max_attempts {
                let (failed_id, failure) = (id.clone(), message.clone());
                ctx.state
                    .db
                    .write(move |tx| {
                        Ok::<_, CoreError>(contact_jobs::fail(tx, &failed_id, &failure, clock::now_ms())?)
                    })
                    .await
                    .map_err(|e| JobError::Retry(e.to_string()))?;
                return Err(JobError::Permanent(message));
            }
            Err(JobError::Retry(message))
        }
    }
}

/// A bulk job's input, read once.
enum Work {
    DeleteField(String),
    Ids(Vec<String>),
    Query { search: Option<String>, subscribed: Option<bool>, exclude: HashSet<String>, narrowing: Narrowing },
}

async fn work(ctx: &JobContext, id: &str) -> Result<(), CoreError> {
    let db = &ctx.state.db;
    let (job_id, input_id) = (id.to_string(), id.to_string());
    let Some(job) = db.run(move |conn| Ok::<_, CoreError>(contact_jobs::by_id(conn, &job_id)?)).await? else {
        return Ok(());
    };
    if matches!(job.status.as_str(), "completed" | "failed") {
        return Ok(());
    }
    let input = db
        .run(move |conn| Ok::<_, CoreError>(contact_jobs::input(conn, &input_id)?))
        .await?
        .unwrap_or_default();
    if job.operation == "import" {
        return import_file(db, &job, input).await;
    }
    let work = Arc::new(match job.operation.as_str() {
        "delete_field" => Work::DeleteField(String::from_utf8_lossy(&input).into_owned()),
        _ => match serde_json::from_slice(&input)
            .map_err(|e| CoreError::Permanent(format!("bulk job input: {e}")))?
        {
            bulk::Selection::Ids(ids) => Work::Ids(ids),
            bulk::Selection::Query { search, subscribed, exclude, narrowing } => {
                Work::Query { search, subscribed, exclude: exclude.into_iter().collect(), narrowing }
            }
        },
    });
    loop {
        let (id, work) = (id.to_string(), work.clone());
        let done = db
            .write_alone(move |tx| {
                let Some(job) = contact_jobs::by_id(tx, &id)? else { return Ok(true) };
                let now = clock::now_ms();
                match &*work {
                    Work::DeleteField(path) => bulk::remove_field_batch(tx, &job, path, FIELD_BATCH, now),
                    Work::Ids(ids) => bulk::run(tx, &job, ids, now).map(|()| true),
                    Work::Query { search, subscribed, exclude, narrowing } => {
                        let filters = bulk::QueryFilters {
                            search: search.as_deref(),
                            subscribed: *subscribed,
                            narrowing,
                            exclude,
                        };
                        bulk::run_query_batch(tx, &job, &filters, QUERY_BATCH, now)
                    }
                }
            })
            .await?;
        if done {
            return Ok(());
        }
    }
}

/// An import: its file read ahead of the writer on a thread of its own (core::import_rows; the
/// header is read there, off the async threads), then its batches written in turn, the reader
/// handed to each and back.
async fn import_file(db: &Db, job: &ContactJob, input: Vec<u8>) -> Result<(), CoreError> {
    let (id, cursor) = (job.id.clone(), job.cursor);
    let mut rows = db
        .run(move |conn| {
            let options = import::options_of(conn, &id)?;
            import_rows::ReadAhead::start(Arc::new(input), cursor, options)
        })
        .await?;
    loop {
        let id = job.id.clone();
        let (done, back) = db
            .write_alone(move |tx| {
                let Some(job) = contact_jobs::by_id(tx, &id)? else { return Ok((true, rows)) };
                let done = import::write_batch(tx, &job, &mut rows, IMPORT_BATCH, clock::now_ms())?;
                Ok::<_, CoreError>((done, rows))
            })
            .await?;
        if done {
            return Ok(());
        }
        rows = back;
    }
}
