//! The durable scheduler: leases, retries, wake-ups, shutdown and restarts.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tidings::clock;
use tidings::db::jobs::{self, JobRow, NewJob};
use tidings::scheduler::{self, JobError, JobOutcome, Registry};
use tidings::{AppState, db};

use crate::common::{TestApp, test_config};

/// Runs of a test job kind: (job id, started, finished) in ms since the epoch.
type Log = Arc<Mutex<Vec<(i64, i64, i64)>>>;

fn recording(kind: &str, log: &Log, work: Duration) -> Registry {
    let mut registry = Registry::new();
    let log = log.clone();
    registry.register(kind, Duration::from_secs(60), move |ctx| {
        let log = log.clone();
        async move {
            let start = clock::now_ms();
            tokio::time::sleep(work).await;
            log.lock().unwrap().push((ctx.job.id, start, clock::now_ms()));
            Ok(JobOutcome::Done)
        }
    });
    registry
}

async fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn enqueue(state: &AppState, job: NewJob) -> i64 {
    db::write_tx(&mut state.db.conn().unwrap(), |tx| jobs::enqueue(tx, &job)).unwrap().unwrap()
}

fn row(state: &AppState, id: i64) -> JobRow {
    jobs::get(&state.db.conn().unwrap(), id).unwrap().unwrap()
}

#[rocket::async_test]
async fn a_job_whose_lease_expired_is_taken_again() {
    let app = TestApp::new().await;
    let id = enqueue(&app.state, NewJob::new("test.work", &json!({})));
    // A worker claims the job and dies: its lease runs out 50 ms later.
    let claimed = db::write_tx(&mut app.state.db.conn().unwrap(), |tx| {
        jobs::claim(tx, clock::now_ms(), 10, 50, &mut tidings::db::fair::Turns::new(usize::MAX))
    })
    .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(row(&app.state, id).status, "running");

    let log = Log::default();
    let handle = scheduler::start(app.state.clone(), recording("test.work", &log, Duration::ZERO));
    wait_for("the retried job", Duration::from_secs(10), || row(&app.state, id).status == "done").await;
    handle.shutdown().await;
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_eq!(row(&app.state, id).attempts, 2, "the lost attempt counts");
}

#[rocket::async_test]
async fn two_schedulers_never_run_a_job_twice() {
    let app = TestApp::with(|c| {
        c.scheduler.lease_secs = 1;
        c.scheduler.workers = 3;
    })
    .await;
    // A second process on the same database file.
    let other = AppState::open((*app.state.config).clone()).unwrap();
    let ids: Vec<i64> =
        (0..12).map(|n| enqueue(&app.state, NewJob::new("test.slow", &json!({ "n": n })))).collect();

    // Each job outlives the 1 s lease; renewals must keep the other scheduler off it.
    let log = Log::default();
    let a = scheduler::start(app.state.clone(), recording("test.slow", &log, Duration::from_millis(1500)));
    let b = scheduler::start(other.clone(), recording("test.slow", &log, Duration::from_millis(1500)));
    wait_for("every job", Duration::from_secs(30), || log.lock().unwrap().len() >= ids.len()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    a.shutdown().await;
    b.shutdown().await;

    let runs = log.lock().unwrap().clone();
    let mut ran: Vec<i64> = runs.iter().map(|r| r.0).collect();
    ran.sort();
    assert_eq!(ran, ids, "every job ran exactly once: {runs:?}");
    for id in ids {
        let row = row(&app.state, id);
        assert_eq!((row.status.as_str(), row.attempts), ("done", 1), "{row:?}");
    }
}

#[rocket::async_test]
async fn failures_are_retried_with_backoff_then_fail_for_good() {
    let app = TestApp::new().await;
    let attempts = Arc::new(Mutex::new(Vec::<i64>::new()));
    let mut registry = Registry::new();
    let seen = attempts.clone();
    registry.register("test.flaky", Duration::from_secs(60), move |ctx| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(clock::now_ms());
            if ctx.job.attempt < 3 {
                Err(JobError::Retry(format!("try {}", ctx.job.attempt)))
            } else {
                Ok(JobOutcome::Done)
            }
        }
    });
    registry.register("test.broken", Duration::from_secs(60), |_| async {
        Err(JobError::Retry("always".into()))
    });
    registry.register("test.fatal", Duration::from_secs(60), |_| async {
        Err(JobError::Permanent("bad input".into()))
    });
    let flaky = enqueue(&app.state, NewJob::new("test.flaky", &json!({})));
    let broken = enqueue(&app.state, NewJob::new("test.broken", &json!({})).max_attempts(2));
    let fatal = enqueue(&app.state, NewJob::new("test.fatal", &json!({})));

    let handle = scheduler::start(app.state.clone(), registry);
    wait_for("the three jobs to settle", Duration::from_secs(20), || {
        row(&app.state, flaky).status == "done"
            && row(&app.state, broken).status == "failed"
            && row(&app.state, fatal).status == "failed"
    })
    .await;
    handle.shutdown().await;

    let times = attempts.lock().unwrap().clone();
    assert_eq!(times.len(), 3);
    assert!(times[1] - times[0] >= 1000, "first retry after the 1 s base: {times:?}");
    assert!(times[2] - times[1] >= 2000, "second retry after twice that: {times:?}");
    let broken = row(&app.state, broken);
    assert_eq!((broken.attempts, broken.last_error.as_deref()), (2, Some("always")));
    let fatal = row(&app.state, fatal);
    assert_eq!((fatal.attempts, fatal.last_error.as_deref()), (1, Some("bad input")));
}

#[rocket::async_test]
async fn enqueue_wakes_an_idle_scheduler() {
    let app = TestApp::with(|c| c.scheduler.max_idle_secs = 3600).await;
    let log = Log::default();
    let handle = scheduler::start(app.state.clone(), recording("test.now", &log, Duration::ZERO));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let queued_at = Instant::now();
    scheduler::enqueue(&app.state, NewJob::new("test.now", &json!({}))).await.unwrap();
    wait_for("the woken job", Duration::from_secs(5), || !log.lock().unwrap().is_empty()).await;
    assert!(queued_at.elapsed() < Duration::from_secs(2));
    // A job due later is picked up when its time comes, without a wake-up.
    scheduler::enqueue(&app.state, NewJob::new("test.now", &json!({})).at(clock::now_ms() + 300))
        .await
        .unwrap();
    wait_for("the delayed job", Duration::from_secs(5), || log.lock().unwrap().len() == 2).await;
    handle.shutdown().await;
}

#[rocket::async_test]
async fn jobs_survive_a_restart_and_shutdown_hands_running_jobs_back() {
    let dir = Arc::new(tempfile::TempDir::new().unwrap());
    let config = test_config(dir.path());
    let (later, running) = {
        let state = AppState::open(config.clone()).unwrap();
        let running = enqueue(&state, NewJob::new("test.long", &json!({})));
        // The first process is stopped while its job runs.
        let mut registry = Registry::new();
        registry.register("test.long", Duration::from_secs(600), |_| async {
            tokio::time::sleep(Duration::from_secs(600)).await;
            Ok(JobOutcome::Done)
        });
        let handle = scheduler::start(state.clone(), registry);
        wait_for("the long job to start", Duration::from_secs(5), || {
            row(&state, running).status == "running"
        })
        .await;
        handle.shutdown().await;
        let handed_back = row(&state, running);
        assert_eq!((handed_back.status.as_str(), handed_back.attempts), ("queued", 0), "{handed_back:?}");
        assert_eq!(handed_back.lease, None);
        // A job queued for later, just before the process goes away.
        let later = enqueue(&state, NewJob::new("test.resume", &json!({ "n": 1 })).at(clock::now_ms() + 200));
        (later, running)
    };

    // A new process on the same file finishes both.
    let state = AppState::open(config).unwrap();
    let log = Log::default();
    let mut registry = recording("test.resume", &log, Duration::ZERO);
    let log_long = log.clone();
    registry.register("test.long", Duration::from_secs(60), move |ctx| {
        let log = log_long.clone();
        async move {
            log.lock().unwrap().push((ctx.job.id, 0, 0));
            Ok(JobOutcome::Done)
        }
    });
    let handle = scheduler::start(state.clone(), registry);
    wait_for("both jobs", Duration::from_secs(10), || {
        row(&state, later).status == "done" && row(&state, running).status == "done"
    })
    .await;
    handle.shutdown().await;
    assert_eq!(log.lock().unwrap().len(), 2);
    assert_eq!(row(&state, running).attempts, 1);
}

#[rocket::async_test]
async fn periodic_jobs_exist_once_and_report_health() {
    let app = TestApp::new().await;
    let other = AppState::open((*app.state.config).clone()).unwrap();
    let a = scheduler::start(app.state.clone(), scheduler::registry(&app.state.config));
    let b = scheduler::start(other, scheduler::registry(&app.state.config));
    let count = |kind: &str| jobs::of_kind(&app.state.db.conn().unwrap(), kind).unwrap().len();
    wait_for("the sweeps to run", Duration::from_secs(10), || {
        jobs::of_kind(&app.state.db.conn().unwrap(), "sweep.idempotency")
            .unwrap()
            .first()
            .is_some_and(|j| j.status == "queued" && j.run_at > clock::now_ms() + 60_000)
    })
    .await;
    assert_eq!(count("sweep.idempotency"), 1);
    assert_eq!(count("sweep.jobs"), 1);
    let res = app.client.get("/health").dispatch().await;
    let health = crate::common::body(res).await;
    assert_eq!(health["scheduler"], json!("running"));
    assert_eq!(health["database"], json!("ok"));
    a.shutdown().await;
    b.shutdown().await;
    let res = app.client.get("/health").dispatch().await;
    assert_eq!(crate::common::body(res).await["scheduler"], json!("stopped"));
}
