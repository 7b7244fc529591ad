//! The workflow runner: takes due executions with a lease and moves each through its steps
//! ([`crate::core::workflows::engine`]), one write per stretch of steps, making the WEBHOOK
//! steps' calls between writes.
//!
//! - Due means RUNNING (started or resumed: due at once) or WAITING whose DELAY or timeout has
//!   ended. Waiting executions are rows with a due time, so a million of them cost disk, not
//!   memory; the runner sleeps until the soonest is due, or until a commit that started or
//!   resumed one wakes it ([`crate::db::effects`]).
//! - At most [`IN_FLIGHT`] executions are in hand at once, so slow webhooks (10 s each at most)
//!   hold up neither the rest nor the writer.
//! - On shutdown in-flight executions get the grace period; those still running are dropped,
//!   and their leases are taken back when the next process starts ([`super::take_over`]).

use std::collections::HashSet;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::clock;
use crate::core::workflows::engine::{self, Advanced};
use crate::core::workflows::{WEBHOOK_TIMEOUT_SECS, webhook};
use crate::db::{DbError, executions};
use crate::state::AppState;

use super::instant_at;

/// Most executions in hand at once.
pub const IN_FLIGHT: usize = 64;
/// How long an execution stays leased without a word from its runner: the longest webhook call
/// and a good margin.
const LEASE_MS: i64 = 6 * WEBHOOK_TIMEOUT_SECS as i64 * 1000;

/// Starts the runner on the current runtime; it ends once `stopped` turns true.
pub fn start(state: AppState, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(run(state, stopped))
}

async fn run(state: AppState, mut stopped: watch::Receiver<bool>) {
    let max_idle = Duration::from_secs(state.config.scheduler.max_idle_secs.into());
    let mut running: JoinSet<String> = JoinSet::new();
    let mut in_hand: HashSet<String> = HashSet::new();
    while !*stopped.borrow() {
        let mut wake_at = Instant::now() + max_idle;
        let free = IN_FLIGHT - running.len();
        if free > 0 {
            let claimed = state
                .db
                .write(move |tx| Ok::<_, DbError>(executions::claim(tx, clock::now_ms(), free, LEASE_MS)?))
                .await;
            match claimed {
                Ok(ids) => {
                    let full = ids.len() == free;
                    for id in ids {
                        // Never twice in hand, should a lease have run out all the same.
                        if in_hand.insert(id.clone()) {
                            running.spawn(work(state.clone(), id));
                        }
                    }
                    if full {
                        wake_at = Instant::now();
                    } else if let Ok(Some(due)) = state
                        .db
                        .run(|conn| Ok::<_, DbError>(executions::next_due(conn, clock::now_ms())?))
                        .await
                    {
                        wake_at = wake_at.min(instant_at(due));
                    }
                }
                Err(e) => {
                    tracing::warn!("could not claim workflow executions: {e}");
                    wake_at = Instant::now() + Duration::from_secs(1);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at) => {}
            _ = state.jobs.workflows().notified() => {}
            Some(done) = running.join_next(), if !running.is_empty() => {
                if let Ok(id) = done {
                    in_hand.remove(&id);
                }
            }
            _ = stopped.changed() => {}
        }
    }
    let grace = Duration::from_secs(state.config.server.shutdown_grace_secs.into());
    let _ = tokio::time::timeout(grace, async { while running.join_next().await.is_some() {} }).await;
    running.abort_all();
}

/// Moves one execution as far as it goes now; returns its id.
async fn work(state: AppState, id: String) -> String {
    let first = id.clone();
    let advanced = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            engine::advance(tx, &first, now, now + LEASE_MS)
        })
        .await;
    let mut next = match advanced {
        Ok(next) => next,
        Err(e) => {
            // The lease runs out and the execution is taken again.
            tracing::warn!(execution = id, "could not run a workflow execution: {e}");
            return id;
        }
    };
    while let Advanced::Call(call) = next {
        let answer = match webhook::request(&call) {
            Ok(request) => webhook::outcome(state.http.call(&request).await),
            Err(why) => Err(why),
        };
        let finished = state
            .db
            .write(move |tx| {
                let now = clock::now_ms();
                engine::finish_webhook(tx, &call, answer, now, now + LEASE_MS)
            })
            .await;
        next = match finished {
            Ok(next) => next,
            Err(e) => {
                tracing::warn!(execution = id, "could not record a webhook's answer: {e}");
                return id;
            }
        };
    }
    id
}
