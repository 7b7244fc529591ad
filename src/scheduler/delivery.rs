//! The delivery worker: takes queued emails, renders, builds and DKIM-signs each message, hands it
//! to the transport, and records the outcome.
//!
//! - Emails are claimed with a lease (`locked_until`), renewed while the worker holds them; one
//!   whose worker died is taken again when the lease runs out, with the same Message-ID.
//! - The outcome is committed right after the relay answers, so a message reaches the relay a
//!   second time only when the process dies between the relay's acceptance and that commit.
//! - Temporary refusals are retried with backoff, five tries in all; a permanent refusal (5xx)
//!   fails the email at once and keeps the relay's reply.
//! - `[smtp] max_messages_per_second` throttles each project; a relay's own cap
//!   (`[[smtp.relays]] max_messages_per_second`) is kept by the transport.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::clock;
use crate::core::Error as CoreError;
use crate::core::limits::ratelimit::{self, ProjectLimiter};
use crate::core::{domains as core_domains, events, links, outbound, send::Attachment};
use crate::db::{
    DbError, campaigns, contacts, domains,
    emails::{self, Email},
    outbox, projects, suppressions,
};
use crate::mail::dkim::Signers;
use crate::mail::message::{self, Outgoing};
use crate::mail::transport::{Refusal, Transport};
use crate::state::AppState;

use super::fair::FairQueue;
use super::workers::{PASSED_OVER, next_look};
use crate::db::fair::{Owner, Turns};

/// Tries of one email before it fails.
pub const MAX_ATTEMPTS: u32 = 5;
const BATCH: usize = 64;
/// How often newly queued mail is claimed while much is in hand.
const NOTICED_CLAIMS: Duration = Duration::from_millis(50);

/// What happened to one email.
enum Outcome {
    Sent {
        subject: String,
        /// In capture mode: the envelope sender a relay would have been given, and the message.
        captured: Option<(String, Vec<u8>)>,
    },
    Retry(String),
    Fail {
        error: String,
        counted: bool,
    },
    /// Throttled or shut down: try again at this time.
    Later(i64),
    /// The project is being reset or deleted: the row goes, unsent, without an event.
    Discard,
}

/// What one email needs besides its row.
struct Context {
    contact: Option<contacts::Contact>,
    /// For MARKETING mail: why the contact is suppressed, if it is.
    suppressed: Option<String>,
    domain: Option<Arc<domains::Domain>>,
    /// For campaign mail: the campaign, `None` when it was deleted.
    campaign: Option<Option<Arc<campaigns::Campaign>>>,
    attachments: Option<Arc<String>>,
    /// The project is being reset or deleted.
    wiping: bool,
}

struct Worker {
    state: AppState,
    transport: Transport,
    signers: Signers,
    throttle: Option<Arc<dyn ProjectLimiter>>,
}

/// Starts the delivery loop.
pub fn start(state: AppState, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let transport = Transport::from_config(&state.config.smtp);
        let per_second = state.config.smtp.max_messages_per_second;
        let throttle = (per_second > 0).then(|| ratelimit::limiter_per_second(per_second));
        let worker = Arc::new(Worker { state, transport, signers: Signers::default(), throttle });
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
        self.state
            .db
            .run(move |conn| {
                let mut domains_seen = HashMap::new();
                let mut campaigns_seen = HashMap::new();
                let mut attachments_seen = HashMap::new();
                let mut wiping_seen = HashMap::new();
                let mut out = Vec::with_capacity(batch.len());
                for email in batch {
                    let project = email.project_id.as_str();
                    let contact = match &email.contact_id {
                        Some(id) => contacts::by_id(conn, project, id)?,
                        None => None,
                    };
                    let suppressed = match (&contact, email.kind.as_str()) {
                        (Some(c), "MARKETING") => suppressions::get(conn, &c.id)?.map(|s| s.reason),
                        _ => None,
                    };
                    let from_domain = email.from_email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
                    let key = (project.to_string(), from_domain.to_string());
                    let domain = read_once(&mut domains_seen, key, || {
                        let names = core_domains::candidates(from_domain);
                        if project == projects::SYSTEM {
                            domains::verified_anywhere(conn, &names)
                        } else {
                            domains::for_signing(conn, project, &names)
                        }
                    })?;
                    let campaign =
                        match email.campaign_id.as_ref().filter(|_| email.source_type == "CAMPAIGN") {
                            None => None,
                            Some(id) => Some(read_once(&mut campaigns_seen, id.clone(), || {
                                campaigns::by_id(conn, id)
                            })?),
                        };
                    let attachments = match &email.attachment_set {
                        None => None,
                        Some(id) => {
                            read_once(&mut attachments_seen, id.clone(), || emails::attachment_set(conn, id))?
                        }
                    };
                    let wiping = match wiping_seen.get(project) {
                        Some(wiping) => *wiping,
                        None => *wiping_seen
                            .entry(project.to_string())
                            .or_insert(projects::is_wiping(conn, project)?),
                    };
                    out.push((email, Context { contact, suppressed, domain, campaign, attachments, wiping }));
                }
                Ok::<_, DbError>(out)
            })
            .await
    }

    /// The envelope sender: the message's own address, or with the bounce listener on, the
    /// signed `b-<token>@<[bounces] domain>` that brings its bounces back to this server.
    fn envelope_sender(&self, email: &Email) -> String {
        match self.state.config.bounces.verp_domain() {
            Some(domain) => crate::core::verp::address(&self.state.secrets.link, &email.id, domain),
            None => email.from_email.clone(),
        }
    }

    async fn deliver(&self, email: Email, context: Context) {
        let _started = self.state.inflight.start(super::inflight::Kind::Email, &email.id);
        // Claimed before every relay went to rest: back to the queue, neither signed nor tried.
        let resting = self.transport.resting_for();
        let prepared = match resting {
            Some(wait) => Err(Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1)),
            None => self.prepare(&email, context).await,
        };
        let outcome = match prepared {
            Err(outcome) => outcome,
            Ok(prepared) => self.hand_over(&email, prepared).await,
        };
        match &outcome {
            Outcome::Sent { .. } => self.state.metrics.email("sent"),
            Outcome::Fail { .. } => self.state.metrics.email("failed"),
            Outcome::Retry(_) if email.attempts + 1 >= MAX_ATTEMPTS => self.state.metrics.email("failed"),
            Outcome::Retry(_) => self.state.metrics.email("deferred"),
            Outcome::Later(_) | Outcome::Discard => {}
        }
        if let Err(e) = self.record(&email, outcome).await {
            tracing::error!(email = email.id, "could not record a delivery; the email will be retried: {e}");
        }
    }

    /// Renders, builds and signs the message.
    async fn prepare(&self, email: &Email, context: Context) -> Result<(Vec<u8>, String), Outcome> {
        let Context { contact, suppressed, domain, campaign, attachments: shared_attachments, wiping } =
            context;
        if wiping {
            return Err(Outcome::Discard);
        }
        // A campaign's rows carry no subject or body: the campaign has them.
        let mut email = email.clone();
        match campaign {
            None => {}
            Some(None) => {
                return Err(Outcome::Fail {
                    error: "not sent: the campaign was deleted".into(),
                    counted: false,
                });
            }
            Some(Some(c)) if c.status == "CANCELLED" => {
                return Err(Outcome::Fail {
                    error: "not sent: the campaign was cancelled".into(),
                    counted: false,
                });
            }
            Some(Some(c)) => {
                email.subject = c.subject.clone();
                email.body = c.body.clone();
            }
        }

        let test = email.source_type == "TEST";
        if email.kind == "MARKETING" && !test && contact.as_ref().is_some_and(|c| !c.subscribed) {
            return Err(Outcome::Fail {
                error: "not sent: the contact unsubscribed from marketing email".into(),
                counted: false,
            });
        }
        if let Some(reason) = suppressed.filter(|_| !test) {
            let why = if reason == "complaint" { "complained about earlier mail" } else { "hard-bounced" };
            return Err(Outcome::Fail {
                error: format!("not sent: the contact is suppressed for marketing email (it {why})"),
                counted: false,
            });
        }
        // System mail goes out signed when its domain is verified in some project, else unsigned.
        let system = email.project_id == projects::SYSTEM;
        if domain.is_none() && !system {
            return Err(Outcome::Fail {
                error: format!(
                    "the sender domain of {} is no longer a domain of the project",
                    email.from_email
                ),
                counted: false,
            });
        }
        if let Some(throttle) = &self.throttle
            && let Err(wait) = throttle.check(&email.project_id)
        {
            return Err(Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1));
        }
        let config = self.state.config.clone();
        let secret = self.state.secrets.link.clone();
        let signers = self.signers.clone();
        tokio::task::spawn_blocking(move || {
            let public_url = config.public_url();
            let transient: Map<String, Value> = serde_json::from_str(&email.variables).unwrap_or_default();
            // Campaign mail credits its unsubscribes to the email (and so the campaign).
            let credited = (email.source_type == "CAMPAIGN").then_some(email.id.as_str());
            let base = outbound::LinkBase { public_url: &public_url, secret: &secret, email: credited };
            let rendered = outbound::render(
                &email.subject,
                &email.body,
                &email.to_email,
                contact.as_ref(),
                &transient,
                &base,
            )
            .map_err(|(part, e)| Outcome::Fail {
                error: format!("the {} could not be rendered: {e}", part.field()),
                counted: false,
            })?;
            let (subject, mut html) = (rendered.subject, rendered.html);
            if email.kind != "HEADLESS" && !system {
                if config.tracking.clicks {
                    html = links::track_clicks(&html, &public_url, &secret, &email.id);
                }
                if config.tracking.opens {
                    html = links::add_open_pixel(&html, &public_url, &secret, &email.id);
                }
            }
            let headers: Map<String, Value> = serde_json::from_str(&email.headers).unwrap_or_default();
            // Attachments stored once for the request (older rows carry their own copy).
            let attachments =
                email.attachments.as_deref().or(shared_attachments.as_deref().map(String::as_str));
            let attachments: Vec<Attachment> =
                attachments.and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
            let unsubscribe = contact.as_ref().filter(|_| email.kind == "MARKETING").map(|c| {
                let email = credited.map(str::to_string);
                links::url(&public_url, &secret, &links::Link::Unsubscribe { contact: c.id.clone(), email })
            });
            let outgoing = Outgoing {
                message_id: email.message_id.clone(),
                from: (email.from_email.clone(), email.from_name.clone()),
                to: (email.to_email.clone(), email.to_name.clone()),
                reply_to: email.reply_to.clone(),
                subject: subject.clone(),
                html,
                headers: headers
                    .into_iter()
                    .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                    .collect(),
                attachments,
                unsubscribe,
            };
            let raw = message::build(&outgoing).map_err(|e| Outcome::Fail { error: e, counted: false })?;
            let signed = match &domain {
                Some(domain) => signers
                    .sign(&domain.domain, &domain.dkim_selector, &domain.dkim_private_key, &raw)
                    .map_err(|e| Outcome::Fail { error: e, counted: false })?,
                None => raw,
            };
            Ok((signed, subject))
        })
        .await
        .map_err(|e| Outcome::Retry(format!("preparing the message: {e}")))?
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
            transport => match transport.send(&self.envelope_sender(email), &email.to_email, &raw).await {
                Ok(()) => Outcome::Sent { subject, captured: None },
                Err(Refusal::Temporary(e)) => Outcome::Retry(e),
                Err(Refusal::Permanent(e)) => Outcome::Fail { error: e, counted: true },
                Err(Refusal::Busy(wait)) => Outcome::Later(clock::now_ms() + wait.as_millis() as i64 + 1),
            },
        }
    }

    async fn record(&self, email: &Email, outcome: Outcome) -> Result<(), CoreError> {
        let email = email.clone();
        let base = u64::from(self.state.config.scheduler.retry_base_secs);
        self.state
            .db
            .write(move |tx| {
                let now = clock::now_ms();
                match outcome {
                    Outcome::Sent { subject, captured } => {
                        if emails::mark_sent(tx, &email.id, &subject, now)? {
                            if let Some((envelope_from, raw)) = captured {
                                outbox::insert(tx, &email, (&envelope_from, &subject, &raw), now)?;
                            }
                            events::emit(
                                tx,
                                &email.project_id,
                                email.contact_id.as_deref(),
                                "email.sent",
                                &events::email_data(&email, &subject),
                                now,
                            )?;
                        }
                    }
                    Outcome::Retry(error) if email.attempts + 1 < MAX_ATTEMPTS => {
                        let delay = base.saturating_mul(1 << email.attempts.min(16)) * 1000;
                        emails::retry_later(tx, &email.id, &error, now + delay as i64, now)?;
                    }
                    Outcome::Retry(error) => {
                        fail(tx, &email, &format!("gave up after {MAX_ATTEMPTS} tries: {error}"), true, now)?
                    }
                    Outcome::Fail { error, counted } => fail(tx, &email, &error, counted, now)?,
                    Outcome::Later(at) => emails::release(tx, &email.id, at)?,
                    Outcome::Discard => {
                        emails::discard_queued(tx, &email.id)?;
                    }
                }
                // The request's attachments go once its last email has left the queue.
                if let Some(set) = &email.attachment_set {
                    emails::drop_attachment_set_when_done(tx, set)?;
                }
                Ok::<_, CoreError>(())
            })
            .await
    }
}

/// Fails a queued email for good, as a refused one is failed (the quarantine: see
/// [`super::inflight`]).
pub(super) fn quarantine(
    conn: &rusqlite::Connection,
    id: &str,
    error: &str,
    now: i64,
) -> crate::db::Result<()> {
    match emails::get(conn, id)? {
        Some(email) => fail(conn, &email, error, true, now),
        None => Ok(()),
    }
}

fn fail(
    tx: &rusqlite::Connection,
    email: &Email,
    error: &str,
    counted: bool,
    now: i64,
) -> crate::db::Result<()> {
    if emails::mark_failed(tx, &email.id, error, counted, now)? {
        let mut data = events::email_data(email, &email.subject);
        data["error"] = json!(error);
        events::emit(tx, &email.project_id, email.contact_id.as_deref(), "email.failed", &data, now)?;
    }
    Ok(())
}

/// What `read` finds for `key`, read once for a batch and shared by the emails that need it.
fn read_once<K, T>(
    seen: &mut HashMap<K, Option<Arc<T>>>,
    key: K,
    read: impl FnOnce() -> crate::db::Result<Option<T>>,
) -> crate::db::Result<Option<Arc<T>>>
where
    K: std::hash::Hash + Eq,
{
    if let Some(found) = seen.get(&key) {
        return Ok(found.clone());
    }
    let found = read()?.map(Arc::new);
    seen.insert(key, found.clone());
    Ok(found)
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
