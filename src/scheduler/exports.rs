//! The project export job (issue 35, item 6): `project.export` writes the zip on a blocking
//! thread with a connection of its own, page by page ([`crate::core::exports::write`]), records
//! it, and removes the project's earlier export files.

use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobError, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::core::exports;
use crate::core::jobs::JobKind;

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::ProjectExport.name(), Duration::from_secs(6 * 3600), run);
}

#[derive(Deserialize)]
struct Payload {
    export: String,
}

async fn run(ctx: JobContext) -> JobResult {
    let Payload { export } = ctx.payload()?;
    let project = ctx.job.project_id.clone().unwrap_or_default();
    let state = ctx.state.clone();
    let data_dir = state.config.server.data_dir.clone();
    let to = exports::file(&data_dir, &project, &export);
    let written = {
        let (db, project) = (state.db.clone(), project.clone());
        tokio::task::spawn_blocking(move || {
            let conn = db.conn().map_err(|e| e.to_string())?;
            exports::write(&conn, &project, &to, clock::now_ms())
        })
        .await
        .map_err(|e| JobError::Retry(e.to_string()))?
    };
    // A file that could not be written (a full disk, say) is tried again while tries are left.
    if let Err(e) = &written
        && ctx.job.attempt < ctx.job.max_attempts
    {
        return Err(JobError::Retry(e.clone()));
    }
    let outcome = written.as_ref().map(|b| *b as i64).map_err(String::clone);
    let id = export.clone();
    let gone = state
        .db
        .write(move |tx| {
            crate::db::exports::finish(
                tx,
                &id,
                outcome.as_ref().map(|b| *b).map_err(String::as_str),
                clock::now_ms(),
            )
        })
        .await?;
    for old in gone {
        let _ = tokio::fs::remove_file(exports::file(&data_dir, &project, &old)).await;
    }
    match written {
        Ok(bytes) => tracing::info!(project, bytes, "project exported"),
        Err(e) => tracing::error!(project, "project export failed: {e}"),
    }
    Ok(JobOutcome::Done)
}
