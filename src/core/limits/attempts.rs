//! Failed sign-ins and sign-ups, limited per account and per client address (appliance.md §13):
//! 10 failures in 15 minutes for one account, 100 for one address (an IPv6 client counts by its
//! /64), then 429 with `Retry-After` until governor's GCRA gives one back. Successful requests do
//! not count, so a user who signs in correctly is never slowed down.
//!
//! Governor cannot tell whether a key has room without taking it, so a key that used its last
//! failure is noted as locked until the time governor says; the check before the (slow, bcrypt)
//! password comparison reads that note. Attempts for one account, and from one address, take
//! turns ([`Attempts::turn`]): check, compare and count happen as one step per key, so forty
//! wrong passwords sent at once are compared ten times, not forty (issue 29).

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use crate::core::error::{Error, Limit, Result};

/// Failures one account may have in [`WINDOW`].
pub const PER_ACCOUNT: u32 = 10;
/// Failures one client address may have in [`WINDOW`].
pub const PER_ADDRESS: u32 = 100;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);

type Keyed = RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Requests for account mail (password reset, verification) one account may make in
/// [`MAIL_WINDOW`]; every request counts, whether or not the account exists.
pub const MAIL_PER_ACCOUNT: u32 = 5;
/// Requests for account mail one client address may make in [`MAIL_WINDOW`].
pub const MAIL_PER_ADDRESS: u32 = 50;
pub const MAIL_WINDOW: Duration = Duration::from_secs(3600);

/// The counters of one server for one kind of attempt.
pub struct Attempts {
    accounts: Keyed,
    addresses: Keyed,
    locked: Mutex<HashMap<String, Instant>>,
    /// One attempt at a time per key ([`Attempts::turn`]).
    turns: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    refusal: &'static str,
}

/// An attempt's turn for its account and its address: held from the check to the count.
pub struct Turn(#[expect(dead_code, reason = "held for its drop")] Vec<tokio::sync::OwnedMutexGuard<()>>);

impl Default for Attempts {
    /// Failed sign-ins and sign-ups.
    fn default() -> Self {
        Self::new(PER_ACCOUNT, PER_ADDRESS, WINDOW, "Too many failed attempts; try again later")
    }
}

impl Attempts {
    fn new(per_account: u32, per_address: u32, window: Duration, refusal: &'static str) -> Self {
        let quota = |n: u32| {
            let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
            Quota::with_period(window / n.get()).unwrap_or_else(|| Quota::per_minute(n)).allow_burst(n)
        };
        Attempts {
            accounts: RateLimiter::keyed(quota(per_account)).with_middleware(),
            addresses: RateLimiter::keyed(quota(per_address)).with_middleware(),
            locked: Mutex::new(HashMap::new()),
            turns: Mutex::new(HashMap::new()),
            refusal,
        }
    }

    /// Requests for account mail, all counted ([`Attempts::take`]).
    pub fn for_mail() -> Self {
        Self::new(
            MAIL_PER_ACCOUNT,
            MAIL_PER_ADDRESS,
            MAIL_WINDOW,
            "Too many requests for this account or from this address; try again later",
        )
    }

    /// Submissions of signup forms: `per_form` an hour to one form (its id is the "account")
    /// and `per_address` an hour from one address, all counted ([`Attempts::take`]).
    pub fn for_forms(per_form: u32, per_address: u32) -> Self {
        Self::new(
            per_form,
            per_address,
            Duration::from_secs(3600),
            "Too many submissions to this form or from this address; try again later",
        )
    }

    /// Counts one request, or 429 while the account or the address is locked.
    pub fn take(&self, account: Option<&str>, address: Option<IpAddr>) -> Result<()> {
        self.check(account, address)?;
        self.failed(account, address);
        Ok(())
    }
}

fn keys(account: Option<&str>, address: Option<IpAddr>) -> impl Iterator<Item = (bool, String)> {
    let account = account.map(|a| (true, format!("account:{}", a.trim().to_lowercase())));
    let address = address.map(|ip| (false, format!("address:{}", crate::core::peers::client_of(ip))));
    account.into_iter().chain(address)
}

impl Attempts {
    /// Waits for this account's and this address's turn (in that order, so two attempts never
    /// wait on each other): until it is dropped, no other attempt for either is checked,
    /// compared or counted, so a failure is counted before the next attempt is checked.
    pub async fn turn(&self, account: Option<&str>, address: Option<IpAddr>) -> Turn {
        let locks: Vec<Arc<tokio::sync::Mutex<()>>> = match self.turns.lock() {
            Ok(mut turns) => {
                keys(account, address).map(|(_, key)| turns.entry(key).or_default().clone()).collect()
            }
            Err(_) => Vec::new(),
        };
        let mut held = Vec::with_capacity(locks.len());
        for lock in locks {
            held.push(lock.lock_owned().await);
        }
        Turn(held)
    }

    /// Before comparing a password: 429 while the account or the address is locked.
    pub fn check(&self, account: Option<&str>, address: Option<IpAddr>) -> Result<()> {
        let now = Instant::now();
        let Ok(locked) = self.locked.lock() else { return Ok(()) };
        let wait = keys(account, address)
            .filter_map(|(_, key)| locked.get(&key).and_then(|until| until.checked_duration_since(now)))
            .max();
        match wait {
            Some(wait) => Err(Error::OverLimit(Limit::Rate { message: self.refusal.into(), wait })),
            None => Ok(()),
        }
    }

    /// Counts a failure; a key that has used its allowance is locked until one comes back.
    pub fn failed(&self, account: Option<&str>, address: Option<IpAddr>) {
        for (is_account, key) in keys(account, address) {
            let limiter = if is_account { &self.accounts } else { &self.addresses };
            let wait = match limiter.check_key(&key) {
                Ok(state) if state.remaining_burst_capacity() > 0 => None,
                // That was the last one: ask when the next comes back (a refusal takes nothing).
                Ok(_) => limiter.check_key(&key).err().map(|n| n.wait_time_from(limiter.clock().now())),
                Err(not_until) => Some(not_until.wait_time_from(limiter.clock().now())),
            };
            if let Some(wait) = wait
                && let Ok(mut locked) = self.locked.lock()
            {
                locked.insert(key, Instant::now() + wait);
            }
        }
    }

    /// Drops counters back at a full allowance and locks that ran out.
    pub fn forget_idle(&self) {
        self.accounts.retain_recent();
        self.addresses.retain_recent();
        if let Ok(mut locked) = self.locked.lock() {
            let now = Instant::now();
            locked.retain(|_, until| *until > now);
        }
        if let Ok(mut turns) = self.turns.lock() {
            turns.retain(|_, lock| Arc::strong_count(lock) > 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_failures_lock_the_account_and_successes_do_not_count() {
        let attempts = Attempts::default();
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        for _ in 0..PER_ACCOUNT {
            assert!(attempts.check(Some("a@example.com"), Some(ip)).is_ok());
            attempts.failed(Some("A@example.com "), Some(ip));
        }
        let e = attempts.check(Some("a@example.com"), Some(ip)).unwrap_err();
        let Error::OverLimit(Limit::Rate { wait, .. }) = e else { panic!("{e:?}") };
        assert!(wait <= Duration::from_secs(90), "one failure comes back every 90 s: {wait:?}");
        // Another account from another address is not affected.
        assert!(attempts.check(Some("b@example.com"), Some("203.0.113.8".parse().unwrap())).is_ok());
    }

    #[test]
    fn an_address_is_locked_after_a_hundred_failures_across_accounts() {
        let attempts = Attempts::default();
        let ip: IpAddr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
        for n in 0..PER_ADDRESS {
            attempts.failed(Some(&format!("user{n}@example.com")), Some(ip));
        }
        // The same /64 is the same client.
        let neighbour: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(attempts.check(Some("new@example.com"), Some(neighbour)).is_err());
        assert!(attempts.check(Some("new@example.com"), Some("2001:db8:1:3::1".parse().unwrap())).is_ok());
    }
}
