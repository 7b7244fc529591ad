//! What the delivery worker asks before it signs a message (issue 34, item 4): which receiving
//! provider's queue it is in (`core::providers`, by its MX hosts, looked up once per domain),
//! whether that provider's rate or rest holds it back (`core::limits::provider_gate`), and
//! whether its sender domain's warm-up has sent the day's volume (`core::warmups`). A message
//! held back goes back to the queue until its time, without using up a try.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::tz::TimeZone;

use crate::core::delivery::Outcome;
use crate::core::delivery_windows::Windows;
use crate::core::limits::provider_gate::Hold;
use crate::core::vocabulary::{EmailKind, EmailSource};
use crate::core::{providers, warmups};
use crate::db::emails::Email;
use crate::db::warmups::Plan;
use crate::state::AppState;

/// How long a warm-up plan read from the database is used before it is read again.
const PLAN_TTL: Duration = Duration::from_secs(10);
/// The longest an MX lookup may take; past it, the domain is its own queue for now.
const MX_TIMEOUT: Duration = Duration::from_secs(3);
/// Sender domains whose plan is remembered at most.
const REMEMBERED: usize = 10_000;

/// A sender domain's warm-up, with its project's zone.
struct Rule {
    plan: Plan,
    zone: TimeZone,
}

/// A send let through: the queue it went to, and the warm-up day it was counted against.
#[derive(Debug, Default, Clone)]
pub struct Ticket {
    pub queue: Option<String>,
    pub warmup: Option<(String, String)>,
}

/// The warm-up plans read, by project and sender domain, with when each was read.
type Rules = HashMap<(String, String), (Instant, Option<Arc<Rule>>)>;

#[derive(Default)]
pub struct ProviderQueues {
    ledger: warmups::Ledger,
    rules: Mutex<Rules>,
}

impl ProviderQueues {
    /// The receiving queue of mail to `to`, when mail is queued per provider.
    pub async fn queue_of(&self, state: &AppState, to: &str) -> Option<String> {
        let gate = &state.providers;
        if !gate.enabled() {
            return None;
        }
        let domain = to.rsplit_once('@').map_or(to, |(_, d)| d).to_ascii_lowercase();
        if let Some(queue) = gate.queue_of(&domain) {
            return Some(queue);
        }
        let queue = match providers::by_domain(&domain) {
            Some(named) => named.to_string(),
            None => {
                let found = tokio::time::timeout(MX_TIMEOUT, state.dns.mx(&domain)).await;
                let hosts: Vec<String> = match &found {
                    Ok(answer) => answer.records().iter().map(|mx| mx.exchange.clone()).collect(),
                    Err(_) => Vec::new(),
                };
                providers::queue_of(&domain, hosts.iter().map(String::as_str))
            }
        };
        gate.remember(&domain, &queue);
        Some(queue)
    }

    /// The warm-up of the project's sender domain of `email`, read at most every [`PLAN_TTL`].
    async fn rule(&self, state: &AppState, email: &Email) -> Option<Arc<Rule>> {
        let domain = email.from_email.rsplit_once('@').map(|(_, d)| d.to_ascii_lowercase())?;
        let key = (email.project_id.clone(), domain.clone());
        if let Some((read, rule)) = self.rules.lock().unwrap_or_else(|e| e.into_inner()).get(&key)
            && read.elapsed() < PLAN_TTL
        {
            return rule.clone();
        }
        let project = email.project_id.clone();
        let read = state
            .db
            .run(move |conn| {
                // Mail from a subdomain warms its verified parent up.
                let names = crate::core::domains::candidates(&domain);
                let plan = crate::db::warmups::for_domain(conn, &project, &names)?;
                let zone = match &plan {
                    Some(_) => Some(Windows::of(&crate::db::sending::get(conn, &project)?).zone_of(None)),
                    None => None,
                };
                Ok::<_, crate::db::DbError>(plan.zip(zone))
            })
            .await;
        let rule = match read {
            Ok(found) => found.map(|(plan, zone)| Arc::new(Rule { plan, zone })),
            Err(e) => {
                tracing::warn!("could not read a warm-up plan: {e}");
                return None;
            }
        };
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        if rules.len() >= REMEMBERED {
            rules.clear();
        }
        rules.insert(key, (Instant::now(), rule.clone()));
        rule
    }

    /// Lets `email` (in `queue`, when mail is queued per provider) go now, or holds it back.
    pub async fn admit(
        &self,
        state: &AppState,
        email: &Email,
        queue: Option<String>,
        now: i64,
    ) -> Result<Ticket, Outcome> {
        let mut ticket = Ticket { queue, warmup: None };
        if email.source_type != EmailSource::Test
            && let Some(rule) = self.rule(state, email).await
        {
            let day = warmups::day_of(&rule.zone, now);
            if let Some(allowed) = warmups::allowed(&rule.plan, day) {
                let (domain, day_text) = (rule.plan.domain_id.clone(), day.to_string());
                if !self.ledger.knows(&domain, &day_text) {
                    let (d, t) = (domain.clone(), day_text.clone());
                    let sent = state.db.run(move |conn| crate::db::warmups::sent_on(conn, &d, &t)).await;
                    match sent {
                        Ok(sent) => self.ledger.load(&domain, &day_text, allowed, sent),
                        Err(e) => {
                            tracing::warn!("could not read a warm-up's day: {e}");
                            return Err(Outcome::Later(now + 1_000));
                        }
                    }
                }
                let held = email.kind == EmailKind::Marketing;
                if !self.ledger.reserve(&domain, &day_text, allowed, held) {
                    state.metrics.provider(providers::series(ticket.queue.as_deref()), "held_warmup");
                    return Err(Outcome::Held {
                        at: warmups::next_day_start(&rule.zone, day),
                        reason: "warmup",
                    });
                }
                ticket.warmup = Some((domain, day_text));
            }
        }
        if let Some(queue) = &ticket.queue
            && let Err(hold) = state.providers.admit(queue, now)
        {
            self.settle(state, &ticket, false);
            state.metrics.provider(providers::series(Some(queue)), &format!("held_{}", hold.reason()));
            return Err(held(hold));
        }
        Ok(ticket)
    }

    /// A send let through by [`ProviderQueues::admit`] ended with `outcome`.
    pub fn settle(&self, state: &AppState, ticket: &Ticket, sent: bool) {
        if let Some((domain, day)) = &ticket.warmup {
            self.ledger.settle(domain, day, sent);
        }
        if let (Some(queue), true) = (&ticket.queue, sent) {
            state.providers.took(queue);
            state.metrics.provider(providers::series(Some(queue)), "sent");
        }
    }
}

fn held(hold: Hold) -> Outcome {
    Outcome::Held { at: hold.until(), reason: hold.reason() }
}
