//! Resetting or deleting a large project: seeds contacts (1,000,000 by default) and events
//! (10,000,000) straight into the database, then runs the wipe through the database's writer
//! with the job's own loop, while another task writes a row every few milliseconds as a request
//! would. Prints the longest a step held the writer and the longest the other writes
//! waited (goal: a few tens of milliseconds, whatever the size).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tidings::clock;
use tidings::core::projects::start_wipe;
use tidings::db::DbError;
use tidings::db::projects::Wipe;
use tidings::db::wipe::Step;
use tidings::scheduler::wipes::wipe_project;

use crate::analytics::seed_events;
use crate::{Scratch, report, seed};

pub fn wipe_bench(contacts: usize, events: usize, delete: bool, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project) = (&scratch.state, scratch.project.clone());
    let started = Instant::now();
    seed(state, &project, contacts);
    seed_events(state, &project, events);
    println!("seeded {contacts} contacts and {events} events in {:.1} s", started.elapsed().as_secs_f64());

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let kind = if delete { Wipe::Delete } else { Wipe::Reset };
        let id = project.clone();
        let started: Result<(), tidings::core::Error> =
            state.db.write(move |tx| start_wipe(tx, &id, kind)).await;
        assert!(started.is_ok(), "the wipe did not start");

        let probe = Probe::start(state);

        let started = Instant::now();
        let mut steps = Vec::new();
        let mut by_table: Vec<(&'static str, Vec<Duration>)> = Vec::new();
        // The deleting alone, without the commit and what the writer does between transactions.
        let mut works = Vec::new();
        let (rows, _) = wipe_project(&state.db, &project, |taken| {
            steps.push(taken.round_trip);
            works.push(taken.work);
            if let Step::More { table, .. } = taken.step {
                match by_table.iter_mut().find(|(t, _)| *t == table) {
                    Some((_, samples)) => samples.push(taken.round_trip),
                    None => by_table.push((table, vec![taken.round_trip])),
                }
            }
        })
        .await
        .unwrap();
        let took = started.elapsed();
        let mut waits = probe.stop().await;
        println!(
            "{} of the project: {rows} rows in {} steps, {:.1} s ({:.0} rows/s)",
            if delete { "deletion" } else { "reset" },
            steps.len(),
            took.as_secs_f64(),
            rows as f64 / took.as_secs_f64()
        );
        let longest = steps.iter().max().copied().unwrap_or_default();
        for (table, samples) in &mut by_table {
            report(&format!("a step in {table} ({} steps)", samples.len()), samples);
        }
        report("one step (holds the writer)", &mut steps);
        let over = |samples: &[Duration], ms: u64| {
            samples.iter().filter(|d| **d > Duration::from_millis(ms)).count()
        };
        println!(
            "longest writer hold by a step: {:.1} ms; steps over 50 ms: {}, over 100 ms: {}",
            longest.as_secs_f64() * 1000.0,
            over(&steps, 50),
            over(&steps, 100)
        );
        let longest_work = works.iter().max().copied().unwrap_or_default();
        report("its deleting alone (no commit)", &mut works);
        println!(
            "longest deleting of a step: {:.1} ms; over 50 ms: {}",
            longest_work.as_secs_f64() * 1000.0,
            over(&works, 50)
        );
        let worst = waits.iter().max().copied().unwrap_or_default();
        report("a request's write meanwhile", &mut waits);
        println!("longest wait of a request's write: {:.1} ms", worst.as_secs_f64() * 1000.0);
    });
    scratch.close();
}

/// A request's write every 5 ms, timed, while a long job runs.
pub struct Probe {
    running: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<Duration>>,
}

impl Probe {
    pub fn start(state: &tidings::AppState) -> Probe {
        let running = Arc::new(AtomicBool::new(true));
        let (db, on) = (state.db.clone(), running.clone());
        let task = tokio::spawn(async move {
            let mut waits = Vec::new();
            let mut n = 0u64;
            while on.load(Ordering::Relaxed) {
                let t = Instant::now();
                n += 1;
                db.write(move |tx| {
                    tx.execute(
                        "INSERT OR REPLACE INTO settings (key, value, created_at) VALUES ('bench.probe', ?1, ?2)",
                        rusqlite::params![n.to_string(), clock::now_ms()],
                    )?;
                    Ok::<_, DbError>(())
                })
                .await
                .unwrap();
                waits.push(t.elapsed());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            waits
        });
        Probe { running, task }
    }

    /// Stops the writes; how long each waited.
    pub async fn stop(self) -> Vec<Duration> {
        self.running.store(false, Ordering::Relaxed);
        self.task.await.unwrap()
    }
}
