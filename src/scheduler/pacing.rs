//! Long deletions that must not hold the writer: a project's wipe and the retention pruning run
//! as steps, each a transaction of its own bounded in time, with a pause after each as long as
//! the step took. So such work has at most half of the writer's time, requests are served
//! between the steps, and the checkpointer keeps up with the log it writes (without the pause,
//! a wipe of 10,000,000 events left the writer checkpointing the log itself every thirty steps
//! or so, each time holding it for 100 to 300 ms).

use std::time::{Duration, Instant};

use crate::db::{Db, DbError, Tx};

/// One step as it went.
pub struct Paced<S> {
    /// What the step said.
    pub step: S,
    /// From asking the writer to its answer: the work, the commit, and anything the writer
    /// did before it (other writes, a checkpoint).
    pub round_trip: Duration,
    /// The work alone.
    pub work: Duration,
}

/// Runs the steps `next` gives, in the writer alone, until it gives none. `next` sees the step
/// before (none at first) and returns the next one, or `None` to stop.
pub async fn run<S, F, G>(db: &Db, mut next: F) -> Result<(), DbError>
where
    F: FnMut(Option<&Paced<S>>) -> Option<G>,
    G: FnOnce(&Tx) -> Result<S, DbError> + Send + 'static,
    S: Send + 'static,
{
    let mut before: Option<Paced<S>> = None;
    while let Some(step) = next(before.as_ref()) {
        if let Some(before) = &before {
            tokio::time::sleep(before.round_trip).await;
        }
        let asked = Instant::now();
        let (step, work) = db
            .write_alone(move |tx| {
                let started = Instant::now();
                let step = step(tx)?;
                Ok::<_, DbError>((step, started.elapsed()))
            })
            .await?;
        before = Some(Paced { step, round_trip: asked.elapsed(), work });
    }
    Ok(())
}
