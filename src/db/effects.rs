//! After-commit effects (design.md, "Where the house goes next", item 2): a write that adds work
//! for a background worker says so with [`wake`] from inside its transaction, and the writer
//! wakes that worker once the transaction has committed, never before (a worker woken early
//! would look, find nothing yet, and sleep past the work).
//!
//! The query functions that add work call [`wake`] themselves (`jobs::enqueue`, the email
//! inserts, workflow starts), so an event emitted deep inside an import or a campaign batch
//! starts its workflows without its caller knowing that workflows exist.
//!
//! The request is kept per thread: every write of the server runs on the writer's one thread,
//! which takes the requests after each commit. A write that fails may leave its request behind;
//! the worker it wakes then finds nothing and sleeps again, which costs one look.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// A background worker a write can wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The job scheduler: a job was added or made due now.
    Jobs = 1,
    /// The delivery worker: emails were queued.
    Delivery = 2,
    /// The workflow runner: an execution was started or resumed.
    Workflows = 4,
    /// The API's cache of keys: what a key resolves to changed (a project was suspended).
    Keys = 8,
    /// The outbound webhook worker: deliveries were queued.
    Webhooks = 16,
}

thread_local! {
    static ASKED: Cell<u8> = const { Cell::new(0) };
}

/// Asks that `worker` be woken when the current transaction commits.
pub fn wake(worker: Wake) {
    ASKED.with(|asked| asked.set(asked.get() | worker as u8));
}

/// Takes (and forgets) what this thread's writes asked for.
pub(crate) fn take() -> u8 {
    ASKED.with(|asked| asked.replace(0))
}

/// The workers' wake-up handles, shared by the writer and the workers.
#[derive(Clone, Default)]
pub struct Wakers {
    pub jobs: Arc<Notify>,
    pub delivery: Arc<Notify>,
    pub workflows: Arc<Notify>,
    pub webhooks: Arc<Notify>,
    /// Raised whenever keys must be looked up again ([`crate::core::limits::key_cache`] watches it).
    pub keys: Arc<AtomicU64>,
}

impl Wakers {
    /// Wakes the workers named in `asked` (bits of [`Wake`]).
    pub fn fire(&self, asked: u8) {
        let handles = [
            (Wake::Jobs, &self.jobs),
            (Wake::Delivery, &self.delivery),
            (Wake::Workflows, &self.workflows),
            (Wake::Webhooks, &self.webhooks),
        ];
        for (worker, notify) in handles {
            if asked & worker as u8 != 0 {
                notify.notify_one();
            }
        }
        if asked & Wake::Keys as u8 != 0 {
            self.keys.fetch_add(1, Ordering::Release);
        }
    }
}
