//! What a job handler is: its context, how its run ends, and the registry of job kinds.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::db::{DbError, jobs};
use crate::state::AppState;

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

/// A use case's failure: tried again when it may pass ([`crate::core::Error::is_retryable`]),
/// given up at once when it never will.
impl From<crate::core::Error> for JobError {
    fn from(e: crate::core::Error) -> Self {
        if e.is_retryable() { JobError::Retry(e.to_string()) } else { JobError::Permanent(e.to_string()) }
    }
}

pub type JobResult = Result<JobOutcome, JobError>;
pub(super) type JobFuture = Pin<Box<dyn Future<Output = JobResult> + Send>>;
pub(super) type Handler = Arc<dyn Fn(JobContext) -> JobFuture + Send + Sync>;

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

/// A registered kind: its handler, its period when periodic, and its time limit.
pub(super) struct Entry {
    pub(super) handler: Handler,
    pub(super) every: Option<Duration>,
    pub(super) timeout: Duration,
}

/// The job kinds a scheduler knows how to run.
#[derive(Default)]
pub struct Registry {
    pub(super) entries: HashMap<String, Entry>,
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

/// Retry delay after failed attempt number `attempt`: base, 2×base, 4×base, … capped at 6 hours,
/// with up to 10 % jitter so retries of many jobs spread out.
pub fn backoff_ms(base: Duration, attempt: u32) -> i64 {
    use rand::Rng;
    let exp = base.as_millis().saturating_mul(1u128 << attempt.saturating_sub(1).min(20));
    let capped = exp.min(6 * 3600 * 1000) as i64;
    capped + rand::thread_rng().gen_range(0..=capped / 10)
}
