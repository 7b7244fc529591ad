//! Benchmarks that print figures (no pass/fail): `cargo run --release --bin tidings-bench -- contacts`.
//!
//! `contacts` seeds N contacts with realistic custom fields straight into a fresh database, then
//! times `GET /contacts` (first page, with and without `search`) and `GET /contacts/fields`
//! through the real Rocket app in process, and a CSV import of about 5 MiB (60,000 rows x 10
//! columns) through the import job's batches.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use rocket::http::Header;
use rocket::local::blocking::Client;
use rusqlite::params;
use serde_json::json;
use tidings::config::Config;
use tidings::core::fields::FieldChanges;
use tidings::db::{self, contact_jobs};
use tidings::{AppState, build_rocket, clock};

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
}

const FIRST: &[&str] =
    &["ada", "grace", "alan", "linus", "margaret", "ken", "barbara", "dennis", "frances", "john"];
const LAST: &[&str] = &[
    "lovelace", "hopper", "turing", "torvalds", "hamilton", "thompson", "liskov", "ritchie", "allen", "smith",
];
const DOMAINS: &[&str] = &["gmail.com", "example.com", "outlook.com", "proton.me", "acme.io", "fastmail.com"];
const PLANS: &[&str] = &["free", "starter", "pro", "team", "enterprise"];
const CITIES: &[&str] = &["Oslo", "Lisbon", "Nairobi", "Lima", "Osaka", "Toronto", "Berlin", "Austin"];

/// A small deterministic generator, so runs are comparable.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn person(rng: &mut Lcg, n: usize, prefix: &str) -> (String, serde_json::Value) {
    let (first, last) = (rng.pick(FIRST), rng.pick(LAST));
    let email = format!("{prefix}{first}.{last}{n}@{}", rng.pick(DOMAINS));
    let mut data = json!({
        "firstName": first, "lastName": last, "plan": rng.pick(PLANS), "city": rng.pick(CITIES),
        "age": 18 + rng.next() % 60, "score": (rng.next() % 10_000) as f64 / 100.0,
        "signupDate": format!("20{:02}-{:02}-{:02}", 15 + rng.next() % 10, 1 + rng.next() % 12, 1 + rng.next() % 28),
        "vip": rng.next().is_multiple_of(10),
    });
    if !rng.next().is_multiple_of(3) {
        data["company"] = json!(format!("{} {}", rng.pick(LAST), rng.pick(&["Ltd", "Inc", "GmbH", "AS"])));
    }
    if rng.next().is_multiple_of(2) {
        data["profile"] =
            json!({ "tier": rng.pick(&["bronze", "silver", "gold"]), "referrals": rng.next() % 20 });
    }
    (email, data)
}

fn main() {
    match Args::parse().bench {
        Bench::Render { seconds } => render_bench(seconds),
        Bench::Dkim { messages } => dkim_bench(messages),
        Bench::Contacts { contacts, csv_rows, repeat, dir } => {
            contacts_bench(contacts, csv_rows, repeat, dir)
        }
    }
}

/// A newsletter of about 5 KB using 10 variables, as a campaign body would.
fn campaign_body() -> String {
    let mut body = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{{ company }} news</title></head>\n\
         <body style=\"font-family:Helvetica,Arial,sans-serif;color:#222;background:#f4f4f4\">\n\
         <table width=\"100%\" cellpadding=\"0\" cellspacing=\"0\"><tr><td align=\"center\">\n\
         <h1>Hello {{ firstName ?? \"there\" }} {{ lastName }},</h1>\n\
         <p>Thanks for being on the {{ plan | capitalize }} plan since {{ signupDate }}.</p>\n",
    );
    let paragraph = "<p style=\"margin:0 0 16px;line-height:1.5\">Here is what changed this month. We shipped faster \
        search, a calmer inbox and better reports for teams who send a lot of mail. Read on for the details, or \
        reply to this email and tell us what you would like to see next.</p>\n";
    while body.len() < 4300 {
        body.push_str(paragraph);
    }
    body.push_str(
        "{% if vip %}<p><strong>As a VIP in {{ city }}, you get early access.</strong></p>{% endif %}\n\
         <p>Your score: {{ score }}. Company: {{ company }}.</p>\n\
         <p><a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a> · <a href=\"{{ manageUrl }}\">Preferences</a></p>\n\
         </td></tr></table></body></html>\n",
    );
    body
}

fn dkim_bench(messages: usize) {
    let (pem, _) = tidings::core::domains::generate_dkim_key().expect("a key");
    let signers = tidings::mail::dkim::Signers::default();
    let message = format!(
        "From: a@example.com\r\nTo: b@example.com\r\nSubject: Hi\r\nMessage-ID: <1@example.com>\r\n\r\n{}",
        campaign_body().replace('\n', "\r\n")
    );
    signers.sign("example.com", "tidings", &pem, message.as_bytes()).expect("signs");
    let started = Instant::now();
    for _ in 0..messages {
        signers.sign("example.com", "tidings", &pem, message.as_bytes()).expect("signs");
    }
    let each = started.elapsed().as_secs_f64() / messages as f64;
    println!(
        "DKIM RSA-2048 (ring, via mail-auth): {:.3} ms a message, {:.0} messages/s on one core",
        each * 1000.0,
        1.0 / each
    );
}

fn render_bench(seconds: u64) {
    use tidings::core::render;
    let body = campaign_body();
    let data = json!({ "firstName": "Ada", "lastName": "Lovelace", "plan": "pro", "signupDate": "2024-01-15",
        "vip": true, "city": "London", "score": 98.5, "company": "Analytical Engines" });
    let data = data.as_object().unwrap().clone();
    let links = vec![
        ("unsubscribeUrl", "https://mail.example.com/unsubscribe/token".to_string()),
        ("manageUrl", "https://mail.example.com/manage/token".to_string()),
    ];
    let scope = render::scope(&data, "ada@example.com", "contact-id", &links);
    let out = render::render(&body, &scope).expect("renders");
    println!("template: {} bytes, 10 variables; output {} bytes", body.len(), out.len());
    for (label, with_scope) in [("render", false), ("build the variables + render", true)] {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let started = Instant::now();
        let mut n = 0u64;
        while Instant::now() < deadline {
            for _ in 0..100 {
                let rendered = if with_scope {
                    render::render(&body, &render::scope(&data, "ada@example.com", "contact-id", &links))
                } else {
                    render::render(&body, &scope)
                };
                assert!(rendered.is_ok());
            }
            n += 100;
        }
        println!("{label:<30} {:.0} renders/s on one core", n as f64 / started.elapsed().as_secs_f64());
    }
}

fn contacts_bench(contacts: usize, csv_rows: usize, repeat: usize, dir: Option<PathBuf>) {
    let remove_after = dir.is_none();
    let temp = tempfile_dir(dir);
    let mut config = Config::defaults();
    config.server.data_dir = temp.clone();
    let state = AppState::open(config).expect("open the database");
    let (project, secret_key) = setup_project(&state);

    let started = Instant::now();
    seed(&state, &project, contacts);
    let seeded = started.elapsed();
    println!(
        "seeded {contacts} contacts in {:.1} s ({:.0} rows/s)",
        seeded.as_secs_f64(),
        contacts as f64 / seeded.as_secs_f64()
    );
    let size = std::fs::metadata(state.db.path()).map(|m| m.len()).unwrap_or(0);
    println!("database file: {:.0} MiB", size as f64 / 1048576.0);

    let client = Client::untracked(build_rocket(state.clone())).expect("rocket");
    let auth = Header::new("Authorization", format!("Bearer {secret_key}"));
    let time = |label: &str, path: &str| {
        let mut samples = Vec::with_capacity(repeat);
        for _ in 0..repeat {
            let t = Instant::now();
            let res = client.get(path.to_string()).header(auth.clone()).dispatch();
            assert_eq!(res.status().code, 200, "{path}");
            let body = res.into_string().unwrap_or_default();
            samples.push(t.elapsed());
            assert!(body.len() > 10);
        }
        report(label, &mut samples);
    };
    time("GET /contacts (first page, with total)", "/contacts");
    time("GET /contacts?subscribed=false", "/contacts?subscribed=false");
    time("GET /contacts?sort=email&dir=asc", "/contacts?sort=email&dir=asc");
    time("GET /contacts?search=hopper4242 (one match)", "/contacts?search=hopper4242");
    time("GET /contacts?search=torvalds99 (~1,100 matches)", "/contacts?search=torvalds99");
    time("GET /contacts?search=gmail (~1/6 of all)", "/contacts?search=gmail");
    time("GET /contacts/fields", "/contacts/fields");

    import_bench(&state, &project, csv_rows);
    drop(client);
    if remove_after {
        let _ = std::fs::remove_dir_all(&temp);
    }
}

fn tempfile_dir(dir: Option<PathBuf>) -> PathBuf {
    let dir =
        dir.unwrap_or_else(|| std::env::temp_dir().join(format!("tidings-bench-{}", std::process::id())));
    std::fs::create_dir_all(&dir).expect("bench directory");
    dir
}

fn setup_project(state: &AppState) -> (String, String) {
    let mut conn = state.db.conn().unwrap();
    db::write_tx(&mut conn, |tx| {
        let hash = tidings::core::accounts::hash_password("benchmark password", 4).unwrap();
        let user = tidings::core::accounts::insert_user(tx, "bench@example.com", &hash)?;
        let created = tidings::core::projects::create(tx, "Bench", &user.id)?;
        Ok::<_, tidings::error::ApiError>((created.project.id, created.keys.secret_key))
    })
    .expect("project")
}

/// Inserts contacts in transactions of 50,000 with the catalogue kept as the API keeps it.
fn seed(state: &AppState, project: &str, n: usize) {
    let mut conn = state.db.conn().unwrap();
    let mut rng = Lcg(42);
    let now = clock::now_ms() - n as i64;
    let mut done = 0;
    while done < n {
        let end = (done + 50_000).min(n);
        db::write_tx(&mut conn, |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
            )?;
            let mut fields = FieldChanges::default();
            let empty = serde_json::Map::new();
            let indexed_up_to = tidings::db::contacts::last_seq(tx)?;
            for i in done..end {
                let (email, data) = person(&mut rng, i, "");
                let subscribed = !rng.next().is_multiple_of(8);
                insert.execute(params![
                    uuid::Uuid::new_v4().to_string(),
                    project,
                    email,
                    subscribed,
                    data.to_string(),
                    now + i as i64
                ])?;
                fields.record(&empty, data.as_object().unwrap());
            }
            fields.save(tx, project)?;
            tidings::db::contacts::index_after(tx, indexed_up_to)?;
            Ok::<_, rusqlite::Error>(())
        })
        .expect("seed batch");
        done = end;
    }
}

fn report(label: &str, samples: &mut [Duration]) {
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
}

fn import_bench(state: &AppState, project: &str, rows: usize) {
    let mut rng = Lcg(7);
    let mut csv = String::from("email,firstName,lastName,plan,city,age,score,signupDate,vip,company\n");
    for i in 0..rows {
        let (email, d) = person(&mut rng, i, "csv.");
        csv.push_str(&format!(
            "{email},{},{},{},{},{},{},{},{},{}\n",
            d["firstName"].as_str().unwrap(),
            d["lastName"].as_str().unwrap(),
            d["plan"].as_str().unwrap(),
            d["city"].as_str().unwrap(),
            d["age"],
            d["score"],
            d["signupDate"].as_str().unwrap(),
            if d["vip"] == json!(true) { "yes" } else { "no" },
            d["company"].as_str().unwrap_or(""),
        ));
    }
    let bytes = csv.into_bytes();
    println!("CSV file: {rows} rows x 10 columns, {:.2} MiB", bytes.len() as f64 / 1048576.0);
    for round in ["new contacts", "same file again (updates)"] {
        let t = Instant::now();
        let counted = tidings::core::import::inspect(&bytes).expect("valid csv");
        let inspected = t.elapsed();
        let mut conn = state.db.conn().unwrap();
        let job = db::write_tx(&mut conn, |tx| {
            contact_jobs::insert(tx, project, "import", &bytes, counted as i64, clock::now_ms())
        })
        .unwrap();
        let t = Instant::now();
        loop {
            let done = db::write_tx(&mut conn, |tx| {
                let job = contact_jobs::by_id(tx, &job.id)?.unwrap();
                tidings::core::import::run_batch(
                    tx,
                    &job,
                    &bytes,
                    tidings::scheduler::contact_jobs::IMPORT_BATCH,
                    clock::now_ms(),
                )
            })
            .expect("batch");
            if done {
                break;
            }
        }
        let took = t.elapsed();
        let job = contact_jobs::by_id(&conn, &job.id).unwrap().unwrap();
        println!(
            "CSV import, {round}: {:.0} ms job time ({:.0} rows/s; upload check {:.0} ms); imported {} updated {} skipped {}",
            took.as_secs_f64() * 1000.0,
            rows as f64 / took.as_secs_f64(),
            inspected.as_secs_f64() * 1000.0,
            job.imported,
            job.updated,
            job.skipped
        );
    }
}
