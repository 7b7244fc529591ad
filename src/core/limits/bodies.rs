//! The memory all request bodies being read may take together (`[limits] body_memory_bytes`):
//! each body reserves its reckoned share before it is read and gives it back when its handler
//! is done, so many large bodies at once wait their turn instead of exhausting the server.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::core::error::{Error, Limit, Result};

/// The memory every JSON body being read and parsed at once may take (`[limits]
/// body_memory_bytes`), so a burst of large bodies waits instead of exhausting the server.
/// Each body is reckoned from its length before it is read: four times the length (the read
/// buffer as it grows, the parsed copy; 2.2 times was measured at worst) and what its structure
/// may cost once parsed, up to 32 times the length and at most 12 MiB (a body at the limits of
/// [`crate::bounded_json::REQUEST`] measured about 4 MiB at worst: `tests/integration/memory_bounds.rs`).
pub struct BodyBudget {
    permits: Arc<Semaphore>,
    total_kib: u32,
}

/// A body's share of the [`BodyBudget`], given back when dropped.
pub struct Reserved(#[expect(dead_code, reason = "held for its drop")] OwnedSemaphorePermit);

/// How long a body waits for room in the [`BodyBudget`] before it is refused (429).
const BUDGET_WAIT: Duration = Duration::from_secs(10);

impl BodyBudget {
    pub fn new(bytes: u64) -> BodyBudget {
        let total_kib =
            u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX).min(Semaphore::MAX_PERMITS as u32);
        BodyBudget { permits: Arc::new(Semaphore::new(total_kib as usize)), total_kib }
    }

    /// The memory, in KiB, a body of `length` bytes is reckoned to take; never more than the
    /// whole budget, so the longest body allowed can always be read on its own.
    fn cost_kib(&self, length: u64) -> u32 {
        let bytes = length.saturating_mul(4).saturating_add(length.saturating_mul(32).min(12 << 20));
        u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX).clamp(1, self.total_kib)
    }

    /// Waits at most `wait` for room for a body of `length` bytes.
    pub async fn reserve_within(&self, length: u64, wait: Duration) -> Option<Reserved> {
        let wanted = self.permits.clone().acquire_many_owned(self.cost_kib(length));
        match tokio::time::timeout(wait, wanted).await {
            Ok(Ok(permit)) => Some(Reserved(permit)),
            _ => None,
        }
    }

    /// Waits for room for a body of `length` bytes: 429 after [`BUDGET_WAIT`].
    pub async fn reserve(&self, length: u64) -> Result<Reserved> {
        match self.reserve_within(length, BUDGET_WAIT).await {
            Some(reserved) => Ok(reserved),
            None => Err(Error::OverLimit(Limit::Rate {
                message:
                    "The server is reading as many large request bodies as its memory allows; retry shortly"
                        .into(),
                wait: Duration::from_secs(1),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_reckoned_from_its_length_within_the_whole_budget() {
        let budget = BodyBudget::new(64 << 20);
        assert_eq!(budget.cost_kib(0), 1, "every body takes a share");
        assert_eq!(budget.cost_kib(1024), 4 + 32);
        assert_eq!(budget.cost_kib(40 << 20), 64 * 1024, "never more than the whole budget");
        assert_eq!(budget.cost_kib(u64::MAX), 64 * 1024);
        assert_eq!(BodyBudget::new(u64::MAX).cost_kib(8 << 20), (32 + 12) * 1024);
    }

    #[tokio::test]
    async fn a_body_waits_until_a_share_is_given_back() {
        let budget = Arc::new(BodyBudget::new(1 << 20));
        let first = budget.reserve(1 << 20).await.unwrap();
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.reserve(100).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "no room while the whole budget is held");
        drop(first);
        assert!(waiting.await.unwrap().is_ok(), "room once it is given back");
    }
}
