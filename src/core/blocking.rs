//! CPU-bound work off the async executor.

use crate::core::error::{Error, Result};

/// Runs CPU-bound work (password hashing, template checks, large decodes) on a blocking thread,
/// so it never holds up the executor threads that serve every other request. A task that
/// panicked is [`Error::Permanent`].
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    boxed(Box::new(move || drop(answer.send(f())))).await?;
    answered.await.map_err(|_| Error::permanent("blocking task ended without its answer"))
}

/// [`blocking`] for a function of any type: one blocking task's code for every call site (as
/// [`crate::db::Db::run`] does), the answer going back by its own channel.
async fn boxed(f: Box<dyn FnOnce() + Send>) -> Result<()> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::permanent(format!("blocking task: {e}")))
}
