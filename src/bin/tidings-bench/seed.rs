//! Seeding benchmark databases: a project and contacts with realistic custom fields, made by a
//! deterministic generator so runs compare. Shared by `tidings-bench` and `benches/campaign.rs`.

use std::path::PathBuf;

use rusqlite::params;
use serde_json::json;
use tidings::AppState;
use tidings::clock;
use tidings::core::fields::FieldChanges;
use tidings::db;

const FIRST: &[&str] =
    &["ada", "grace", "alan", "linus", "margaret", "ken", "barbara", "dennis", "frances", "john"];
const LAST: &[&str] = &[
    "lovelace", "hopper", "turing", "torvalds", "hamilton", "thompson", "liskov", "ritchie", "allen", "smith",
];
const DOMAINS: &[&str] = &["gmail.com", "example.com", "outlook.com", "proton.me", "acme.io", "fastmail.com"];
const PLANS: &[&str] = &["free", "starter", "pro", "team", "enterprise"];
const CITIES: &[&str] = &["Oslo", "Lisbon", "Nairobi", "Lima", "Osaka", "Toronto", "Berlin", "Austin"];

/// A small deterministic generator, so runs are comparable.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next_u64() % items.len() as u64) as usize]
    }
}

pub fn person(rng: &mut Lcg, n: usize, prefix: &str) -> (String, serde_json::Value) {
    let (first, last) = (rng.pick(FIRST), rng.pick(LAST));
    let email = format!("{prefix}{first}.{last}{n}@{}", rng.pick(DOMAINS));
    let mut data = json!({
        "firstName": first, "lastName": last, "plan": rng.pick(PLANS), "city": rng.pick(CITIES),
        "age": 18 + rng.next_u64() % 60, "score": (rng.next_u64() % 10_000) as f64 / 100.0,
        "signupDate": format!("20{:02}-{:02}-{:02}", 15 + rng.next_u64() % 10, 1 + rng.next_u64() % 12, 1 + rng.next_u64() % 28),
        "vip": rng.next_u64().is_multiple_of(10),
    });
    if !rng.next_u64().is_multiple_of(3) {
        data["company"] = json!(format!("{} {}", rng.pick(LAST), rng.pick(&["Ltd", "Inc", "GmbH", "AS"])));
    }
    if rng.next_u64().is_multiple_of(2) {
        data["profile"] =
            json!({ "tier": rng.pick(&["bronze", "silver", "gold"]), "referrals": rng.next_u64() % 20 });
    }
    (email, data)
}

pub fn tempfile_dir(dir: Option<PathBuf>) -> PathBuf {
    let dir =
        dir.unwrap_or_else(|| std::env::temp_dir().join(format!("tidings-bench-{}", std::process::id())));
    std::fs::create_dir_all(&dir).expect("bench directory");
    dir
}

pub fn setup_project(state: &AppState) -> (String, String) {
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
pub fn seed(state: &AppState, project: &str, n: usize) {
    let mut conn = state.db.conn().unwrap();
    let mut rng = Lcg(42);
    let now = clock::now_ms() - n as i64;
    let mut done = 0;
    while done < n {
        let end = (done + 50_000).min(n);
        db::write_tx(&mut conn, |tx| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, jsonb(?5), ?6, ?6)",
            )?;
            let mut fields = FieldChanges::default();
            let empty = serde_json::Map::new();
            let deferred = tidings::db::contacts::Deferred::start(tx, project)?;
            for i in done..end {
                let (email, data) = person(&mut rng, i, "");
                let subscribed = !rng.next_u64().is_multiple_of(8);
                insert.execute(params![
                    db::new_id(),
                    project,
                    email,
                    subscribed,
                    data.to_string(),
                    now + i as i64
                ])?;
                tidings::db::contacts::count_inserted(tx, project, 1, i64::from(subscribed))?;
                fields.record(&empty, data.as_object().unwrap());
            }
            fields.save(tx, project)?;
            deferred.finish(tx)?;
            Ok::<_, tidings::db::DbError>(())
        })
        .expect("seed batch");
        done = end;
    }
    // The server's checkpointer copies the log into the database as it grows; a seed made in
    // one go would otherwise leave every row in the log, and each page read would search it.
    checkpoint_log(state);
}

/// Copies the write-ahead log into the database file and empties it.
pub fn checkpoint_log(state: &AppState) {
    let conn = state.db.conn().unwrap();
    let _: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
}

/// `VmRSS` and `VmHWM` of a process (this one: `std::process::id()`), in MiB.
pub fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}
