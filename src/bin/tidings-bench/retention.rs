//! The retention job on a large project: seeds contacts and events (10,000,000 by default)
//! spread over two years, then prunes those past the default year with the job's own loop
//! while a request's write every 5 ms is timed, and returns the space. Prints the longest a
//! step held the writer (goal: at most 100 ms), the longest wait of the other writes, and the
//! database file's size before and after.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tidings::scheduler::retention::{Taken, prune};

use crate::analytics::seed_events_over;
use crate::wipe::Probe;
use crate::{Scratch, report, seed};

fn file_size(state: &tidings::AppState, path: &Path) -> u64 {
    crate::checkpoint_log(state);
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

pub fn retention_bench(contacts: usize, events: usize, days: i64, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project) = (&scratch.state, scratch.project.clone());
    let started = Instant::now();
    seed(state, &project, contacts);
    seed_events_over(state, &project, events, days);
    let path = state.db.path().to_path_buf();
    let before = file_size(state, &path);
    println!(
        "seeded {contacts} contacts and {events} events over {days} days in {:.1} s; file {:.0} MiB",
        started.elapsed().as_secs_f64(),
        before as f64 / 1048576.0
    );
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let probe = Probe::start(state);
        let started = Instant::now();
        let (mut steps, mut works, mut vacuums) = (Vec::new(), Vec::new(), Vec::new());
        let pruned = prune(state, |taken| match taken {
            Taken::Prune(taken) => {
                steps.push(taken.round_trip);
                works.push(taken.work);
            }
            Taken::Vacuum(taken) => vacuums.push(taken.round_trip),
        })
        .await
        .unwrap();
        let took = started.elapsed();
        let mut waits = probe.stop().await;
        let after = file_size(state, &path);
        println!(
            "pruned {} rows in {} steps, {:.1} s ({:.0} rows/s); returned {} pages",
            pruned.rows,
            steps.len(),
            took.as_secs_f64(),
            pruned.rows as f64 / took.as_secs_f64(),
            pruned.pages_returned
        );
        let over = |samples: &[Duration], ms: u64| {
            samples.iter().filter(|d| **d > Duration::from_millis(ms)).count()
        };
        let longest = steps.iter().max().copied().unwrap_or_default();
        println!(
            "longest writer hold by a step: {:.1} ms; steps over 50 ms: {}, over 100 ms: {}",
            longest.as_secs_f64() * 1000.0,
            over(&steps, 50),
            over(&steps, 100)
        );
        report("one step (holds the writer)", &mut steps);
        if !vacuums.is_empty() {
            let longest = vacuums.iter().max().copied().unwrap_or_default();
            println!(
                "{} vacuum steps, {:.1} s in all; longest {:.1} ms",
                vacuums.len(),
                vacuums.iter().sum::<Duration>().as_secs_f64(),
                longest.as_secs_f64() * 1000.0
            );
            report("one vacuum step (holds the writer)", &mut vacuums);
        }
        report("its work alone (no commit)", &mut works);
        let worst = waits.iter().max().copied().unwrap_or_default();
        report("a request's write meanwhile", &mut waits);
        println!("longest wait of a request's write: {:.1} ms", worst.as_secs_f64() * 1000.0);
        println!(
            "database file: {:.0} MiB before, {:.0} MiB after",
            before as f64 / 1048576.0,
            after as f64 / 1048576.0
        );
    });
    scratch.close();
}
