//! Deleting every event of one name, in batches that each commit, so a large deletion never
//! holds the write lock for long and a restart simply carries on (deleting is idempotent).
//! And emitting the events of held clicks when their wait is over (`core::engagement`): each
//! batch marks its clicks emitted in the transaction that emits them, so a crash repeats none.

use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::core::engagement;
use crate::core::jobs::JobKind;
use crate::db::events;

/// Events deleted per transaction.
pub use crate::core::events::DELETE_BATCH;

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::EventDelete.name(), Duration::from_secs(3600), delete_named);
    registry.register(JobKind::ClickRelease.name(), Duration::from_secs(60), release_clicks);
}

#[derive(Deserialize)]
struct Project {
    project: String,
}

/// Emits a project's held clicks that are due, a batch per transaction; runs again when the
/// next is due.
async fn release_clicks(ctx: JobContext) -> JobResult {
    let Project { project } = ctx.payload()?;
    loop {
        let p = project.clone();
        let now = clock::now_ms();
        let next = ctx.state.db.write(move |tx| engagement::release_held(tx, &p, now)).await?;
        match next {
            None => return Ok(JobOutcome::Done),
            Some(at) if at > clock::now_ms() => return Ok(JobOutcome::RunAgainAt(at)),
            Some(_) => continue,
        }
    }
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
