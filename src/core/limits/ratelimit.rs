//! The per-project request rate limit (`[limits] requests_per_minute`), on governor's GCRA.
//!
//! A project may burst up to the whole minute's allowance at once and regains one request every
//! `60 s / limit`. It is one allowance for all of a project's traffic, but requests made with the
//! public key (browsers) also draw on a second allowance of [`PUBLIC_SHARE_PERCENT`] of it, so a
//! flood of `/v1/track` calls cannot use the last fifth that server-side (secret-key) calls
//! need. The clock is a parameter so tests can hold time still.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

/// The part of a project's allowance that public-key requests may use.
pub const PUBLIC_SHARE_PERCENT: u32 = 80;

/// What the key guards ask of the limiter.
pub trait ProjectLimiter: Send + Sync {
    /// The configured requests per minute.
    fn per_minute(&self) -> u32;
    /// Takes one request from the allowance of `key` (a project, or a dashboard user): the
    /// requests left, or how long to wait.
    fn check(&self, key: &str) -> Result<u32, Duration>;
    /// The requests per minute public-key requests may make.
    fn public_per_minute(&self) -> u32;
    /// Takes one public-key request: from the public share first, then from the project's
    /// allowance; the fewer of the two that are left, or how long to wait.
    fn check_public(&self, project: &str) -> Result<u32, Duration>;
    /// Drops the state of keys that are back at a full allowance.
    fn forget_idle(&self);
}

type Keyed<C> = RateLimiter<String, DashMapStateStore<String>, C, StateInformationMiddleware>;

struct Limiter<C: Clock> {
    inner: Keyed<C>,
    public: Keyed<C>,
    per_minute: u32,
    public_per_minute: u32,
}

fn take<C: Clock>(limiter: &Keyed<C>, key: &str) -> Result<u32, Duration> {
    match limiter.check_key(&key.to_string()) {
        Ok(snapshot) => Ok(snapshot.remaining_burst_capacity()),
        Err(not_until) => Err(not_until.wait_time_from(limiter.clock().now())),
    }
}

impl<C> ProjectLimiter for Limiter<C>
where
    C: Clock + Send + Sync,
    C::Instant: Send + Sync,
{
    fn per_minute(&self) -> u32 {
        self.per_minute
    }

    fn check(&self, key: &str) -> Result<u32, Duration> {
        take(&self.inner, key)
    }

    fn public_per_minute(&self) -> u32 {
        self.public_per_minute
    }

    fn check_public(&self, project: &str) -> Result<u32, Duration> {
        // Public first: a refused public request must not use up the secret key's part.
        let public_left = take(&self.public, project)?;
        Ok(public_left.min(take(&self.inner, project)?))
    }

    fn forget_idle(&self) {
        self.inner.retain_recent();
        self.public.retain_recent();
    }
}

/// A limiter on the real clock.
pub fn limiter(per_minute: u32) -> Arc<dyn ProjectLimiter> {
    limiter_with_clock(per_minute, DefaultClock::default())
}

/// A per-project limiter of `per_second` events a second (sending throttles).
pub fn limiter_per_second(per_second: u32) -> Arc<dyn ProjectLimiter> {
    let per_second = NonZeroU32::new(per_second.max(1)).unwrap_or(NonZeroU32::MIN);
    let keyed = || {
        RateLimiter::dashmap_with_clock(Quota::per_second(per_second), DefaultClock::default())
            .with_middleware::<StateInformationMiddleware>()
    };
    let per_minute = per_second.get().saturating_mul(60);
    Arc::new(Limiter { inner: keyed(), public: keyed(), per_minute, public_per_minute: per_minute })
}

/// A limiter on the given clock (tests pass governor's `FakeRelativeClock`).
pub fn limiter_with_clock<C>(per_minute: u32, clock: C) -> Arc<dyn ProjectLimiter>
where
    C: Clock + Clone + Send + Sync + 'static,
    C::Instant: Send + Sync,
{
    let per_minute = per_minute.max(1);
    // In u64: a u32 product wrapped for limits past 53 million a minute, and the public share
    // became a small number (found by turning on overflow checks, issue 29).
    let share = u64::from(per_minute) * u64::from(PUBLIC_SHARE_PERCENT) / 100;
    let public_per_minute = u32::try_from(share).unwrap_or(u32::MAX).max(1);
    let quota = |n: u32| Quota::per_minute(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN));
    let inner = RateLimiter::dashmap_with_clock(quota(per_minute), clock.clone())
        .with_middleware::<StateInformationMiddleware>();
    let public = RateLimiter::dashmap_with_clock(quota(public_per_minute), clock)
        .with_middleware::<StateInformationMiddleware>();
    Arc::new(Limiter { inner, public, per_minute, public_per_minute })
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[test]
    fn the_request_after_the_allowance_waits() {
        let clock = FakeRelativeClock::default();
        let limiter = limiter_with_clock(3, clock.clone());
        assert_eq!(limiter.check("a"), Ok(2));
        assert_eq!(limiter.check("a"), Ok(1));
        assert_eq!(limiter.check("a"), Ok(0));
        let wait = limiter.check("a").unwrap_err();
        assert_eq!(wait, Duration::from_secs(20));
        assert_eq!(limiter.check("b"), Ok(2), "projects have separate allowances");
        clock.advance(Duration::from_secs(20));
        assert_eq!(limiter.check("a"), Ok(0));
    }

    #[test]
    fn public_requests_leave_a_fifth_for_secret_ones() {
        let clock = FakeRelativeClock::default();
        let limiter = limiter_with_clock(10, clock.clone());
        assert_eq!(limiter.public_per_minute(), 8);
        // The public share has fewer left than the whole allowance, so it is what is reported.
        for left in (0..8).rev() {
            assert_eq!(limiter.check_public("p"), Ok(left));
        }
        assert!(limiter.check_public("p").is_err(), "the public share is used up");
        assert_eq!(limiter.check("p"), Ok(1), "secret requests still have their part");
        assert_eq!(limiter.check("p"), Ok(0));
        assert!(limiter.check("p").is_err());
        // Secret traffic can use the whole allowance, and then public requests wait too.
        let limiter = limiter_with_clock(10, clock);
        for _ in 0..10 {
            limiter.check("q").unwrap();
        }
        assert!(limiter.check_public("q").is_err());
    }
}
