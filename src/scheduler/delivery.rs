//! The delivery worker: takes queued emails, renders, builds and DKIM-signs each message, hands it
//! to the transport, and records the outcome.
//!
//! - Emails are claimed with a lease (`locked_until`), renewed while the worker holds them; one
//!   whose worker died is taken again when the lease runs out, with the same Message-ID.
//! - The outcome is committed right after the relay answers, so a message reaches the relay a
//!   second time only when the process dies between the relay's acceptance and that commit.
//! - Temporary refusals are retried with backoff, five tries in all; a permanent refusal (5xx)
//!   fails the email at once and keeps the relay's reply.
//! - A large body, attachment set or submitted message is read only when its email is sent, once
//!   its share of the body memory budget (`[limits] body_memory_bytes`) is reserved, and held
//!   until the relay has answered: a batch of large messages waits its turn instead of being
//!   held at once. An email that finds no room within a second goes back to the queue.
//! - `[smtp] max_messages_per_second` throttles each project; a relay's own cap
//!   (`[[smtp.relays]] max_messages_per_second`) is kept by the transport.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::clock;
use crate::core::delivery::{self, Composer, Context, MAX_ATTEMPTS, Outcome};
use crate::core::limits::bodies::Reserved;
use crate::core::limits::ratelimit::{self, ProjectLimiter};
use crate::db::DbError;
use crate::db::emails::{self, Email};
use crate::mail::dkim::Signers;
use crate::mail::transport::{Refusal, Transport};
use crate::state::AppState;

use super::composers::Composers;
use super::fair::FairQueue;
use super::provider_queues::{ProviderQueues, Ticket};
use super::records::Records;
use super::workers::{PASSED_OVER, next_look};
use crate::db::fair::{Owner, Turns};

const BATCH: usize = 64;
/// How long a send waits for room in the body memory budget before its email goes back to
/// the queue.
const BUDGET_WAIT: Duration = Duration::from_secs(1);
/// How often newly queued mail is claimed while much is in hand.
const NOTICED_CLAIMS: Duration = Duration::from_millis(50);

struct Worker {
    state: AppState,
    transport: Transport,
    signers: Signers,
    /// Where messages are made (rendered, MIME, signed): a thread per core.
    composers: Composers,
    throttle: Option<Arc<dyn ProjectLimiter>>,
    queues: ProviderQueues,
    /// Where outcomes are recorded, a batch to a write.
    records: Records,
}

/// Starts the delivery loop.
pub fn start(state: AppState, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let transport = Transport::from_config(&state.config.smtp);
        let per_second = state.config.smtp.max_messages_per_second;
        let throttle = (per_second > 0).then(|| ratelimit::limiter_per_second(per_second));
        let queues = ProviderQueues::default();
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let composers = match Composers::start(cores) {
            Ok(composers) => composers,
            Err(e) => {
                tracing::error!("could not start the threads that make messages; nothing is delivered: {e}");
                return;
            }
        };
        let records = Records::start(state.clone());
        let worker = Arc::new(Worker {
            state,
            transport,
            signers: Signers::default(),
            composers,
            throttle,
            queues,
            records,
        });
        worker.run(stopped).await;
    })
}

impl Worker {
    /// Emails in hand at once: enough to keep every relay connection busy while the next
    /// messages are signed.
    fn concurrency(&self) -> usize {
        let connections = match &self.transport {
            Transport::Relays(relays) => relays.capacity(),
            Transport::Capture => 4,
        };
        (connections * 2).max(4)
    }

    /// How long a claimed email stays with this worker: a connection and a send, each bounded by
    /// `[smtp] timeout_secs`, and some slack. After a crash, mail that was in flight waits this long.
    fn lease_ms(&self) -> i64 {
        (i64::from(self.state.config.smtp.timeout_secs) * 2 + 10) * 1000
    }

    async fn run(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        let mut running: JoinSet<()> = JoinSet::new();
        // The emails being sent, by task, with their project.
        let mut ids: HashMap<tokio::task::Id, (String, Owner)> = HashMap::new();
        let max_idle = Duration::from_secs(self.state.config.scheduler.max_idle_secs.into());
        let concurrency = self.concurrency();
        // Claimed emails not started yet, started in turns across projects, none with more
        // than three quarters of the sends at once, so one project's slow messages leave room
        // for the others'. Emails are claimed a batch at a time, when fewer than one round of
        // `concurrency` is in hand (or new mail was queued), not one by one as sends finish:
        // each claim is a write and a read. A project holds at most a batch.
        // Lending: alone, a project uses every slot (a send is short, so another project's
        // email waits for one send at most); the cap holds while another's could start.
        let mut pending: FairQueue<(Email, Context)> = FairQueue::lending(concurrency * 3 / 4);
        let mut turns = Turns::new(BATCH);
        // An email may wait in `pending`, then for a relay connection, and be tried on every
        // relay in turn: no fixed lease covers that, so the leases of everything in hand are
        // renewed like the job supervisor's.
        let renew_every = Duration::from_millis(self.lease_ms() as u64 / 3);
        let mut next_renewal = Instant::now() + renew_every;
        let mut queued_since_claim = false;
        let mut last_claim = Instant::now();
        while !*stopped.borrow() {
            while running.len() < concurrency
                && let Some((owner, (email, context))) = pending.start()
            {
                let worker = self.clone();
                let id = email.id.clone();
                let handle = running.spawn(async move { worker.deliver(email, context).await });
                ids.insert(handle.id(), (id, owner));
            }
            let mut wake_at = Instant::now() + max_idle;
            let in_hand = running.len() + pending.len();
            if in_hand > 0 {
                if Instant::now() >= next_renewal {
                    self.renew_leases(held_ids(&ids, &pending)).await;
                    next_renewal = Instant::now() + renew_every;
                }
                wake_at = wake_at.min(next_renewal);
            }
            // With every relay resting nothing is claimed: the queue waits for the first one back
            // rather than spending signatures and tries on mail no relay would take.
            let resting = self.transport.resting_for();
            if let Some(wait) = resting {
                wake_at = wake_at.min(Instant::now() + wait);
            }
            let room = (2 * concurrency + BATCH).saturating_sub(in_hand).min(BATCH);
            // New mail is claimed at once even with much in hand (it may be another project's),
            // but at most every NOTICED_CLAIMS: under a burst of sends, a claim at every notice
            // was a write at every send, and the backlog drained at a third of the rate.
            let noticed = queued_since_claim && last_claim.elapsed() >= NOTICED_CLAIMS;
            if queued_since_claim && !noticed {
                wake_at = wake_at.min(last_claim + NOTICED_CLAIMS);
            }
            let wants_more = (in_hand <= concurrency || noticed) && room > 0 && resting.is_none();
            if wants_more {
                queued_since_claim = false;
                last_claim = Instant::now();
                // Sends that finished are let go first. One recorded but not yet joined stays in
                // hand, and is left out of the claim: never twice in hand, and never locked by a
                // claim that would then have to drop it.
                while let Some(done) = running.try_join_next_with_id() {
                    let_go(&mut ids, &mut pending, done);
                }
                let held: Vec<String> = held_ids(&ids, &pending).cloned().collect();
                let lease = self.lease_ms();
                pending.held(&mut turns);
                let exclude = held.clone();
                let mut claiming = turns.clone();
                let claimed = self
                    .state
                    .db
                    .write(move |tx| {
                        let batch = emails::claim(tx, clock::now_ms(), room, lease, &exclude, &mut claiming)?;
                        Ok::<_, DbError>((batch, claiming))
                    })
                    .await;
                let mut full = false;
                let claimed = match claimed {
                    Ok((batch, claiming)) => {
                        turns = claiming;
                        full = batch.len() == room;
                        let claimed: Vec<String> = batch.iter().map(|email| email.id.clone()).collect();
                        let read = self.with_context(batch).await;
                        if read.is_err() {
                            // Not in hand, so no renewal would keep them and no shutdown would
                            // hand them back: free them now rather than when the lease runs out.
                            self.hand_back(claimed, clock::now_ms() + 1_000).await;
                        }
                        read
                    }
                    Err(e) => Err(e),
                };
                match claimed {
                    Ok(batch) => {
                        let started = !batch.is_empty();
                        for (email, context) in batch {
                            pending.push(Some(email.project_id.clone()), (email, context));
                        }
                        if full {
                            wake_at = Instant::now();
                        } else if turns.any_full() {
                            // A project holds all it may: its next rows are due when it finishes
                            // some, and a finished send wakes this loop. Asking the database when
                            // the next row is due costs a scan of the whole queue (the answer
                            // mixes two columns no index orders), which at every claim drained a
                            // backlog of 50,000 at a third of the rate.
                            wake_at = wake_at.min(Instant::now() + PASSED_OVER);
                        } else if let Ok(Some(due)) =
                            self.state.db.run(move |conn| emails::next_due(conn, &held)).await
                        {
                            wake_at = wake_at.min(next_look(due));
                        }
                        if started {
                            continue;
                        }
                    }
                    Err(e) => {
                        tracing::warn!("could not claim emails: {e}");
                        wake_at = Instant::now() + Duration::from_secs(1);
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep_until(wake_at) => {}
                _ = self.state.jobs.deliveries().notified() => queued_since_claim = true,
                Some(done) = running.join_next_with_id(), if !running.is_empty() => {
                    let_go(&mut ids, &mut pending, done);
                }
                _ = stopped.changed() => {}
            }
        }
        // Shutdown: in-flight sends get the grace period, then the rest are handed back.
        let grace = Duration::from_secs(self.state.config.server.shutdown_grace_secs.into());
        let deadline = Instant::now() + grace;
        while !running.is_empty() {
            tokio::select! {
                Some(done) = running.join_next_with_id() => let_go(&mut ids, &mut pending, done),
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        running.abort_all();
        while let Some(done) = running.join_next_with_id().await {
            if let Ok((id, ())) = done {
                ids.remove(&id);
            }
        }
        let unfinished: Vec<String> = ids
            .into_values()
            .map(|(id, _)| id)
            .chain(pending.drain().into_iter().map(|(email, _)| email.id))
            .collect();
        self.hand_back(unfinished, clock::now_ms()).await;
    }

    /// Ends the leases of claimed emails not sent, due again at `next_at`.
    async fn hand_back(&self, unsent: Vec<String>, next_at: i64) {
        if unsent.is_empty() {
            return;
        }
        let released = self
            .state
            .db
            .write(move |tx| {
                for id in &unsent {
                    emails::release(tx, id, next_at)?;
                }
                Ok::<_, DbError>(())
            })
            .await;
        if let Err(e) = released {
            tracing::error!("could not hand back claimed emails; their leases will expire: {e}");
        }
    }

    /// Extends the leases of the emails in hand by another [`Worker::lease_ms`].
    async fn renew_leases<'a>(&self, in_hand: impl Iterator<Item = &'a String>) {
        let in_hand: Vec<String> = in_hand.cloned().collect();
        let until = clock::now_ms() + self.lease_ms();
        let renewed = self.state.db.write(move |tx| emails::renew_leases(tx, &in_hand, until)).await;
        if let Err(e) = renewed {
            tracing::warn!("could not renew the leases of emails being sent: {e}");
        }
    }

    /// What the claimed emails need from the database, read in one go for the whole batch
    /// (a domain, campaign or attachment set shared by many emails is read once).
    async fn with_context(&self, batch: Vec<Email>) -> Result<Vec<(Email, Context)>, DbError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.state.db.run(move |conn| delivery::contexts(conn, batch)).await
    }

    /// The envelope sender: the message's own address, or with the bounce listener on, the
    /// signed `b-<token>@<[bounces] domain>` that brings its bounces back to this server.
    fn envelope_sender(&self, email: &Email) -> String {
        match self.state.config.bounces.verp_domain() {
            Some(domain) => crate::core::verp::address(&self.state.secrets.link, &email.id, domain),
            None => email.from_email.clone(),
        }
    }

    async fn deliver(&self, mut email: Email, context: Context) {
        let _started = self.state.inflight.start(super::inflight::Kind::Email, &email.id);
        // Claimed before every relay went to rest: back to the queue, neither signed nor tried.
        let resting = self.transport.resting_for();
        // Captured mail goes to no provider.
        if matches!(self.transport, Transport::Relays(_)) {
            email.provider = self.queues.queue_of(&self.state, &email.to_email).await;
        }
        let mut ticket = None;
        let prepared = match resting {
            Some(wait) => Err(Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1)),
            None => self.prepare(&email, context, &mut ticket).await,
        };
        let outcome = match prepared {
            Err(outcome) => outcome,
            // The reservation of the parts read for it is held until the relay has answered.
            Ok((message, _reserved)) => self.hand_over(&email, message).await,
        };
        if let Some(ticket) = &ticket {
            self.queues.settle(&self.state, ticket, matches!(outcome, Outcome::Sent { .. }));
        }
        match &outcome {
            Outcome::Sent { .. } => self.state.metrics.email("sent"),
            Outcome::Fail { .. } => self.state.metrics.email("failed"),
            Outcome::Retry(_) if email.attempts + 1 >= MAX_ATTEMPTS => self.state.metrics.email("failed"),
            Outcome::Retry(_) => self.state.metrics.email("deferred"),
            Outcome::Later(_) | Outcome::Held { .. } | Outcome::Discard => {}
        }
        let counted = ticket.and_then(|t| t.warmup).filter(|_| matches!(outcome, Outcome::Sent { .. }));
        let id = email.id.clone();
        if let Err(e) = self.records.record(email, outcome, counted).await {
            tracing::error!(email = id, "could not record a delivery; the email will be retried: {e}");
        }
    }

    /// Checks the email, lets its receiving provider's queue and its sender domain's warm-up
    /// hold it back (`ticket`: what it was let through on), reads the parts its batch left out
    /// (their memory reserved first), and makes its message off the executor (rendering, MIME
    /// and DKIM are CPU work).
    async fn prepare(
        &self,
        email: &Email,
        context: Context,
        ticket: &mut Option<Ticket>,
    ) -> Result<((Vec<u8>, String), Option<Reserved>), Outcome> {
        let email = delivery::check(email, &context, clock::now_ms())?;
        if let Some(throttle) = &self.throttle
            && let Err(wait) = throttle.check(&email.project_id)
        {
            return Err(Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1));
        }
        *ticket =
            Some(self.queues.admit(&self.state, &email, email.provider.clone(), clock::now_ms()).await?);
        let (email, context, reserved) = self.read_left_out(email, context).await?;
        let (config, secret, signers) =
            (self.state.config.clone(), self.state.secrets.link.clone(), self.signers.clone());
        self.composers
            .run(move || {
                let public_url = config.public_url();
                let composer = Composer {
                    public_url: &public_url,
                    secret: &secret,
                    tracking: &config.tracking,
                    signers: &signers,
                };
                delivery::compose(&email, &context, &composer)
            })
            .await
            .ok_or_else(|| Outcome::Retry("preparing the message failed".to_string()))?
            .map(|message| (message, reserved))
    }

    /// The email and its context with the large parts its batch left out read, and their
    /// share of the body memory budget, held while the message is made and handed over. With
    /// no room within [`BUDGET_WAIT`] the email goes back to the queue for a moment, its slot
    /// freed for mail that needs none.
    async fn read_left_out(
        &self,
        email: Email,
        context: Context,
    ) -> Result<(Email, Context, Option<Reserved>), Outcome> {
        let bytes = delivery::left_out_bytes(&email, &context);
        if bytes == 0 {
            return Ok((email, context, None));
        }
        let Some(reserved) = self.state.bodies.reserve_within(bytes, BUDGET_WAIT).await else {
            return Err(Outcome::Later(clock::now_ms() + BUDGET_WAIT.as_millis() as i64));
        };
        let read = self.state.db.run(move |conn| delivery::read_left_out(conn, email, context)).await;
        match read {
            Ok(Ok((email, context))) => Ok((email, context, Some(reserved))),
            Ok(Err(outcome)) => Err(outcome),
            Err(e) => {
                tracing::warn!("could not read a large message part: {e}");
                Err(Outcome::Later(clock::now_ms() + 1_000))
            }
        }
    }

    async fn hand_over(&self, email: &Email, (raw, subject): (Vec<u8>, String)) -> Outcome {
        let started = std::time::Instant::now();
        let outcome = self.send(email, raw, subject).await;
        self.state.metrics.relay_handoff.observe(started.elapsed().as_secs_f64());
        outcome
    }

    async fn send(&self, email: &Email, raw: Vec<u8>, subject: String) -> Outcome {
        match &self.transport {
            Transport::Capture => {
                Outcome::Sent { subject, captured: Some((self.envelope_sender(email), raw)) }
            }
            transport => match transport
                .send(&self.envelope_sender(email), &email.to_email, &raw, email.provider.as_deref())
                .await
            {
                Ok(()) => Outcome::Sent { subject, captured: None },
                Err(Refusal::Temporary(e)) => Outcome::Retry(e),
                // The receiving provider deferred it: that provider rests, the others go on.
                Err(Refusal::Deferred(e)) => {
                    if let Some(queue) = &email.provider {
                        self.state.providers.deferred(queue, clock::now_ms());
                        let series = crate::core::providers::series(Some(queue));
                        self.state.metrics.provider(series, "deferred");
                    }
                    Outcome::Retry(e)
                }
                Err(Refusal::Permanent(e)) => Outcome::Fail { error: e, counted: true },
                Err(Refusal::Busy(wait)) => Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1),
            },
        }
    }
}

/// Forgets the email of a send that ended (or panicked).
fn let_go(
    ids: &mut HashMap<tokio::task::Id, (String, Owner)>,
    pending: &mut FairQueue<(Email, Context)>,
    done: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
) {
    let id = match done {
        Ok((id, ())) => id,
        Err(e) => e.id(),
    };
    if let Some((_, owner)) = ids.remove(&id) {
        pending.finished(&owner);
    }
}

/// The ids of the emails a worker holds: being sent, or claimed and waiting their turn.
fn held_ids<'a>(
    running: &'a HashMap<tokio::task::Id, (String, Owner)>,
    pending: &'a FairQueue<(Email, Context)>,
) -> impl Iterator<Item = &'a String> {
    running.values().map(|(id, _)| id).chain(pending.waiting().map(|(email, _)| &email.id))
}
