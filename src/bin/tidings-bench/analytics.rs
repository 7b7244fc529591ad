//! Activity and analytics on a large project: seeds events (10,000,000 by default) over 90 days
//! straight into the database, through the triggers that keep the rollups, then times the
//! activity and analytics endpoints through the real app in process (goal: p95 ≤ 50 ms).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocket::http::Header;
use rocket::local::blocking::Client;
use rusqlite::params;
use tidings::{AppState, build_rocket, clock, db};

use crate::{Lcg, Scratch, report, seed};

pub fn analytics_bench(events: usize, contacts: usize, repeat: usize, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project, secret_key) = (&scratch.state, scratch.project.clone(), scratch.secret_key.clone());
    seed(state, &project, contacts);
    let started = Instant::now();
    seed_events(state, &project, events);
    println!("seeded {events} events for {contacts} contacts in {:.1} s", started.elapsed().as_secs_f64());

    let client = Client::untracked(build_rocket(state.clone())).expect("rocket");
    let auth = Header::new("Authorization", format!("Bearer {secret_key}"));
    let time = |path: &str| {
        let mut samples: Vec<Duration> = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = Instant::now();
            let res = client.get(path.to_string()).header(auth.clone()).dispatch();
            assert_eq!(res.status().code, 200, "{path}");
            let _ = res.into_bytes();
            samples.push(t.elapsed());
        }
        report(&format!("GET {path}"), &mut samples);
    };
    for path in TIMED {
        time(path);
    }
    drop(client);
    scratch.close();
}

/// The activity and analytics requests timed.
pub const TIMED: &[&str] = &[
    "/activity?limit=50",
    "/activity?types=event&limit=50",
    "/activity?types=bounce,complaint&limit=50",
    "/activity?types=complaint&limit=50",
    "/activity/stats",
    "/activity/types",
    "/activity/recent-count",
    "/activity/upcoming",
    "/analytics/timeseries?interval=day&from=2026-08-26",
    "/analytics/timeseries?interval=hour",
    "/analytics/top-events",
    "/analytics/campaign-stats",
];

/// Event names and their shares (in thousandths) of what is seeded.
const MIX: &[(&str, u64)] = &[
    ("page.viewed", 350),
    ("signup", 60),
    ("purchase", 40),
    ("feature.used", 130),
    ("email.sent", 200),
    ("email.delivered", 120),
    ("email.opened", 60),
    ("email.clicked", 25),
    ("email.bounced", 10),
    ("email.complained", 1),
    ("contact.unsubscribed", 4),
];

/// An event name drawn from [`MIX`] by its share.
pub fn event_name(rng: &mut Lcg) -> &'static str {
    let total: u64 = MIX.iter().map(|(_, w)| w).sum();
    let mut pick = rng.next_u64() % total;
    MIX.iter()
        .find(|(_, w)| {
            if pick < *w {
                true
            } else {
                pick -= w;
                false
            }
        })
        .map_or(MIX[0].0, |(name, _)| name)
}

/// Inserts `events` events of the project's contacts, spread evenly over the last 90 days in
/// time order with the names of [`MIX`], through the triggers that keep the rollups.
pub fn seed_events(state: &AppState, project: &str, events: usize) {
    seed_events_over(state, project, events, 90);
}

/// Seeds `events` events spread evenly over the `days` days before now, in the order written.
pub fn seed_events_over(state: &AppState, project: &str, events: usize, days: i64) {
    let ids: Vec<String> = {
        let conn = state.db.conn().unwrap();
        let mut stmt = conn.prepare("SELECT id FROM contacts WHERE project_id = ?1").unwrap();
        stmt.query_map([project], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    let now = clock::now_ms();
    let span = days * 24 * 3_600_000i64;
    let mut rng = Lcg(42);
    let mut conn = state.db.conn().unwrap();
    let batch = 100_000;
    let mut written = 0;
    while written < events {
        let n = batch.min(events - written);
        db::write_tx(&mut conn, |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for k in 0..n {
                let name = event_name(&mut rng);
                let contact = &ids[(rng.next_u64() % ids.len() as u64) as usize];
                // Time-ordered, as they are written: spread evenly over the days.
                let at = now - span + (span * (written + k) as i64) / events as i64;
                insert.execute(params![db::new_id(), project, contact, name, "{\"plan\":\"pro\"}", at])?;
            }
            Ok::<_, tidings::db::DbError>(())
        })
        .expect("seed events");
        written += n;
    }
}
