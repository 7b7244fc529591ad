//! The delivery's CPU work (rendering, MIME and DKIM signing) on one thread per core, fed by a
//! queue.
//!
//! Each message used to be made in tokio's blocking pool (sixteen threads on two cores): every
//! one woke a sleeping thread and went back to sleep after, about three context switches a
//! message, which on a VM (an idle virtual CPU is woken by an interrupt) cost more than the
//! message's MIME. Here a few threads take messages off one queue: under load they find the next
//! message waiting and never sleep.

use std::panic::{AssertUnwindSafe, catch_unwind};

type Job = Box<dyn FnOnce() + Send>;

/// The threads' queue; they end when it is dropped.
pub struct Composers {
    queue: crossbeam_channel::Sender<Job>,
}

impl Composers {
    /// Starts `threads` threads (at least one).
    pub fn start(threads: usize) -> std::io::Result<Composers> {
        let (queue, jobs) = crossbeam_channel::unbounded::<Job>();
        for i in 0..threads.max(1) {
            let jobs = jobs.clone();
            std::thread::Builder::new().name(format!("tidings-compose-{i}")).spawn(move || {
                while let Ok(job) = jobs.recv() {
                    job();
                }
            })?;
        }
        Ok(Composers { queue })
    }

    /// Runs `work` on one of the threads and gives its result; `None` when it panicked (the
    /// thread goes on) or the threads are gone.
    pub async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            if let Ok(result) = catch_unwind(AssertUnwindSafe(work)) {
                let _ = answer.send(result);
            }
        });
        self.queue.send(job).ok()?;
        answered.await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::Composers;

    #[tokio::test]
    async fn work_runs_and_a_panic_leaves_the_threads_working() {
        let composers = Composers::start(1).unwrap();
        assert_eq!(composers.run(|| 2 + 2).await, Some(4));
        assert_eq!(composers.run(|| -> i32 { panic!("a bad message") }).await, None);
        assert_eq!(composers.run(|| "still here").await, Some("still here"));
    }
}
