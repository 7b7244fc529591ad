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

pub mod campaigns;
pub mod contact_jobs;
pub mod delivery;
pub mod domains;
pub mod events;
pub mod fair;
pub mod handles;
pub mod inflight;
pub mod quarantine;
pub mod segments;
mod sweeps;
pub mod webhooks;
pub mod wipes;
pub mod workflows;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
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
pub use handles::{JobQueue, SchedulerStatus};

/// How a handler's run ended well.
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    /// Finished; the job is kept as `done` until the retention sweep.
    Done,
    /// Run again at this time (ms since the epoch), for work done in steps.
    RunAgainAt(i64),
}

/// How a handler's run ended badly.
#[derive(Debug, Clone, PartialEq)]
pub enum JobError {
    /// Try again later, unless the attempts are used up.
    Retry(String),
    /// Do not try again.
    Permanent(String),
}

impl From<DbError> for JobError {
    fn from(e: DbError) -> Self {
        JobError::Retry(e.to_string())
    }
}

impl From<rusqlite::Error> for JobError {
    fn from(e: rusqlite::Error) -> Self {
        JobError::Retry(e.to_string())
    }
}

/// A use case's failure: tried again when it may pass ([`crate::core::Error::is_retryable`]),
/// given up at once when it never will.
impl From<crate::core::Error> for JobError {
    fn from(e: crate::core::Error) -> Self {
        if e.is_retryable() { JobError::Retry(e.to_string()) } else { JobError::Permanent(e.to_string()) }
    }
}

pub type JobResult = Result<JobOutcome, JobError>;
type JobFuture = Pin<Box<dyn Future<Output = JobResult> + Send>>;
type Handler = Arc<dyn Fn(JobContext) -> JobFuture + Send + Sync>;

/// What a handler is given: the application and the claimed job.
pub struct JobContext {
    pub state: AppState,
    pub job: jobs::Claimed,
}

impl JobContext {
    /// The payload parsed as `T`; a payload that does not parse fails the job for good.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, JobError> {
        serde_json::from_str(&self.job.payload).map_err(|e| JobError::Permanent(format!("bad payload: {e}")))
    }
}

struct Entry {
    handler: Handler,
    every: Option<Duration>,
    timeout: Duration,
}

/// The job kinds a scheduler knows how to run.
#[derive(Default)]
pub struct Registry {
    entries: HashMap<String, Entry>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the handler of `kind`; a run longer than `timeout` is stopped and retried.
    pub fn register<F, Fut>(&mut self, kind: &str, timeout: Duration, handler: F) -> &mut Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |ctx| Box::pin(handler(ctx)));
        self.entries.insert(kind.to_string(), Entry { handler, every: None, timeout });
        self
    }

    /// Registers a periodic job: one row of `kind` always exists and runs every `every`.
    pub fn periodic<F, Fut>(&mut self, kind: &str, every: Duration, handler: F) -> &mut Self
    where
        F: Fn(JobContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = JobResult> + Send + 'static,
    {
        self.register(kind, every.max(Duration::from_secs(60)), handler);
        if let Some(entry) = self.entries.get_mut(kind) {
            entry.every = Some(every);
        }
        self
    }
}

/// Takes back at once the jobs and emails a previous process leased and did not finish. Only
/// for a process that holds the database's lock ([`crate::lock`]): with it, any live lease was
/// left by a process that is gone.
pub fn take_over(state: &AppState) -> Result<(), DbError> {
    let now = clock::now_ms();
    let previous = state.inflight.take_previous()?;
    let (jobs, emails, executions, webhooks, quarantined) =
        crate::db::write_tx(&mut *state.db.conn()?, |tx| {
            let quarantined = quarantine::count_interrupted(tx, &previous, now)?;
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

/// Tasks that each work on one leased row and return its id, with the ids in hand (running, or
/// claimed and waiting their turn) and whose each is: what the workflow runner and the webhook
/// worker hold.
#[derive(Default)]
pub(crate) struct InHand {
    pub running: JoinSet<String>,
    ids: HashMap<String, crate::db::fair::Owner>,
    /// The id each task works on, for a task that panicked.
    tasks: HashMap<tokio::task::Id, String>,
    /// Ids whose task panicked: never taken again by this process.
    panicked: std::collections::HashSet<String>,
}

impl InHand {
    /// Runs `work` on `id`, which is in hand.
    pub fn spawn(&mut self, id: String, work: impl Future<Output = String> + Send + 'static) {
        let handle = self.running.spawn(work);
        self.tasks.insert(handle.id(), id);
    }

    /// Counts `id` (of `owner`'s) in hand; false if it already was.
    pub fn insert(&mut self, id: String, owner: crate::db::fair::Owner) -> bool {
        if self.panicked.contains(&id) {
            return false;
        }
        match self.ids.entry(id) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(owner);
                true
            }
        }
    }

    /// What each project holds, for the next claim's `turns`.
    pub fn held(&self, turns: &mut crate::db::fair::Turns) {
        turns.hold(self.ids.values().map(|owner| (owner, 1)));
    }

    /// Forgets the ids of the tasks that finished; whose they were.
    pub fn reap(&mut self) -> Vec<crate::db::fair::Owner> {
        let mut owners = Vec::new();
        while let Some(done) = self.running.try_join_next() {
            owners.extend(self.finished(done));
        }
        owners
    }

    /// A task ended: whose work it was. One that panicked keeps its id from being taken again
    /// by this process (the quarantine counts it at the next start), but no longer holds its
    /// project's turn.
    pub fn finished(
        &mut self,
        done: Result<String, tokio::task::JoinError>,
    ) -> Option<crate::db::fair::Owner> {
        let owner = match done {
            Ok(id) => self.ids.remove(&id),
            Err(e) => {
                let id = self.tasks.get(&e.id()).cloned()?;
                let owner = self.ids.remove(&id);
                self.panicked.insert(id);
                owner
            }
        };
        self.tasks.retain(|_, id| self.ids.contains_key(id));
        owner
    }

    /// On shutdown: gives running tasks `grace`, stops the rest, and returns the ids still in
    /// hand, whose leases the caller ends so the next process takes them at once.
    pub async fn stop(mut self, grace: Duration) -> Vec<String> {
        let _ = tokio::time::timeout(grace, async {
            while let Some(done) = self.running.join_next().await {
                if let Ok(id) = done {
                    self.ids.remove(&id);
                }
            }
        })
        .await;
        self.running.abort_all();
        // The ones cut off stay in hand, to be handed back.
        while let Some(done) = self.running.join_next().await {
            if let Ok(id) = done {
                self.ids.remove(&id);
            }
        }
        self.ids.into_keys().collect()
    }
}

/// Retry delay after failed attempt number `attempt`: base, 2×base, 4×base, … capped at 6 hours,
/// with up to 10 % jitter so retries of many jobs spread out.
pub fn backoff_ms(base: Duration, attempt: u32) -> i64 {
    use rand::Rng;
    let exp = base.as_millis().saturating_mul(1u128 << attempt.saturating_sub(1).min(20));
    let capped = exp.min(6 * 3600 * 1000) as i64;
    capped + rand::thread_rng().gen_range(0..=capped / 10)
}

/// How long a worker whose claim left due rows behind waits before it looks again: those rows
/// are of projects holding their whole share ([`crate::db::fair`]), and one of their items
/// finishing, or new work being queued, wakes it sooner.
pub(crate) const PASSED_OVER: Duration = Duration::from_millis(250);

/// When a worker whose claim was not full looks again, for the soonest row due at `at_ms` that
/// it did not hold: then, or after [`PASSED_OVER`] if that row was due already (its project's
/// turn was full).
pub(crate) fn next_look(at_ms: i64) -> Instant {
    let delta = at_ms - clock::now_ms();
    if delta <= 0 {
        Instant::now() + PASSED_OVER
    } else {
        Instant::now() + Duration::from_millis(delta as u64)
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
