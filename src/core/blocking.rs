//! CPU-bound work off the async executor.

use crate::core::error::{Error, Result};

/// Runs CPU-bound work (password hashing, template checks, large decodes) on a blocking thread,
/// so it never holds up the executor threads that serve every other request. A task that
/// panicked is [`Error::Permanent`].
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::permanent(format!("blocking task: {e}")))
}
