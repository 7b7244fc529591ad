//! The workflow runner: takes due executions with a lease and moves each through its steps
//! ([`crate::core::workflows::engine`]), one write per stretch of steps, making the WEBHOOK
//! steps' calls between writes.
//!
//! - Due means RUNNING (started or resumed: due at once) or WAITING whose DELAY or timeout has
//!   ended. Waiting executions are rows with a due time, so a million of them cost disk, not
//!   memory; the runner sleeps until the soonest is due, or until a commit that started or
//!   resumed one wakes it ([`crate::db::effects`]).
//! - Due executions are claimed and moved on in batches, one write for up to [`BATCH`] of them
//!   (each in a savepoint of its own); the webhook calls they reach are made outside any write,
//!   at most [`IN_FLIGHT`] at once, so slow webhooks (10 s each at most) hold up neither the
//!   rest nor the writer.
//! - On shutdown in-flight executions get the grace period; those still running are stopped
//!   and their leases ended, so the next runner takes them at once (a process that dies instead
//!   leaves them to [`super::take_over`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock;
use crate::db::Tx;

use crate::core::workflows::engine::{self, Advanced, WebhookCall};
use crate::core::workflows::{WEBHOOK_TIMEOUT_SECS, webhook};
use crate::db::{DbError, executions};
use crate::state::AppState;

use super::fair::FairQueue;
use super::inflight::{Journal, Kind};
use super::workers::{InHand, next_look};
use crate::db::fair::{Owner, Turns};

/// Most webhook calls in flight at once.
pub const IN_FLIGHT: usize = 64;
/// Most webhook calls of one project in flight at once: a project whose endpoints never answer
/// holds these and no more (issue 29).
const CALLS_PER_PROJECT: usize = 8;
/// Most executions one project may have in hand (calling, or waiting for a call slot): past
/// them its due executions wait in the database, and other projects' are claimed.
const HELD_PER_PROJECT: usize = 4 * CALLS_PER_PROJECT;
/// Most executions in hand at once.
const HELD: usize = 4 * IN_FLIGHT;
/// Most executions claimed and moved on in one write.
const BATCH: usize = 128;
/// How long an execution stays leased without a word from its runner: the longest webhook call
/// and a good margin (an execution waits for a call slot at most while its project's other
/// calls in hand are made, [`HELD_PER_PROJECT`] / [`CALLS_PER_PROJECT`] calls' time, and the
/// leases of those waiting are renewed).
const LEASE_MS: i64 = 6 * WEBHOOK_TIMEOUT_SECS as i64 * 1000;

/// Starts the runner on the current runtime; it ends once `stopped` turns true.
pub fn start(state: AppState, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(run(state, stopped))
}

async fn run(state: AppState, mut stopped: watch::Receiver<bool>) {
    let max_idle = Duration::from_secs(state.config.scheduler.max_idle_secs.into());
    // Webhook calls under way, and the executions they belong to with those waiting for a slot,
    // started in turns across projects. Calls waiting do not stop the runner claiming: other
    // projects' executions, and this project's DELAY and SEND_EMAIL steps, go on.
    let mut hand = InHand::default();
    let mut queued: FairQueue<WebhookCall> = FairQueue::new(CALLS_PER_PROJECT);
    let mut turns = Turns::new(HELD_PER_PROJECT);
    let renew_every = Duration::from_millis(LEASE_MS as u64 / 3);
    let mut next_renewal = Instant::now() + renew_every;
    while !*stopped.borrow() {
        let mut wake_at = Instant::now() + max_idle;
        for owner in hand.reap() {
            queued.finished(&owner);
        }
        while hand.running.len() < IN_FLIGHT
            && let Some((_, call)) = queued.start()
        {
            hand.spawn(call.execution.clone(), call_webhook(state.clone(), call));
        }
        if !queued.is_empty() {
            if Instant::now() >= next_renewal {
                renew(&state, queued.waiting().map(|call| call.execution.clone()).collect()).await;
                next_renewal = Instant::now() + renew_every;
            }
            wake_at = wake_at.min(next_renewal);
        }
        let room = HELD.saturating_sub(queued.len() + hand.running.len()).min(BATCH);
        if room > 0 {
            hand.held(&mut turns);
            let mut claiming = turns.clone();
            let journal = state.inflight.clone();
            let batch = state
                .db
                .write(move |tx| {
                    let moved = step_batch(tx, room, &mut claiming, &journal)?;
                    Ok::<_, DbError>((moved, claiming))
                })
                .await;
            match batch {
                Ok(((claimed, calls), claiming)) => {
                    turns = claiming;
                    for (owner, call) in calls {
                        // Never twice in hand, should a lease have run out all the same.
                        if hand.insert(call.execution.clone(), owner.clone()) {
                            queued.push(owner, call);
                        }
                    }
                    if claimed == room {
                        wake_at = Instant::now();
                    } else if let Ok(Some(due)) =
                        state.db.run(|conn| executions::next_due(conn, clock::now_ms())).await
                    {
                        wake_at = wake_at.min(next_look(due));
                    }
                }
                Err(e) => {
                    tracing::warn!("could not run workflow executions: {e}");
                    wake_at = Instant::now() + Duration::from_secs(1);
                }
            }
        }
        // More due at once, or calls that can start now: no sleep.
        if wake_at <= Instant::now() || (hand.running.len() < IN_FLIGHT && queued.can_start()) {
            continue;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at) => {}
            _ = state.jobs.workflows().notified() => {}
            Some(done) = hand.running.join_next(), if !hand.running.is_empty() => {
                if let Some(owner) = hand.finished(done) {
                    queued.finished(&owner);
                }
            }
            _ = stopped.changed() => {}
        }
    }
    let grace = Duration::from_secs(state.config.server.shutdown_grace_secs.into());
    let unfinished = hand.stop(grace).await;
    // Stopped mid-way: free them for the next runner rather than when the lease runs out (a
    // webhook call cut off is made again, with its key).
    if !unfinished.is_empty()
        && let Err(e) = state.db.write(move |tx| executions::release(tx, &unfinished)).await
    {
        tracing::error!("could not hand back workflow executions; their leases will run out: {e}");
    }
}

/// Extends the leases of executions waiting for a call slot.
async fn renew(state: &AppState, waiting: Vec<String>) {
    let until = clock::now_ms() + LEASE_MS;
    let renewed = state.db.write(move |tx| executions::renew_leases(tx, &waiting, until)).await;
    if let Err(e) = renewed {
        tracing::warn!("could not renew the leases of workflow executions waiting for a call: {e}");
    }
}

/// Claims up to `limit` due executions and moves each as far as it goes without a call, each
/// in a savepoint of its own: one that fails is rolled back alone and stays leased, to be tried
/// again when its lease runs out. Returns how many were claimed and the calls to make, each
/// with its project.
fn step_batch(
    tx: &Tx,
    limit: usize,
    turns: &mut Turns,
    journal: &Arc<Journal>,
) -> crate::db::Result<(usize, Vec<(Owner, WebhookCall)>)> {
    let now = clock::now_ms();
    let claimed = executions::claim(tx, now, limit, LEASE_MS, turns)?;
    let mut calls = Vec::new();
    for (owner, id) in &claimed {
        let _started = journal.start(Kind::Execution, id);
        match crate::db::savepoint(tx, || engine::advance(tx, id, now, now + LEASE_MS))? {
            Ok(Advanced::Call(call)) => calls.push((owner.clone(), *call)),
            Ok(_) => {}
            Err(e) => tracing::warn!(execution = id, "could not run a workflow execution: {e}"),
        }
    }
    Ok((claimed.len(), calls))
}

/// Makes a webhook call and records its answer, then the calls the execution reaches after it;
/// returns the execution's id.
async fn call_webhook(state: AppState, call: WebhookCall) -> String {
    let id = call.execution.clone();
    let _started = state.inflight.start(Kind::Execution, &id);
    let mut next = Advanced::Call(Box::new(call));
    while let Advanced::Call(call) = next {
        // Rendering takes up to the render budget: off the executor, like every render.
        let rendering = call.clone();
        let request = tokio::task::spawn_blocking(move || webhook::request(&rendering))
            .await
            .unwrap_or_else(|e| Err(format!("rendering the request failed: {e}")));
        let answer = match request {
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
                // The lease runs out and the call is made again, with its key.
                tracing::warn!(execution = id, "could not record a webhook's answer: {e}");
                return id;
            }
        };
    }
    id
}
