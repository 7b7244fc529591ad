//! Deleting every event of one name, in batches that each commit, so a large deletion never
//! holds the write lock for long and a restart simply carries on (deleting is idempotent).

use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::core::jobs::JobKind;
use crate::db::events;

/// Events deleted per transaction.
pub use crate::core::events::DELETE_BATCH;

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::EventDelete.name(), Duration::from_secs(3600), delete_named);
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
