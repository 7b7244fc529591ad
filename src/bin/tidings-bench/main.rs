//! Benchmarks that print figures (no pass/fail): `cargo run --release --bin tidings-bench -- <bench>`.
//!
//! - `contacts` seeds N contacts with realistic custom fields straight into a fresh database,
//!   then times `GET /contacts` (first page, with and without `search`) and `GET /contacts/fields`
//!   through the real Rocket app in process, and a CSV import of about 5 MiB (60,000 rows x 10
//!   columns) through the import job's batches.
//! - `segments` seeds the same contacts, then times counting dynamic segments and computing a
//!   tracked segment's membership, from nothing and after churn.
//! - `analytics` seeds 10,000,000 events over 90 days and times the activity and analytics
//!   endpoints.
//! - `wipe` seeds 1,000,000 contacts and 10,000,000 events, then resets (or deletes) the project
//!   in the job's batches and prints the longest writer hold of a batch.
//! - `retention` seeds 10,000,000 events over two years, then runs the retention job on them
//!   and prints its longest writer hold and the file's size before and after.
//! - `scale` grows one project through 100,000, 1,000,000 and 10,000,000 contacts (ten fields
//!   and ten events each) and prints, for each size, the import rate, bytes a contact, a
//!   segment's count, a campaign's expansion, the activity, analytics and search p95, and RSS.
//! - `render` and `dkim` time the per-message work of delivery on one core.
//!
//! The campaign benchmark (a million recipients through the built binary) is `cargo bench
//! --bench campaign`: it needs the test DNS server and SMTP sink, which are dev-dependencies.

mod analytics;
mod contacts;
mod mail;
mod retention;
mod scale;
mod seed;
mod segments;
mod usage;
mod wipe;

pub use seed::{Lcg, checkpoint_log, memory, person, seed, setup_project, tempfile_dir};

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rocket::http::Header;
use rocket::local::blocking::Client;
use serde_json::{Value, json};

#[derive(Parser)]
#[command(name = "tidings-bench", about = "Tidings benchmarks; they print figures")]
struct Args {
    #[command(subcommand)]
    bench: Bench,
}

#[derive(Subcommand)]
enum Bench {
    /// DKIM signing (RSA-2048) of a 5 KB message, on one core.
    Dkim {
        #[arg(long, default_value_t = 2000)]
        messages: usize,
    },
    /// Each step of making one campaign message (render, tracking, text part, MIME, DKIM), on one core.
    Compose {
        #[arg(long, default_value_t = 2000)]
        messages: usize,
    },
    /// Rendering a realistic 5 KB campaign body with 10 variables, on one core.
    Render {
        /// How long to render.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
    },
    /// Contacts at scale: list, search, field catalogue, CSV import.
    Contacts {
        /// Contacts to seed.
        #[arg(long, default_value_t = 1_000_000)]
        contacts: usize,
        /// Rows of the CSV file to import.
        #[arg(long, default_value_t = 60_000)]
        csv_rows: usize,
        /// Requests per timed endpoint.
        #[arg(long, default_value_t = 30)]
        repeat: usize,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Segments at scale: counting dynamic segments, computing a tracked one.
    Segments {
        /// Contacts to seed.
        #[arg(long, default_value_t = 1_000_000)]
        contacts: usize,
        /// Counts per timed segment.
        #[arg(long, default_value_t = 10)]
        repeat: usize,
        /// Share of contacts that move in or out between the two computations.
        #[arg(long, default_value_t = 0.1)]
        churn: f64,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Activity and analytics over many events.
    Analytics {
        /// Events to seed.
        #[arg(long, default_value_t = 10_000_000)]
        events: usize,
        /// Contacts they belong to.
        #[arg(long, default_value_t = 100_000)]
        contacts: usize,
        /// Requests per timed endpoint.
        #[arg(long, default_value_t = 30)]
        repeat: usize,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// The retention job on a large project: the longest writer hold, and the space returned.
    Retention {
        /// Contacts to seed.
        #[arg(long, default_value_t = 100_000)]
        contacts: usize,
        /// Events to seed.
        #[arg(long, default_value_t = 10_000_000)]
        events: usize,
        /// The days the events are spread over (those before the last 365 are pruned).
        #[arg(long, default_value_t = 730)]
        days: i64,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// How cost grows with the audience: one project grown through the sizes, measured at each.
    Scale {
        /// The sizes, in contacts, in increasing order.
        #[arg(long, value_delimiter = ',', default_value = "100000,1000000,10000000")]
        sizes: Vec<usize>,
        /// Requests per timed endpoint.
        #[arg(long, default_value_t = 20)]
        repeat: usize,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Resetting (or deleting) a large project in the job's batches: the longest writer hold.
    Wipe {
        /// Contacts to seed.
        #[arg(long, default_value_t = 1_000_000)]
        contacts: usize,
        /// Events to seed.
        #[arg(long, default_value_t = 10_000_000)]
        events: usize,
        /// Delete the project instead of resetting it.
        #[arg(long)]
        delete: bool,
        /// Directory for the database (default: a new temporary directory, removed afterwards).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

fn main() {
    match Args::parse().bench {
        Bench::Render { seconds } => mail::render_bench(seconds),
        Bench::Dkim { messages } => mail::dkim_bench(messages),
        Bench::Compose { messages } => mail::compose_bench(messages),
        Bench::Contacts { contacts, csv_rows, repeat, dir } => {
            contacts::contacts_bench(contacts, csv_rows, repeat, dir)
        }
        Bench::Segments { contacts, repeat, churn, dir } => {
            segments::segments_bench(contacts, repeat, churn, dir)
        }
        Bench::Analytics { events, contacts, repeat, dir } => {
            analytics::analytics_bench(events, contacts, repeat, dir)
        }
        Bench::Scale { sizes, repeat, dir } => scale::scale_bench(&sizes, repeat, dir),
        Bench::Wipe { contacts, events, delete, dir } => wipe::wipe_bench(contacts, events, delete, dir),
        Bench::Retention { contacts, events, days, dir } => {
            retention::retention_bench(contacts, events, days, dir)
        }
    }
}

/// A fresh database in the benchmark's directory (a temporary one unless `--dir` names one)
/// with a user and a project.
pub struct Scratch {
    pub state: tidings::AppState,
    pub project: String,
    pub secret_key: String,
    dir: PathBuf,
    remove: bool,
}

impl Scratch {
    pub fn open(dir: Option<PathBuf>) -> Scratch {
        let remove = dir.is_none();
        let dir = tempfile_dir(dir);
        let mut config = tidings::config::Config::defaults();
        config.server.data_dir = dir.clone();
        let state = tidings::AppState::open(config).expect("open the database");
        let (project, secret_key) = setup_project(&state);
        Scratch { state, project, secret_key, dir, remove }
    }

    /// Closes the database, and removes the directory when it was a temporary one.
    pub fn close(self) {
        let Scratch { state, dir, remove, .. } = self;
        drop(state);
        if remove {
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// POSTs `body` to the app in process; the answer must be a 200 with JSON.
pub fn post(client: &Client, auth: &Header<'static>, path: &str, body: Value) -> Value {
    let res = client.post(path.to_string()).header(auth.clone()).body(body.to_string()).dispatch();
    assert_eq!(res.status().code, 200, "{path}");
    serde_json::from_str(&res.into_string().unwrap_or_default()).expect("JSON")
}

/// A filter of a segment's condition.
pub fn filter(field: &str, operator: &str, value: Value) -> Value {
    json!({ "field": field, "operator": operator, "value": value })
}

/// The dynamic segment whose count is timed: `plan = pro`, `age > 30` and `city = Oslo`.
pub fn three_filters() -> Value {
    json!({ "logic": "AND", "groups": [{ "filters": [
        filter("data.plan", "equals", json!("pro")),
        filter("data.age", "greaterThan", json!(30)),
        filter("data.city", "equals", json!("Oslo")),
    ] }] })
}

/// Prints the median, p95 and minimum of `samples`; returns the p95.
pub fn report(label: &str, samples: &mut [Duration]) -> Duration {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = samples[samples.len() / 2];
    let p95 = samples[(samples.len() * 95 / 100).min(samples.len() - 1)];
    println!(
        "{label:<52} median {:>8.2} ms   p95 {:>8.2} ms   min {:>8.2} ms",
        ms(median),
        ms(p95),
        ms(samples[0])
    );
    p95
}
