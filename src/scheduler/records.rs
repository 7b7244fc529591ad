//! Delivery outcomes, recorded a batch at a time.
//!
//! Each send used to hand the writer a write of its own: a closure queued, the writer woken, a
//! savepoint, and an answer woken back, for every message. Sends that end while a batch is being
//! written now wait together and go in the next write, each in a savepoint of its own (so one
//! that fails is undone alone and the others stay). A send still waits until its outcome is
//! committed, so the email stays in the worker's hands, and out of its claims, until then.

use tokio::sync::{mpsc, oneshot};

use crate::clock;
use crate::core::delivery::{self, Outcome};
use crate::db::emails::Email;
use crate::db::{self, DbError};
use crate::state::AppState;

/// Most outcomes in one write.
const MAX_BATCH: usize = 256;

/// An outcome to record, and a send counted against its sender domain's warm-up day.
struct Record {
    email: Email,
    outcome: Outcome,
    warmup: Option<(String, String)>,
    recorded: oneshot::Sender<Result<(), String>>,
}

/// The queue in front of the task that records outcomes. Unbounded, yet never longer than the
/// sends the worker holds at once: each send queues one outcome and waits for its answer.
pub struct Records {
    queue: mpsc::UnboundedSender<Record>,
}

impl Records {
    /// Starts the recording task; it ends when the handle is dropped.
    pub fn start(state: AppState) -> Records {
        let (queue, mut waiting) = mpsc::unbounded_channel::<Record>();
        tokio::spawn(async move {
            let base = u64::from(state.config.scheduler.retry_base_secs);
            let mut batch = Vec::with_capacity(MAX_BATCH);
            while waiting.recv_many(&mut batch, MAX_BATCH).await > 0 {
                let (items, replies): (Vec<_>, Vec<_>) =
                    batch.drain(..).map(|r| ((r.email, r.outcome, r.warmup), r.recorded)).unzip();
                let written = state
                    .db
                    .write(move |tx| {
                        let now = clock::now_ms();
                        let results = items
                            .into_iter()
                            .map(|(email, outcome, warmup)| {
                                db::savepoint(tx, || record(tx, &email, outcome, warmup, base, now))
                                    .and_then(|inner| inner)
                                    .map_err(|e| e.to_string())
                            })
                            .collect::<Vec<_>>();
                        Ok::<_, DbError>(results)
                    })
                    .await;
                match written {
                    Ok(results) => {
                        for (reply, result) in replies.into_iter().zip(results) {
                            let _ = reply.send(result);
                        }
                    }
                    Err(e) => {
                        let why = e.to_string();
                        for reply in replies {
                            let _ = reply.send(Err(why.clone()));
                        }
                    }
                }
            }
        });
        Records { queue }
    }

    /// Records `outcome` of `email` (and a send counted against a warm-up day); answers once it
    /// is committed.
    pub async fn record(
        &self,
        email: Email,
        outcome: Outcome,
        warmup: Option<(String, String)>,
    ) -> Result<(), String> {
        let (recorded, answer) = oneshot::channel();
        self.queue
            .send(Record { email, outcome, warmup, recorded })
            .map_err(|_| "the recording task has stopped".to_string())?;
        answer.await.unwrap_or_else(|_| Err("the recording task has stopped".to_string()))
    }
}

fn record(
    tx: &db::Tx,
    email: &Email,
    outcome: Outcome,
    warmup: Option<(String, String)>,
    base: u64,
    now: i64,
) -> Result<(), DbError> {
    delivery::record(tx, email, outcome, base, now)?;
    if let Some((domain, day)) = warmup {
        crate::db::warmups::count(tx, &domain, &day)?;
    }
    Ok(())
}
