//! Deleting every event of one name, in batches that each commit, so a large deletion never
//! holds the write lock for long and a restart simply carries on (deleting is idempotent).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{JobContext, JobOutcome, JobResult, NewJob, Registry};
use crate::db::events;

pub const DELETE_KIND: &str = "events.delete";
/// Events deleted per transaction.
pub const DELETE_BATCH: usize = 5000;

pub fn register(registry: &mut Registry) {
    registry.register(DELETE_KIND, Duration::from_secs(3600), delete_named);
}

/// The job that deletes the events named `name` in `project` (one per name at a time).
pub fn delete_job(project: &str, name: &str) -> NewJob {
    NewJob::new(DELETE_KIND, &json!({ "project": project, "name": name }))
        .project(project)
        .dedupe(format!("{DELETE_KIND}:{project}:{name}"))
}

#[derive(Deserialize)]
struct Payload {
    project: String,
    name: String,
}

async fn delete_named(ctx: JobContext) -> JobResult {
    let Payload { project, name } = ctx.payload()?;
    loop {
        let (p, n) = (project.clone(), name.clone());
        let deleted =
            ctx.state.db.write_alone(move |tx| events::delete_named(tx, &p, &n, DELETE_BATCH)).await?;
        if deleted < DELETE_BATCH {
            return Ok(JobOutcome::Done);
        }
    }
}
