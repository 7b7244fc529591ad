//! How cost grows with the audience (issue 36, item 4): one project grown through the sizes
//! asked for (100,000, 1,000,000 and 10,000,000 contacts by default), each contact with ten
//! custom fields and ten events. At each size it prints what the growth step cost and what the
//! project costs to query, then a table of every size with the cost per contact.
//!
//! - Contacts arrive through the CSV import job's batches (files of [`FILE_ROWS`] rows, ten
//!   columns each): the import rate is the job's, with the upserts, the field catalogue and the
//!   search index kept as in production.
//! - Events go straight into the table through the triggers that keep the rollups, ten for each
//!   new contact, in time order over the 90 days before now (the last size's events end now).
//! - Database bytes are the pages in use (`page_count - freelist_count`), so the space a deleted
//!   expansion left for reuse is not counted.
//! - The queries run through the real app in process: a 3-filter dynamic segment's count, the
//!   activity and analytics endpoints, and `/contacts` searches, each `--repeat` times (p95).
//! - A campaign to every subscribed contact is expanded into email rows batch by batch as its
//!   job does (a transaction per batch, alone); its rows are deleted again before the next size
//!   so that each size's bytes count contacts and events only.
//! - RSS is this process's (`VmRSS`, and `VmHWM` for the peak so far).
//! - Where the import's and the events' time went ([`Usage`]): wall, user and system CPU and
//!   the bytes read from and written to storage, per contact and per event, with the events'
//!   progress printed at every tenth of a size's step (so a cost that turns at one database
//!   size, say where it outgrows memory, shows where it turns).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rocket::http::Header;
use rocket::local::blocking::Client;
use rusqlite::params;
use serde_json::{Value, json};
use tidings::core::campaigns::{EXPAND_BATCH, Expansion, expand_step};
use tidings::{AppState, build_rocket, clock, db};

use crate::analytics::{TIMED, event_name};
use crate::contacts::{csv_file, import};
use crate::usage::{Spent, Usage};
use crate::{Lcg, Scratch, memory, report, three_filters};

/// Rows of each imported file.
const FILE_ROWS: usize = 100_000;
/// Events for each contact.
const EVENTS_PER_CONTACT: usize = 10;
/// Contacts whose events are written per transaction.
const EVENT_CHUNK: usize = 10_000;

/// What one size measured.
struct Row {
    contacts: usize,
    import_rate: f64,
    events_rate: f64,
    /// A contact's and an event's cost: wall, user and system µs, bytes read and written.
    import_cost: [f64; 5],
    events_cost: [f64; 5],
    bytes: u64,
    segment_p95: Duration,
    expansion_rate: f64,
    analytics_p95: Duration,
    activity_p95: Duration,
    search_p95: Duration,
    rss: (f64, f64),
}

pub fn scale_bench(sizes: &[usize], repeat: usize, dir: Option<PathBuf>) {
    let scratch = Scratch::open(dir);
    let (state, project, key) = (&scratch.state, scratch.project.clone(), scratch.secret_key.clone());
    let largest = sizes.iter().copied().max().unwrap_or(0);
    verified_domain(state, &project);
    let client = Client::untracked(build_rocket(state.clone())).expect("rocket");
    let auth = Header::new("Authorization", format!("Bearer {key}"));
    let time = |path: &str, body: Option<&Value>| -> Duration {
        let mut samples = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = Instant::now();
            let res = match body {
                Some(body) => {
                    client.post(path.to_string()).header(auth.clone()).body(body.to_string()).dispatch()
                }
                None => client.get(path.to_string()).header(auth.clone()).dispatch(),
            };
            assert_eq!(res.status().code, 200, "{path}");
            let _ = res.into_bytes();
            samples.push(t.elapsed());
        }
        report(&format!("  {} {path}", if body.is_some() { "POST" } else { "GET" }), &mut samples)
    };
    let post = |path: &str, body: Value| crate::post(&client, &auth, path, body);
    let segment = post("/segments", json!({ "name": "Pro in Oslo over 30", "condition": three_filters() }));
    let refresh = format!("/segments/{}/refresh", segment["id"].as_str().unwrap());

    let mut rng = Lcg(11);
    let mut rows: Vec<Row> = Vec::new();
    let mut have = 0;
    let mut events_written = 0;
    let mut events_after = 0;
    for &size in sizes {
        if size <= have {
            continue;
        }
        println!("\n== {size} contacts");
        let mut importing = Duration::ZERO;
        let mut import_spent = Spent::default();
        for from in (have..size).step_by(FILE_ROWS) {
            let file = csv_file(&mut rng, from..(from + FILE_ROWS).min(size), "", true);
            let usage = Usage::now();
            let (took, job) = import(state, &project, &file, None);
            import_spent += usage.since();
            assert_eq!(job.imported as usize, (from + FILE_ROWS).min(size) - from, "every row a new contact");
            importing += took;
        }
        let import_rate = (size - have) as f64 / importing.as_secs_f64();
        println!("imported {} contacts: {import_rate:.0} rows/s", size - have);
        println!("  {}", import_spent.describe(size - have, "contact"));
        let import_cost = import_spent.per_item(size - have);
        let usage = Usage::now();
        let step = EventStep {
            written: events_written,
            total: largest * EVENTS_PER_CONTACT,
            expect: (size - have) * EVENTS_PER_CONTACT,
        };
        let new_events = seed_events(state, &project, &mut events_after, &step);
        let events_spent = usage.since();
        let events_rate = events_spent.rate(new_events);
        events_written += new_events;
        println!("wrote {new_events} events: {}", events_spent.describe(new_events, "event"));
        have = size;
        let bytes = used_bytes(state);
        println!(
            "database pages in use: {:.0} MiB, {:.0} bytes a contact",
            bytes as f64 / 1048576.0,
            bytes as f64 / size as f64
        );

        let segment_p95 = time(&refresh, Some(&json!({})));
        let worst = |paths: &[&str]| paths.iter().map(|p| time(p, None)).max().unwrap_or_default();
        let analytics: Vec<&str> = TIMED.iter().copied().filter(|p| p.starts_with("/analytics")).collect();
        let activity: Vec<&str> = TIMED.iter().copied().filter(|p| p.starts_with("/activity")).collect();
        let analytics_p95 = worst(&analytics);
        let activity_p95 = worst(&activity);
        let search_p95 =
            worst(&["/contacts?search=hopper4242", "/contacts?search=torvalds99", "/contacts?search=gmail"]);
        let expansion_rate = expand_campaign(state, &post, size == largest);
        let rss = memory(std::process::id());
        println!("RSS {:.0} MiB, peak so far {:.0} MiB", rss.0, rss.1);
        rows.push(Row {
            contacts: size,
            import_rate,
            events_rate,
            import_cost,
            events_cost: events_spent.per_item(new_events),
            bytes,
            segment_p95,
            expansion_rate,
            analytics_p95,
            activity_p95,
            search_p95,
            rss,
        });
    }
    drop(client);
    print_table(&rows);
    scratch.close();
}

/// A verified sender domain for the campaign (expansion neither signs nor looks it up).
fn verified_domain(state: &AppState, project: &str) {
    let mut conn = state.db.conn().unwrap();
    let now = clock::now_ms();
    db::write_tx(&mut conn, |tx| {
        db::domains::insert(
            tx,
            &db::domains::Domain {
                id: db::new_id(),
                project_id: project.to_string(),
                domain: "example.test".into(),
                status: "verified".into(),
                token: "bench".into(),
                dkim_selector: "tidings".into(),
                dkim_private_key: String::new(),
                dkim_public_key: String::new(),
                checks: None,
                created_at: now,
                verified_at: Some(now),
                last_checked_at: Some(now),
                next_check_at: now + 86_400_000,
            },
        )
    })
    .expect("domain");
}

/// The next chunk of contacts to write events for. `+project_id` keeps the planner on the
/// primary key's range: through `contacts_by_created (project_id)` it read every contact of
/// the project and sorted them for each chunk, 0.13 s at 1,000,000 contacts and 0.9 s at
/// 10,000,000, which was most of what an event seemed to cost more at the larger sizes.
const NEXT_CONTACTS: &str =
    "SELECT seq, id FROM contacts WHERE seq > ?1 AND +project_id = ?2 ORDER BY seq LIMIT ?3";

/// One size's events: how many the run wrote before them, will write in all, and this step
/// is expected to write (for its progress lines).
struct EventStep {
    written: usize,
    total: usize,
    expect: usize,
}

/// Writes [`EVENTS_PER_CONTACT`] events for each contact after `after_seq` (in the order they
/// were made), `EVENT_CHUNK` contacts a transaction, and moves `after_seq` past them. Event `k`
/// of the whole run is at its share `k / total` of the 90 days before now, so every size's
/// events follow the last one's. At every tenth of the step it prints what that tenth cost
/// and the database's size.
fn seed_events(state: &AppState, project: &str, after_seq: &mut i64, step: &EventStep) -> usize {
    let (written, total) = (step.written, step.total);
    let span = 90 * 86_400_000i64;
    let start = clock::now_ms() - span;
    let mut rng = Lcg(5);
    let mut conn = state.db.conn().unwrap();
    let mut count = 0;
    let tenth = (step.expect / 10).max(1);
    let (mut tenth_usage, mut tenth_from) = (Usage::now(), 0);
    loop {
        let chunk: Vec<(i64, String)> = {
            let mut stmt = conn.prepare_cached(NEXT_CONTACTS).unwrap();
            stmt.query_map(params![*after_seq, project, EVENT_CHUNK as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let Some((last, _)) = chunk.last() else { return count };
        *after_seq = *last;
        let ids: Vec<&String> = chunk.iter().map(|(_, id)| id).collect();
        db::write_tx(&mut conn, |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for k in 0..ids.len() * EVENTS_PER_CONTACT {
                let name = event_name(&mut rng);
                let at = start + (span as i128 * (written + count + k) as i128 / total.max(1) as i128) as i64;
                insert.execute(params![db::new_id(), project, ids[k % ids.len()], name, "{\"plan\":\"pro\"}", at])?;
            }
            Ok::<_, db::DbError>(())
        })
        .expect("events");
        count += ids.len() * EVENTS_PER_CONTACT;
        if count - tenth_from >= tenth {
            let file = std::fs::metadata(state.db.path()).map_or(0, |m| m.len());
            println!(
                "  {:>3} %: {}; database file {:.1} GiB",
                count * 100 / step.expect.max(1),
                tenth_usage.since().describe(count - tenth_from, "event"),
                file as f64 / f64::from(1 << 30)
            );
            (tenth_usage, tenth_from) = (Usage::now(), count);
        }
    }
}

/// The database's pages in use, in bytes.
fn used_bytes(state: &AppState) -> u64 {
    let conn = state.db.conn().unwrap();
    let pragma = |name: &str| conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0)).unwrap();
    ((pragma("page_count") - pragma("freelist_count")) * pragma("page_size")) as u64
}

/// Creates a campaign to every subscribed contact, expands it as its job does, and returns the
/// rows made a second. Its rows are deleted afterwards unless `keep`.
fn expand_campaign(state: &AppState, post: &dyn Fn(&str, Value) -> Value, keep: bool) -> f64 {
    let created = post(
        "/campaigns",
        json!({ "name": "Newsletter", "subject": "News for {{ firstName ?? \"you\" }}", "body": crate::mail::campaign_body(),
            "from": "news@example.test", "fromName": "Example", "audienceType": "ALL" }),
    );
    let id = created["data"]["id"].as_str().unwrap().to_string();
    // The send only queues the job; this runs its batches in its stead.
    post(&format!("/campaigns/{id}/send"), json!({}));
    let mut conn = state.db.conn().unwrap();
    let started = Instant::now();
    loop {
        let step = db::write_tx(&mut conn, |tx| expand_step(tx, &id, EXPAND_BATCH, clock::now_ms()))
            .expect("expand");
        if step != Expansion::Running {
            break;
        }
    }
    let took = started.elapsed().as_secs_f64();
    let rows: i64 =
        conn.query_row("SELECT count(*) FROM emails WHERE campaign_id = ?1", [&id], |r| r.get(0)).unwrap();
    println!("campaign expanded: {rows} email rows in {took:.1} s ({:.0} rows/s)", rows as f64 / took);
    if !keep {
        let started = Instant::now();
        db::write_tx(&mut conn, |tx| {
            tx.execute("DELETE FROM emails WHERE campaign_id = ?1", [&id])?;
            Ok::<_, db::DbError>(())
        })
        .expect("delete the campaign's rows");
        println!("  its rows deleted in {:.1} s", started.elapsed().as_secs_f64());
    }
    rows as f64 / took
}

fn print_table(rows: &[Row]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "\n| contacts | import rows/s | events/s | bytes a contact | segment count p95 | expansion rows/s | analytics p95 (worst) | activity p95 (worst) | search p95 (worst) | RSS / peak |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.1} ms | {:.0} | {:.1} ms | {:.1} ms | {:.1} ms | {:.0} / {:.0} MiB |",
            r.contacts,
            r.import_rate,
            r.events_rate,
            r.bytes as f64 / r.contacts as f64,
            ms(r.segment_p95),
            r.expansion_rate,
            ms(r.analytics_p95),
            ms(r.activity_p95),
            ms(r.search_p95),
            r.rss.0,
            r.rss.1
        );
    }
    println!("\nWhere the growth steps' time went (this process, per item of the step):\n");
    println!("| contacts | item | wall µs | user µs | system µs | read B | written B |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        for (item, [wall, user, system, read, written]) in
            [("contact", r.import_cost), ("event", r.events_cost)]
        {
            println!(
                "| {} | {item} | {wall:.1} | {user:.1} | {system:.1} | {read:.0} | {written:.0} |",
                r.contacts
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// The chunk query walks the primary key's range, whatever the number of contacts: no step
    /// of its plan scans or sorts.
    #[test]
    fn the_next_chunk_of_contacts_is_a_range_of_the_primary_key() {
        let mut conn = Connection::open_in_memory().unwrap();
        tidings::db::migrate::run(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::NEXT_CONTACTS))
            .unwrap()
            .query_map(rusqlite::params![0, "p", 10], |r| r.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(plan, ["SEARCH contacts USING INTEGER PRIMARY KEY (rowid>?)"]);
    }
}
