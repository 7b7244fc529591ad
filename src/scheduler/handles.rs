//! What the application state holds of the scheduler: the wake-up handles of its workers and
//! whether it runs.

use std::sync::atomic::{AtomicU8, Ordering};

use tokio::sync::Notify;

use crate::db::effects::Wakers;

/// The handle on the background workers: their wake-up handles, shared with the database's
/// writer, which wakes them after the commits that asked for it ([`crate::db::effects`]).
#[derive(Clone, Default)]
pub struct JobQueue {
    wakers: Wakers,
}

impl JobQueue {
    pub fn new(wakers: Wakers) -> Self {
        JobQueue { wakers }
    }

    pub(crate) fn jobs(&self) -> &Notify {
        &self.wakers.jobs
    }

    pub(crate) fn deliveries(&self) -> &Notify {
        &self.wakers.delivery
    }

    pub(crate) fn workflows(&self) -> &Notify {
        &self.wakers.workflows
    }

    pub(crate) fn webhooks(&self) -> &Notify {
        &self.wakers.webhooks
    }
}

/// Whether the scheduler runs, for `/health`.
#[derive(Default)]
pub struct SchedulerStatus(AtomicU8);

impl SchedulerStatus {
    const STOPPED: u8 = 0;
    const RUNNING: u8 = 1;

    pub fn set_running(&self, running: bool) {
        self.0.store(if running { Self::RUNNING } else { Self::STOPPED }, Ordering::Relaxed);
    }

    pub fn label(&self) -> &'static str {
        match self.0.load(Ordering::Relaxed) {
            Self::RUNNING => "running",
            _ => "stopped",
        }
    }
}
