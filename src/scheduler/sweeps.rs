//! Periodic housekeeping: expired idempotency records and sessions, old finished jobs, idle
//! rate-limit and sign-in attempt state.

use std::time::Duration;

use super::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::config::Config;
use crate::db::{DbError, idempotency, jobs, sessions};

pub const IDEMPOTENCY_SWEEP: &str = "sweep.idempotency";
pub const JOB_SWEEP: &str = "sweep.jobs";

pub fn register(registry: &mut Registry, config: &Config) {
    let every = Duration::from_secs(config.scheduler.idempotency_sweep_secs.into());
    registry.periodic(IDEMPOTENCY_SWEEP, every, sweep_idempotency);
    registry.periodic(JOB_SWEEP, Duration::from_secs(3600), sweep_jobs);
}

/// Deletes idempotency records past their expiry (the key may then be used again) and expired
/// sessions, and forgets idle limiter state.
async fn sweep_idempotency(ctx: JobContext) -> JobResult {
    let deleted = ctx.state.db.write(|tx| Ok::<_, DbError>(idempotency::sweep(tx, clock::now_ms())?)).await?;
    if deleted > 0 {
        tracing::info!(deleted, "swept expired idempotency keys");
    }
    let sessions = ctx.state.db.write(|tx| Ok::<_, DbError>(sessions::sweep(tx, clock::now_ms())?)).await?;
    if sessions > 0 {
        tracing::info!(sessions, "swept expired sessions");
    }
    ctx.state.limiter.forget_idle();
    ctx.state.attempts.forget_idle();
    Ok(JobOutcome::Done)
}

/// Deletes finished and failed jobs older than `[scheduler] job_retention_hours`.
async fn sweep_jobs(ctx: JobContext) -> JobResult {
    let keep_ms = i64::from(ctx.state.config.scheduler.job_retention_hours) * 3_600_000;
    let deleted = ctx
        .state
        .db
        .write(move |tx| Ok::<_, DbError>(jobs::sweep_finished(tx, clock::now_ms() - keep_ms)?))
        .await?;
    if deleted > 0 {
        tracing::info!(deleted, "swept old finished jobs");
    }
    Ok(JobOutcome::Done)
}
