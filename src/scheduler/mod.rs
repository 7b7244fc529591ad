//! The durable job runner: claims due rows of the `jobs` table with a lease, runs their handlers,
//! and records what happened.
//!
//! - A supervisor loop sleeps until the next job is due, a [`JobQueue::wake`] from the API, a job
//!   finishing, or shutdown, whichever comes first.
//! - Claims happen in an IMMEDIATE transaction, so two schedulers (two processes on one file)
//!   never hold the same job; leases of jobs still running here are renewed, and a lease that runs
//!   out because its process died makes the job claimable again.
//! - Failures are retried with exponential backoff up to the job's `max_attempts`.
//! - Periodic sweeps are ordinary jobs with a dedupe key that reschedule themselves.
//! - On shutdown no new job is claimed, running jobs get the grace period, and the ones still
//!   running after it are stopped and handed back untouched, so a restart resumes them.

pub mod backups;
pub mod campaigns;
pub mod composers;
pub mod contact_jobs;
pub mod delivery;
pub mod domains;
pub mod erasure;
pub mod events;
pub mod exports;
pub mod fair;
pub mod handlers;
pub mod handles;
pub mod inflight;
pub mod pacing;
mod provider_queues;
pub mod quarantine;
mod records;
pub mod retention;
pub mod segments;
mod sweeps;

pub use sweeps::watch_storage;
pub mod webhooks;
pub mod wipes;
pub mod workers;
pub mod workflows;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::clock;
use crate::config::Config;
use crate::db::{DbError, jobs};
use crate::state::AppState;

pub use crate::db::jobs::NewJob;
pub use handlers::{JobContext, JobError, JobOutcome, JobResult, Registry, backoff_ms};
pub use handles::{JobQueue, SchedulerStatus};
use workers::next_look;

/// Takes back at once the jobs and emails a previous process leased and did not finish. Only
/// for a process that holds the database's lock ([`crate::lock`]): with it, any live lease was
/// left by a process that is gone.
pub fn take_over(state: &AppState) -> Result<(), DbError> {
    let now = clock::now_ms();
    let previous = state.inflight.take_previous()?;
    let (jobs, emails, executions, webhooks, quarantined) =
        crate::db::write_tx(&mut *state.db.conn()?, |tx| {
            let quarantined = quarantine::count_interrupted(tx, &previous, now)?;
            // A copy the previous process was making is not a backup.
            crate::db::backups::abandon_running(tx, now)?;
            Ok::<_, DbError>((
                jobs::take_back_leases(tx, now)?,
                crate::db::emails::take_back_leases(tx, now)?,
                crate::db::executions::take_back_leases(tx, now)?,
                crate::db::webhooks::take_back_leases(tx, now)?,
                quarantined,
            ))
        })?;
    for (kind, id) in quarantined {
        tracing::error!(
            ?kind,
            id,
            "stopped the process twice in a row: failed for good, it will not be tried again"
        );
    }
    if !previous.open.is_empty() {
        tracing::warn!(
            items = previous.open.len(),
            "the previous process stopped while working on these items"
        );
    }
    if jobs + emails + executions + webhooks > 0 {
        tracing::info!(
            jobs,
            emails,
            executions,
            webhooks,
            "took back the work an earlier process left leased; it resumes now"
        );
    }
    Ok(())
}

/// The product's job kinds.
pub fn registry(config: &Config) -> Registry {
    let mut registry = Registry::new();
    sweeps::register(&mut registry, config);
    contact_jobs::register(&mut registry);
    domains::register(&mut registry, config);
    events::register(&mut registry);
    segments::register(&mut registry, config);
    campaigns::register(&mut registry);
    wipes::register(&mut registry);
    retention::register(&mut registry, config);
    backups::register(&mut registry, config);
    erasure::register(&mut registry);
    exports::register(&mut registry);
    registry
}

/// A running scheduler and delivery worker.
pub struct SchedulerHandle {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl SchedulerHandle {
    /// Stops claiming, lets running jobs and sends finish within the grace period, hands back
    /// the rest, and returns.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            if let Err(e) = task.await {
                tracing::error!("scheduler task ended badly: {e}");
            }
        }
    }
}

/// Starts the job supervisor, the delivery worker and the memory trimming on the current
/// runtime.
pub fn start(state: AppState, registry: Registry) -> SchedulerHandle {
    let (stop, stopped) = watch::channel(false);
    let delivery = delivery::start(state.clone(), stopped.clone());
    let workflows = workflows::start(state.clone(), stopped.clone());
    let webhooks = webhooks::start(state.clone(), stopped.clone());
    let trimming = tokio::spawn(crate::memory::keep_trimming(state.db.clone(), stopped.clone()));
    let supervisor = tokio::spawn(Supervisor::new(state, registry).run(stopped));
    SchedulerHandle { stop, tasks: vec![supervisor, delivery, workflows, webhooks, trimming] }
}

struct Running {
    job_id: i64,
    project: crate::db::fair::Owner,
    kind: String,
    lease: String,
    attempt: u32,
    max_attempts: u32,
}

struct Supervisor {
    state: AppState,
    registry: Arc<Registry>,
    running: JoinSet<JobResult>,
    by_task: HashMap<tokio::task::Id, Running>,
    workers: usize,
    /// Jobs run in turns across projects, none with more than half the workers (issue 29).
    turns: crate::db::fair::Turns,
    lease: Duration,
}

impl Supervisor {
    fn new(state: AppState, registry: Registry) -> Self {
        let config = &state.config.scheduler;
        Supervisor {
            workers: config.workers as usize,
            turns: crate::db::fair::Turns::new(config.workers as usize / 2),
            lease: Duration::from_secs(config.lease_secs.into()),
            state,
            registry: Arc::new(registry),
            running: JoinSet::new(),
            by_task: HashMap::new(),
        }
    }

    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        self.state.scheduler.set_running(true);
        if let Err(e) = self.ensure_periodic().await {
            tracing::error!("could not set up periodic jobs: {e}");
        }
        let max_idle = Duration::from_secs(self.state.config.scheduler.max_idle_secs.into());
        let mut next_renewal = Instant::now() + self.lease / 3;
        while !*stopped.borrow() {
            let free = self.workers.saturating_sub(self.running.len());
            let mut wake_at = Instant::now() + max_idle;
            if free > 0 {
                match self.claim(free).await {
                    // Every free slot was filled: the next look comes when a job finishes.
                    Ok(n) if n == free => {}
                    Ok(_) => match self.next_due().await {
                        Ok(Some(due)) => wake_at = wake_at.min(next_look(due)),
                        Ok(None) => {}
                        Err(e) => tracing::warn!("scheduler could not read the next due time: {e}"),
                    },
                    Err(e) => {
                        tracing::warn!("scheduler could not claim jobs: {e}");
                        wake_at = Instant::now() + Duration::from_secs(1);
                    }
                }
            }
            if !self.running.is_empty() {
                if Instant::now() >= next_renewal {
                    self.renew_leases().await;
                    next_renewal = Instant::now() + self.lease / 3;
                }
                wake_at = wake_at.min(next_renewal);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake_at) => {}
                _ = self.state.jobs.jobs().notified() => {}
                Some(joined) = self.running.join_next_with_id(), if !self.running.is_empty() => {
                    self.complete(joined).await;
                }
                _ = stopped.changed() => {}
            }
        }
        self.drain().await;
        self.state.scheduler.set_running(false);
    }

    async fn ensure_periodic(&self) -> Result<(), DbError> {
        let periodic: Vec<(String, i64)> = self
            .registry
            .entries
            .iter()
            .filter_map(|(kind, e)| e.every.map(|every| (kind.clone(), every.as_millis() as i64)))
            .collect();
        self.state
            .db
            .write(move |tx| {
                let now = clock::now_ms();
                for (kind, every) in &periodic {
                    jobs::ensure_periodic(tx, kind, *every, now)?;
                }
                Ok::<_, DbError>(())
            })
            .await
    }

    async fn claim(&mut self, free: usize) -> Result<usize, DbError> {
        let lease_ms = self.lease.as_millis() as i64;
        self.turns.hold(self.by_task.values().map(|r| (&r.project, 1)));
        let mut claiming = self.turns.clone();
        let (claimed, claiming) = self
            .state
            .db
            .write(move |tx| {
                let claimed = jobs::claim(tx, clock::now_ms(), free, lease_ms, &mut claiming)?;
                Ok::<_, DbError>((claimed, claiming))
            })
            .await?;
        self.turns = claiming;
        let count = claimed.len();
        for job in claimed {
            let Some(entry) = self.registry.entries.get(&job.kind) else {
                let error = format!("no handler for job kind {:?} in this version", job.kind);
                self.record(
                    &job.kind,
                    job.id,
                    job.lease.clone(),
                    job.attempt,
                    job.max_attempts,
                    Err(JobError::Retry(error)),
                )
                .await;
                continue;
            };
            let ctx = JobContext { state: self.state.clone(), job: job.clone() };
            let run = (entry.handler)(ctx);
            let timeout = entry.timeout;
            let started = self.state.inflight.start(inflight::Kind::Job, &job.id.to_string());
            let handle = self.running.spawn(async move {
                let _started = started;
                tokio::time::timeout(timeout, run).await.unwrap_or_else(|_| {
                    Err(JobError::Retry(format!("timed out after {} s", timeout.as_secs())))
                })
            });
            tracing::debug!(job = job.id, kind = job.kind, attempt = job.attempt, "job started");
            let running = Running {
                job_id: job.id,
                project: job.project_id.clone(),
                kind: job.kind,
                lease: job.lease,
                attempt: job.attempt,
                max_attempts: job.max_attempts,
            };
            self.by_task.insert(handle.id(), running);
        }
        Ok(count)
    }

    async fn next_due(&self) -> Result<Option<i64>, DbError> {
        self.state.db.run(|conn| jobs::next_due(conn)).await
    }

    async fn renew_leases(&self) {
        let leases: Vec<String> = self.by_task.values().map(|r| r.lease.clone()).collect();
        let until = clock::now_ms() + self.lease.as_millis() as i64;
        let renewed = self.state.db.write(move |tx| jobs::renew(tx, &leases, until)).await;
        if let Err(e) = renewed {
            tracing::warn!("could not renew job leases: {e}");
        }
    }

    async fn complete(&mut self, joined: Result<(tokio::task::Id, JobResult), tokio::task::JoinError>) {
        let (id, result) = match joined {
            Ok((id, result)) => (id, result),
            Err(e) => {
                let message =
                    if e.is_panic() { "the job's handler panicked" } else { "the job was cancelled" };
                (e.id(), Err(JobError::Retry(message.into())))
            }
        };
        let Some(r) = self.by_task.remove(&id) else { return };
        self.record(&r.kind, r.job_id, r.lease, r.attempt, r.max_attempts, result).await;
    }

    /// Writes the outcome of one run, guarded by its lease.
    async fn record(
        &self,
        kind: &str,
        job_id: i64,
        lease: String,
        attempt: u32,
        max_attempts: u32,
        result: JobResult,
    ) {
        let every = self.registry.entries.get(kind).and_then(|e| e.every);
        let base = Duration::from_secs(self.state.config.scheduler.retry_base_secs.into());
        let kind_owned = kind.to_string();
        let written = self
            .state
            .db
            .write(move |tx| {
                let now = clock::now_ms();
                let next_period = every.map(|e| now + e.as_millis() as i64);
                let applied = match (&result, next_period) {
                    (Ok(JobOutcome::Done), Some(next)) => jobs::reschedule(tx, job_id, &lease, next, now)?,
                    (Ok(JobOutcome::Done), None) => jobs::finish(tx, job_id, &lease, now)?,
                    (Ok(JobOutcome::RunAgainAt(at)), _) => jobs::reschedule(tx, job_id, &lease, *at, now)?,
                    (Err(JobError::Retry(e)), _) if attempt < max_attempts => {
                        jobs::retry(tx, job_id, &lease, e, now + backoff_ms(base, attempt), now)?
                    }
                    (Err(JobError::Retry(e) | JobError::Permanent(e)), Some(next)) => {
                        tracing::error!(job = job_id, kind = kind_owned, "periodic job failed: {e}");
                        jobs::reschedule(tx, job_id, &lease, next, now)?
                    }
                    (Err(JobError::Retry(e) | JobError::Permanent(e)), None) => {
                        jobs::fail(tx, job_id, &lease, e, now)?
                    }
                };
                Ok::<_, DbError>(applied)
            })
            .await;
        match written {
            Ok(true) => tracing::debug!(job = job_id, kind, "job recorded"),
            Ok(false) => {
                tracing::warn!(job = job_id, kind, "job's lease was lost before it finished; outcome dropped")
            }
            Err(e) => tracing::error!(job = job_id, kind, "could not record the job's outcome: {e}"),
        }
    }

    /// Waits up to the grace period for running jobs, then stops the rest and hands them back.
    async fn drain(&mut self) {
        let grace = Duration::from_secs(self.state.config.server.shutdown_grace_secs.into());
        let deadline = Instant::now() + grace;
        while !self.running.is_empty() {
            tokio::select! {
                Some(joined) = self.running.join_next_with_id() => self.complete(joined).await,
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        self.running.abort_all();
        while let Some(joined) = self.running.join_next_with_id().await {
            // A job that finished just before it was aborted is recorded like any other; only
            // the ones actually cancelled stay in `by_task` and are handed back below.
            if !matches!(&joined, Err(e) if e.is_cancelled()) {
                self.complete(joined).await;
            }
        }
        let interrupted: Vec<(i64, String)> =
            self.by_task.drain().map(|(_, r)| (r.job_id, r.lease)).collect();
        if interrupted.is_empty() {
            return;
        }
        let count = interrupted.len();
        let released = self
            .state
            .db
            .write(move |tx| {
                let now = clock::now_ms();
                for (id, lease) in &interrupted {
                    jobs::release(tx, *id, lease, now)?;
                }
                Ok::<_, DbError>(())
            })
            .await;
        match released {
            Ok(()) => tracing::info!(count, "handed back jobs still running at shutdown"),
            Err(e) => {
                tracing::error!("could not hand back running jobs; their leases will expire instead: {e}")
            }
        }
    }
}

/// Adds a job in its own transaction (the scheduler is woken once it commits); for callers with
/// no transaction of their own. Returns the job id, or `None` when a live job has the same
/// dedupe key.
pub async fn enqueue(state: &AppState, job: NewJob) -> Result<Option<i64>, DbError> {
    state.db.write(move |tx| jobs::enqueue(tx, &job)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let base = Duration::from_secs(10);
        let first = backoff_ms(base, 1);
        assert!((10_000..=11_000).contains(&first), "{first}");
        let third = backoff_ms(base, 3);
        assert!((40_000..=44_000).contains(&third), "{third}");
        let huge = backoff_ms(base, 40);
        assert!(huge <= 6 * 3600 * 1000 * 11 / 10, "{huge}");
    }
}
