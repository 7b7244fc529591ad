//! Resetting and deleting projects: the job that runs [`crate::db::wipe`]'s steps until the
//! project is reset or gone. Each step is a transaction of its own, bounded in time, so the
//! writer serves the other requests between them; a restart carries on from what is left.

use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobError, JobOutcome, JobResult, Registry};
use super::pacing::{self, Paced};
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
    // Its exports go with a reset or a deletion: they hold the data the wipe removes.
    let exports = ctx.state.config.server.data_dir.join("exports").join(&project);
    if let Err(e) = tokio::fs::remove_dir_all(&exports).await
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(JobError::Retry(format!("could not remove {}: {e}", exports.display())));
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

/// Runs `project`'s wipe to its end, step by step ([`pacing`]); returns the rows deleted and
/// what finished (`None` when there was nothing to wipe). `observe` sees each step.
pub async fn wipe_project(
    db: &Db,
    project: &str,
    mut observe: impl FnMut(&Paced<Step>),
) -> Result<(usize, Option<Wipe>), DbError> {
    let (mut deleted, mut finished) = (0, None);
    pacing::run(db, |before: Option<&Paced<Step>>| {
        let chunk = match before {
            None => wipe::CHUNK,
            Some(taken) => {
                observe(taken);
                match taken.step {
                    Step::More { deleted: n, chunk, .. } => {
                        deleted += n;
                        chunk
                    }
                    Step::Finished { deleted: n, wipe } => {
                        (deleted, finished) = (deleted + n, Some(wipe));
                        return None;
                    }
                    Step::Idle => return None,
                }
            }
        };
        let id = project.to_string();
        Some(move |tx: &crate::db::Tx| wipe::step(tx, &id, STEP_BUDGET, chunk))
    })
    .await?;
    Ok((deleted, finished))
}
