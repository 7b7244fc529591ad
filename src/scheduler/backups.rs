//! Scheduled backups (issue 35, item 2): `backup.scheduled` looks every minute whether a copy
//! is due by `[backup] schedule` (none yet since the last slot), makes it on a blocking thread
//! beside the server's work ([`crate::core::backups::copy`]), records it, and removes the
//! oldest scheduled copies past `[backup] keep`.

use std::time::Duration;

use super::handlers::{JobContext, JobError, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::core::backups;
use crate::core::jobs::JobKind;
use crate::db::DbError;
use crate::state::AppState;

/// After a failed copy, the next try waits this long (ms), whatever the schedule.
const RETRY_MS: i64 = 10 * 60_000;
/// The longest a copy (and its check) may take.
const COPY_LIMIT: Duration = Duration::from_secs(6 * 3600);

pub fn register(registry: &mut Registry, config: &crate::config::Config) {
    if config.backup_schedule().is_none() {
        return;
    }
    let kind = JobKind::BackupScheduled.name();
    registry.periodic(kind, Duration::from_secs(60), run);
    if let Some(entry) = registry.entries.get_mut(kind) {
        entry.timeout = COPY_LIMIT;
    }
}

async fn run(ctx: JobContext) -> JobResult {
    let Some(schedule) = ctx.state.config.backup_schedule() else { return Ok(JobOutcome::Done) };
    let now = clock::now_ms();
    let (ok, failed) = ctx
        .state
        .db
        .run(|conn| {
            Ok::<_, DbError>((
                crate::db::backups::last_scheduled(conn, "ok")?,
                crate::db::backups::last_scheduled(conn, "failed")?,
            ))
        })
        .await?;
    let due = schedule.last_due(now);
    if ok.is_some_and(|at| at >= due) || failed.is_some_and(|at| at > now - RETRY_MS) {
        return Ok(JobOutcome::Done);
    }
    make(&ctx.state, true).await.map_err(JobError::Retry)?;
    Ok(JobOutcome::Done)
}

/// Makes a copy into `[backup] path` now, records it, and (for a scheduled one) rotates.
pub async fn make(state: &AppState, scheduled: bool) -> Result<backups::Made, String> {
    let config = state.config.clone();
    let started = clock::now_ms();
    // Recorded absolute, so the rotation finds it whatever the working directory.
    let dir = std::path::absolute(config.backup_dir()).map_err(|e| format!("the backup directory: {e}"))?;
    let to = dir.join(backups::file_name(started));
    let path = to.to_string_lossy().into_owned();
    let id = state
        .db
        .write(move |tx| crate::db::backups::start(tx, &path, scheduled, started))
        .await
        .map_err(|e| e.to_string())?;
    let copy = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            backups::copy(
                &config.database_path(),
                &to,
                &config.uploads_dir(),
                config.database.busy_timeout_ms,
            )
        })
        .await
        .unwrap_or_else(|e| Err(format!("the copy stopped: {e}")))
    };
    let outcome = copy.as_ref().map(|m| (m.bytes as i64, m.uploads as i64)).map_err(String::clone);
    state
        .db
        .write(move |tx| {
            crate::db::backups::finish(
                tx,
                id,
                outcome.as_ref().map(|o| *o).map_err(String::as_str),
                clock::now_ms(),
            )
        })
        .await
        .map_err(|e| e.to_string())?;
    match &copy {
        Ok(made) => {
            tracing::info!(path = %made.path.display(), bytes = made.bytes, "backup made and checked")
        }
        Err(e) => tracing::error!("backup failed: {e}"),
    }
    if copy.is_ok() && scheduled {
        rotate(state, config.backup.keep as usize).await.map_err(|e| e.to_string())?;
    }
    copy
}

/// Removes the scheduled copies past the newest `keep`.
async fn rotate(state: &AppState, keep: usize) -> Result<(), DbError> {
    let kept = state.db.run(|conn| crate::db::backups::kept_scheduled(conn)).await?;
    for old in kept.into_iter().skip(keep) {
        let path = std::path::PathBuf::from(&old.path);
        let removed = tokio::task::spawn_blocking(move || backups::remove(&path))
            .await
            .map_err(|e| DbError::Join(e.to_string()))?;
        if let Err(e) = removed {
            tracing::warn!(path = old.path, "could not remove an old backup: {e}");
            continue;
        }
        state.db.write(move |tx| crate::db::backups::removed(tx, old.id, clock::now_ms())).await?;
        tracing::info!(path = old.path, "removed an old backup");
    }
    Ok(())
}
