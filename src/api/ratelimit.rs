//! The per-project request rate limit (`[limits] requests_per_minute`), on governor's GCRA.
//!
//! A project may burst up to the whole minute's allowance at once and regains one request every
//! `60 s / limit`. The clock is a parameter so tests can hold time still.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

/// What the key guards ask of the limiter.
pub trait ProjectLimiter: Send + Sync {
    /// The configured requests per minute.
    fn per_minute(&self) -> u32;
    /// Takes one request from the project's allowance: the requests left, or how long to wait.
    fn check(&self, project: &str) -> Result<u32, Duration>;
    /// Drops the state of projects that are back at a full allowance.
    fn forget_idle(&self);
}

struct Limiter<C: Clock> {
    inner: RateLimiter<String, DashMapStateStore<String>, C, StateInformationMiddleware>,
    per_minute: u32,
}

impl<C> ProjectLimiter for Limiter<C>
where
    C: Clock + Send + Sync,
    C::Instant: Send + Sync,
{
    fn per_minute(&self) -> u32 {
        self.per_minute
    }

    fn check(&self, project: &str) -> Result<u32, Duration> {
        match self.inner.check_key(&project.to_string()) {
            Ok(snapshot) => Ok(snapshot.remaining_burst_capacity()),
            Err(not_until) => Err(not_until.wait_time_from(self.inner.clock().now())),
        }
    }

    fn forget_idle(&self) {
        self.inner.retain_recent();
    }
}

/// A limiter on the real clock.
pub fn limiter(per_minute: u32) -> Arc<dyn ProjectLimiter> {
    limiter_with_clock(per_minute, DefaultClock::default())
}

/// A per-project limiter of `per_second` events a second (sending throttles).
pub fn limiter_per_second(per_second: u32) -> Arc<dyn ProjectLimiter> {
    let quota = Quota::per_second(NonZeroU32::new(per_second.max(1)).unwrap_or(NonZeroU32::MIN));
    let inner = RateLimiter::dashmap_with_clock(quota, DefaultClock::default())
        .with_middleware::<StateInformationMiddleware>();
    Arc::new(Limiter { inner, per_minute: per_second.saturating_mul(60) })
}

/// A limiter on the given clock (tests pass governor's `FakeRelativeClock`).
pub fn limiter_with_clock<C>(per_minute: u32, clock: C) -> Arc<dyn ProjectLimiter>
where
    C: Clock + Send + Sync + 'static,
    C::Instant: Send + Sync,
{
    let per_minute = per_minute.max(1);
    let quota = Quota::per_minute(NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN));
    let inner = RateLimiter::dashmap_with_clock(quota, clock).with_middleware::<StateInformationMiddleware>();
    Arc::new(Limiter { inner, per_minute })
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
}
