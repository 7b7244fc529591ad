//! What the workers that lease rows of their own (emails, workflow executions, webhook
//! deliveries) share: the rows in hand and when to look again.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::clock;

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
