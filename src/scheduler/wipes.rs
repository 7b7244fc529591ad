//! Resetting and deleting projects: the job that runs [`crate::db::wipe`]'s steps until the
//! project is reset or gone. Each step is a transaction of its own, bounded in time, so the
//! writer serves the other requests between them; a restart carries on from what is left.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{JobContext, JobOutcome, JobResult, NewJob, Registry};
use crate::db::DbError;
use crate::db::wipe::{self, Step};

pub const KIND: &str = "project.wipe";
/// How long one step deletes before it commits.
pub const STEP_BUDGET: Duration = Duration::from_millis(15);

pub fn register(registry: &mut Registry) {
    registry.register(KIND, Duration::from_secs(24 * 3600), run);
}

/// The job that wipes `project`. Not tied to the project's row (a project's jobs go with it):
/// it outlives the project it deletes.
pub fn job(project: &str) -> NewJob {
    NewJob::new(KIND, &json!({ "project": project })).max_attempts(50)
}

#[derive(Deserialize)]
struct Payload {
    project: String,
}

async fn run(ctx: JobContext) -> JobResult {
    let Payload { project } = ctx.payload()?;
    let (mut deleted, mut chunk) = (0, wipe::CHUNK);
    loop {
        let id = project.clone();
        let step = ctx
            .state
            .db
            .write_alone(move |tx| Ok::<_, DbError>(wipe::step(tx, &id, STEP_BUDGET, chunk)?))
            .await?;
        match step {
            Step::More { deleted: n, chunk: next, .. } => {
                deleted += n;
                chunk = next;
            }
            Step::Finished { deleted: n, wipe } => {
                tracing::info!(project, rows = deleted + n, "project {}: done", wipe.as_str());
                return Ok(JobOutcome::Done);
            }
            Step::Idle => return Ok(JobOutcome::Done),
        }
    }
}
