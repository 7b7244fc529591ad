//! The per-provider queues of the delivery worker (issue 34, item 4): each receiving provider
//! (`core::providers`) has its own hourly rate (`[smtp.providers]`, on governor's GCRA) and
//! its own backoff, so a provider that defers mail, or one that is capped, slows only the mail
//! that goes to it.
//!
//! - A rate lets one second's worth through at once, then paces the rest evenly. Mail that
//!   finds its provider at its rate is held until a slot of its own: the held ones are spread
//!   one interval apart, so they come back in turn, not all at once.
//! - A temporary refusal (4xx) rests the provider for `backoff_secs`, doubled with each further
//!   one in a row up to `backoff_max_secs`; a message the provider takes starts the doubling
//!   over. Mail held for a rest comes back spread a few milliseconds apart.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::config::ProvidersConfig;

/// Mail held for a provider's rest comes back this far apart.
const REST_SPREAD_MS: i64 = 10;
/// Domains whose queue is remembered at most (the rest are looked up again).
const REMEMBERED: usize = 50_000;

/// Why a message waits, and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The provider's hourly rate.
    Rate(i64),
    /// The provider deferred mail and rests.
    Backoff(i64),
}

impl Hold {
    pub fn until(self) -> i64 {
        match self {
            Hold::Rate(at) | Hold::Backoff(at) => at,
        }
    }

    /// The name stored with a held email and counted in metrics.
    pub fn reason(self) -> &'static str {
        match self {
            Hold::Rate(_) => "rate",
            Hold::Backoff(_) => "backoff",
        }
    }
}

#[derive(Debug, Default, Clone)]
struct QueueState {
    /// Temporary refusals in a row.
    refusals: u32,
    resting_until: i64,
    /// The next free slot for mail held back (by the rate, or during a rest).
    next_slot: i64,
}

/// One queue's state, as `/metrics` and the report show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStatus {
    pub queue: String,
    /// 0: no cap.
    pub per_hour: u32,
    /// While the provider rests after deferring mail.
    pub resting_until: Option<i64>,
    pub refusals: u32,
}

/// The rates and rests of every queue.
pub struct ProviderGate {
    config: ProvidersConfig,
    limiters: Mutex<HashMap<String, std::sync::Arc<DefaultDirectRateLimiter>>>,
    states: Mutex<HashMap<String, QueueState>>,
    queues_of: Mutex<HashMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ProviderGate {
    pub fn new(config: &ProvidersConfig) -> ProviderGate {
        ProviderGate {
            config: config.clone(),
            limiters: Mutex::default(),
            states: Mutex::default(),
            queues_of: Mutex::default(),
        }
    }

    /// Whether mail is queued per provider at all.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The queue of mail to `domain`, when it was looked up before.
    pub fn queue_of(&self, domain: &str) -> Option<String> {
        lock(&self.queues_of).get(domain).cloned()
    }

    /// Remembers the queue of mail to `domain`.
    pub fn remember(&self, domain: &str, queue: &str) {
        let mut known = lock(&self.queues_of);
        if known.len() >= REMEMBERED {
            known.clear();
        }
        known.insert(domain.to_string(), queue.to_string());
    }

    fn limiter(&self, queue: &str) -> Option<std::sync::Arc<DefaultDirectRateLimiter>> {
        let per_hour = NonZeroU32::new(self.config.per_hour(queue))?;
        let mut limiters = lock(&self.limiters);
        if limiters.len() >= REMEMBERED {
            limiters.clear();
        }
        let limiter = limiters.entry(queue.to_string()).or_insert_with(|| {
            // One second's worth at once, at least one message.
            let burst = NonZeroU32::new(per_hour.get().div_ceil(3_600)).unwrap_or(NonZeroU32::MIN);
            std::sync::Arc::new(RateLimiter::direct(Quota::per_hour(per_hour).allow_burst(burst)))
        });
        Some(limiter.clone())
    }

    /// Whether a message to `queue` may go now; when it may not, until when it is held (a slot
    /// of its own is taken for it).
    pub fn admit(&self, queue: &str, now: i64) -> Result<(), Hold> {
        {
            let mut states = lock(&self.states);
            // Every domain is a queue: past the bound, queues with nothing pending are forgotten.
            if states.len() >= REMEMBERED && !states.contains_key(queue) {
                states.retain(|_, s| s.resting_until > now || s.next_slot > now || s.refusals > 0);
            }
            let state = states.entry(queue.to_string()).or_default();
            if state.resting_until > now {
                let at = state.next_slot.max(state.resting_until);
                state.next_slot = at + REST_SPREAD_MS;
                return Err(Hold::Backoff(at));
            }
        }
        let Some(limiter) = self.limiter(queue) else { return Ok(()) };
        let wait = match limiter.check() {
            Ok(()) => return Ok(()),
            Err(not_until) => not_until.wait_time_from(DefaultClock::default().now()),
        };
        let interval = 3_600_000 / i64::from(self.config.per_hour(queue).max(1));
        let mut states = lock(&self.states);
        let state = states.entry(queue.to_string()).or_default();
        let at = state.next_slot.max(now + wait.as_millis() as i64);
        state.next_slot = at + interval;
        Err(Hold::Rate(at))
    }

    /// The provider took a message: the next deferral rests it for `backoff_secs` again.
    pub fn took(&self, queue: &str) {
        if let Some(state) = lock(&self.states).get_mut(queue) {
            state.refusals = 0;
        }
    }

    /// The provider deferred a message (4xx): it rests, longer with each refusal in a row.
    pub fn deferred(&self, queue: &str, now: i64) -> i64 {
        let mut states = lock(&self.states);
        let state = states.entry(queue.to_string()).or_default();
        state.refusals = state.refusals.saturating_add(1);
        let base = i64::from(self.config.backoff_secs) * 1000;
        let rest = base
            .saturating_mul(1 << (state.refusals - 1).min(20))
            .min(i64::from(self.config.backoff_max_secs) * 1000);
        state.resting_until = state.resting_until.max(now + rest);
        state.next_slot = state.next_slot.max(state.resting_until);
        state.resting_until
    }

    /// The queues with a cap or a rest, as of `now`.
    pub fn status(&self, now: i64) -> Vec<QueueStatus> {
        let states = lock(&self.states);
        let mut out: Vec<QueueStatus> = states
            .iter()
            .filter(|(q, s)| s.resting_until > now || s.refusals > 0 || self.config.per_hour(q) > 0)
            .map(|(queue, s)| QueueStatus {
                queue: queue.clone(),
                per_hour: self.config.per_hour(queue),
                resting_until: (s.resting_until > now).then_some(s.resting_until),
                refusals: s.refusals,
            })
            .collect();
        out.sort_by(|a, b| a.queue.cmp(&b.queue));
        out
    }

    /// How long until `queue` may be tried again (zero when it may now).
    pub fn resting_for(&self, queue: &str, now: i64) -> Duration {
        let until = lock(&self.states).get(queue).map_or(0, |s| s.resting_until);
        Duration::from_millis((until - now).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_provider_paces_its_mail_and_leaves_the_others_alone() {
        let config = ProvidersConfig { gmail_per_hour: 20, ..ProvidersConfig::default() };
        let gate = ProviderGate::new(&config);
        let now = 1_000_000;
        assert_eq!(gate.admit("gmail", now), Ok(()), "one at once");
        let held: Vec<i64> = (0..3).map(|_| gate.admit("gmail", now).unwrap_err().until()).collect();
        // Each held one has a slot of its own, three minutes apart.
        assert!(held[0] >= now + 170_000, "{held:?}");
        assert_eq!((held[1] - held[0], held[2] - held[1]), (180_000, 180_000));
        for _ in 0..100 {
            assert_eq!(gate.admit("example.org", now), Ok(()), "no cap for the others");
        }
    }

    #[test]
    fn a_deferring_provider_rests_longer_each_time_and_alone() {
        let config =
            ProvidersConfig { backoff_secs: 60, backoff_max_secs: 200, ..ProvidersConfig::default() };
        let gate = ProviderGate::new(&config);
        let now = 0;
        assert_eq!(gate.deferred("yahoo", now), 60_000);
        assert_eq!(gate.admit("yahoo", now), Err(Hold::Backoff(60_000)));
        assert_eq!(gate.admit("yahoo", now), Err(Hold::Backoff(60_010)), "spread");
        assert_eq!(gate.admit("gmail", now), Ok(()));
        assert_eq!(gate.deferred("yahoo", 60_000), 180_000, "doubled");
        assert_eq!(gate.deferred("yahoo", 180_000), 380_000, "capped at 200 s");
        gate.took("yahoo");
        assert_eq!(gate.deferred("yahoo", 400_000), 460_000, "a taken message starts over");
        assert_eq!(gate.status(400_000)[0].resting_until, Some(460_000));
    }
}
