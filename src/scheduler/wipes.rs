//! Resetting and deleting projects: the job that runs [`crate::db::wipe`]'s steps until the
//! project is reset or gone. Each step is a transaction of its own, bounded in time, so the
//! writer serves the other requests between them; a restart carries on from what is left.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::handlers::{JobContext, JobError, JobOutcome, JobResult, Registry};
use crate::core::jobs::JobKind;
use crate::db::projects::Wipe;
use crate::db::wipe::{self, Step};
use crate::db::{Db, DbError};

/// How long one step deletes before it commits.
pub const STEP_BUDGET: Duration = Duration::from_millis(15);

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::ProjectWipe.name(), Duration::from_secs(24 * 3600), run);
}

#[derive(Deserialize)]
struct Payload {
    project: String,
}

async fn run(ctx: JobContext) -> JobResult {
    let Payload { project } = ctx.payload()?;
    let (deleted, wipe) = wipe_project(&ctx.state.db, &project, |_| {}).await?;
    if let Some(wipe) = wipe {
        tracing::info!(project, rows = deleted, "project {}: done", wipe.as_str());
    }
    // A deleted project's images go too (a reset keeps them: mail already sent shows them).
    // After the rows, so a restart in between finds the project gone and removes them then.
    if wipe == Some(Wipe::Delete) || (wipe.is_none() && !project_exists(&ctx.state.db, &project).await?) {
        let dir = crate::core::uploads::project_dir(&ctx.state.config.uploads_dir(), &project);
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(JobError::Retry(format!("could not remove {}: {e}", dir.display())));
        }
    }
    Ok(JobOutcome::Done)
}

async fn project_exists(db: &Db, project: &str) -> Result<bool, DbError> {
    let id = project.to_string();
    db.run(move |conn| Ok(crate::db::projects::get(conn, &id)?.is_some())).await
}

/// One step as it went, for [`wipe_project`]'s observer.
pub struct StepTaken {
    pub step: Step,
    /// From asking the writer to its answer: the deleting, the commit, and anything the writer
    /// did before it (other writes, a checkpoint).
    pub round_trip: Duration,
    /// The deleting alone.
    pub work: Duration,
}

/// Runs `project`'s wipe to its end, step by step; returns the rows deleted and what finished
/// (`None` when there was nothing to wipe). After each step it waits as long as the step took,
/// so the wipe has at most half of the writer's time and the checkpointer keeps up with the log
/// it writes (without the pause, a wipe of 10,000,000 events left the writer checkpointing the
/// log itself every thirty steps or so, each time holding it for 100 to 300 ms).
pub async fn wipe_project(
    db: &Db,
    project: &str,
    mut observe: impl FnMut(&StepTaken),
) -> Result<(usize, Option<Wipe>), DbError> {
    let (mut deleted, mut chunk) = (0, wipe::CHUNK);
    loop {
        let id = project.to_string();
        let asked = Instant::now();
        let (step, work) = db
            .write_alone(move |tx| {
                let started = Instant::now();
                let step = wipe::step(tx, &id, STEP_BUDGET, chunk)?;
                Ok::<_, DbError>((step, started.elapsed()))
            })
            .await?;
        let taken = StepTaken { step, round_trip: asked.elapsed(), work };
        observe(&taken);
        match taken.step {
            Step::More { deleted: n, chunk: next, .. } => {
                deleted += n;
                chunk = next;
                tokio::time::sleep(taken.round_trip).await;
            }
            Step::Finished { deleted: n, wipe } => return Ok((deleted + n, Some(wipe))),
            Step::Idle => return Ok((deleted, None)),
        }
    }
}
