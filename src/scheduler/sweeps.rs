//! Periodic housekeeping: expired idempotency records, sessions, account tokens and
//! invitations, old finished jobs, received mail past its retention, idle rate-limit and
//! sign-in attempt state.

use std::time::Duration;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::config::Config;
use crate::core::jobs::JobKind;
use crate::db::{DbError, account_tokens, idempotency, inbound, invitations, jobs, sessions};

pub fn register(registry: &mut Registry, config: &Config) {
    let every = Duration::from_secs(config.scheduler.idempotency_sweep_secs.into());
    registry.periodic(JobKind::IdempotencySweep.name(), every, sweep_idempotency);
    registry.periodic(JobKind::JobSweep.name(), Duration::from_secs(3600), sweep_jobs);
    registry.periodic(JobKind::InboundSweep.name(), Duration::from_secs(600), sweep_inbound);
}

/// How often the room the data takes is measured.
const STORAGE_EVERY: Duration = Duration::from_secs(10);

/// Measures the room the data takes ([`crate::core::storage`]) every ten seconds, for as long as
/// the server runs. A task of its own rather than a job: it must go on when the disk is full,
/// when no job can record its run.
pub async fn watch_storage(state: crate::state::AppState) {
    loop {
        measure(&state).await;
        tokio::time::sleep(STORAGE_EVERY).await;
    }
}

/// Measures the data directory (and the database's files, when kept elsewhere) now.
pub async fn measure(state: &crate::state::AppState) {
    let config = state.config.clone();
    let used = tokio::task::spawn_blocking(move || {
        let database = config.database_path();
        let log = std::path::PathBuf::from(format!("{}-wal", database.display()));
        crate::core::storage::measure(&config.server.data_dir, &[&database, &log])
    })
    .await
    .unwrap_or(0);
    state.storage.set(used);
    if state.storage.warning() {
        tracing::warn!(
            used,
            budget = state.storage.budget(),
            "the data takes 90 % of [database] disk_budget_bytes"
        );
    }
}

/// Messages deleted per transaction.
const INBOUND_BATCH: usize = 500;

/// Deletes received messages kept past their expiry, a batch per transaction so the writer is
/// never held long.
async fn sweep_inbound(ctx: JobContext) -> JobResult {
    let mut deleted = 0;
    loop {
        let n = ctx.state.db.write(|tx| inbound::expire(tx, clock::now_ms(), INBOUND_BATCH)).await?;
        deleted += n;
        if n < INBOUND_BATCH {
            break;
        }
    }
    if deleted > 0 {
        tracing::info!(deleted, "deleted received mail past its retention");
    }
    Ok(JobOutcome::Done)
}

/// Deletes idempotency records past their expiry (the key may then be used again), expired
/// sessions, account tokens and invitations, and forgets idle limiter state.
async fn sweep_idempotency(ctx: JobContext) -> JobResult {
    let deleted = ctx.state.db.write(|tx| idempotency::sweep(tx, clock::now_ms())).await?;
    if deleted > 0 {
        tracing::info!(deleted, "swept expired idempotency keys");
    }
    let (sessions, tokens) = ctx
        .state
        .db
        .write(|tx| {
            let now = clock::now_ms();
            Ok::<_, DbError>((
                sessions::sweep(tx, now)?,
                account_tokens::sweep(tx, now)? + invitations::sweep(tx, now)?,
            ))
        })
        .await?;
    if sessions > 0 || tokens > 0 {
        tracing::info!(sessions, tokens, "swept expired sessions and account tokens");
    }
    ctx.state.limiter.forget_idle();
    ctx.state.attempts.forget_idle();
    ctx.state.mail_requests.forget_idle();
    Ok(JobOutcome::Done)
}

/// Deletes finished and failed jobs older than `[scheduler] job_retention_hours`.
async fn sweep_jobs(ctx: JobContext) -> JobResult {
    let keep_ms = i64::from(ctx.state.config.scheduler.job_retention_hours) * 3_600_000;
    let deleted = ctx.state.db.write(move |tx| jobs::sweep_finished(tx, clock::now_ms() - keep_ms)).await?;
    if deleted > 0 {
        tracing::info!(deleted, "swept old finished jobs");
    }
    Ok(JobOutcome::Done)
}
