//! Upgrades (issue 35, item 5): a database made by the first release's binary
//! (`tests/fixtures/first-release/`, commit be569c4, with data in every table) is migrated by
//! this one and served, with every row kept; `migrate --dry-run` lists what would run and
//! changes nothing; a database newer than the binary is refused, naming both versions.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::binary::{Server, agent, run, stderr, stdout};
use crate::common::store::Store;

/// A resolver that answers nothing, on loopback.
const OFFLINE: &[(&str, &str)] =
    &[("TIDINGS_DNS__NAMESERVERS", "[\"127.0.0.1:9\"]"), ("TIDINGS_DNS__TIMEOUT_MS", "100")];

/// Keeps what the fixture holds however old it gets: the longest retention and job history.
const KEEP_ALL: &[(&str, &str)] = &[
    ("TIDINGS_RETENTION__EVENTS_DAYS", "36500"),
    ("TIDINGS_RETENTION__EMAIL_CONTENT_DAYS", "36500"),
    ("TIDINGS_RETENTION__WEBHOOK_DELIVERIES_DAYS", "36500"),
    ("TIDINGS_RETENTION__INBOUND_DAYS", "36500"),
    ("TIDINGS_SCHEDULER__JOB_RETENTION_HOURS", "87600"),
];

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/first-release");

/// The fixture copied into `dir`'s data directory; the database's path.
fn fixture_in(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let database = data.join("tidings.db");
    std::fs::copy(Path::new(FIXTURE).join("first-release.db"), &database).unwrap();
    database
}

fn keys() -> Value {
    serde_json::from_str(&std::fs::read_to_string(Path::new(FIXTURE).join("keys.json")).unwrap()).unwrap()
}

fn counts(database: &Path) -> Vec<(String, i64)> {
    let store = Store::open(database);
    store.tables().into_iter().map(|t| (t.clone(), store.count(&t, &[]))).collect()
}

#[test]
fn the_first_releases_database_is_migrated_and_served_with_every_row() {
    let dir = tempfile::TempDir::new().unwrap();
    let database = fixture_in(dir.path());
    let before = counts(&database);
    let empty: Vec<&String> = before
        .iter()
        .filter(|(t, n)| *n == 0 && !t.starts_with("contacts_email_search_"))
        .map(|(t, _)| t)
        .collect();
    assert!(empty.is_empty(), "the fixture has data in every table: {empty:?}");

    let bytes = std::fs::read(&database).unwrap();
    let dry = run(dir.path(), &["migrate", "--dry-run"], &[]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    let listed = stdout(&dry);
    assert!(listed.contains("is at schema version 21"), "{listed}");
    assert!(
        listed.contains("would apply V22__") && listed.contains("would apply V44__retention"),
        "{listed}"
    );
    assert_eq!(std::fs::read(&database).unwrap(), bytes, "a dry run changes nothing");

    // No DNS reaches out: the sender domain's recheck finds nothing, as on a machine offline.
    let mut server = Server::start(dir.path(), &[OFFLINE, KEEP_ALL].concat());
    server.wait_healthy(Duration::from_secs(60));
    let keys = keys();
    let key = keys["secretKey"].as_str().unwrap();
    let contacts = server.get_keyed("/contacts?limit=100", key);
    assert_eq!(contacts["total"], json!(5), "{contacts}");
    for (path, at_least) in
        [("/templates", 1), ("/segments", 2), ("/workflows", 1), ("/webhooks", 1), ("/events", 5)]
    {
        let listed = server.get_keyed(path, key);
        let items = ["data", "items", "events", "segments", "workflows", "webhooks", "domains", "templates"]
            .iter()
            .find_map(|k| listed[k].as_array())
            .or_else(|| listed.as_array())
            .unwrap_or_else(|| panic!("{path}: {listed}"));
        assert!(items.len() >= at_least, "{path}: {listed}");
    }
    let campaigns = server.get_keyed("/campaigns", key);
    assert!(campaigns.to_string().contains("News"), "{campaigns}");
    // The owner signs in with the password the first release hashed.
    let mut login = agent()
        .post(&server.url("/auth/login"))
        .header("content-type", "application/json")
        .send(json!({ "email": "owner@example.com", "password": "first release" }).to_string())
        .unwrap();
    assert_eq!(login.status().as_u16(), 200, "{}", login.body_mut().read_to_string().unwrap());
    // And it sends as before (from the project's sandbox domain: mail is captured here, and the
    // sender domain the fixture verified may have been checked again meanwhile).
    let id = keys["id"].as_str().unwrap();
    let from = format!("news@{}.sandbox.invalid", id.rsplit('-').next().unwrap());
    let (status, sent) = server.post_keyed(
        "/v1/send",
        key,
        json!({ "to": "c0@example.org", "from": from, "subject": "Again", "body": "<p>Again</p>" }),
    );
    assert_eq!(status, 200, "{sent}");
    server.terminate(Duration::from_secs(10));

    let store = Store::open(&database);
    assert_eq!(store.integrity(), "ok");
    // Work tables are emptied as their work is done, and tokens, sessions and idempotency
    // records go when they expire (the fixture's have); every other row stays.
    let done_work = [
        "contacts_search_pending",
        "oauth_states",
        "account_tokens",
        "sessions",
        "invitations",
        "idempotency_keys",
    ];
    let after = counts(&database);
    for (table, n) in &before {
        if done_work.contains(&table.as_str()) || table.starts_with("contacts_email_search_") {
            continue;
        }
        let now = after.iter().find(|(t, _)| t == table).map(|(_, n)| *n);
        assert!(now.is_some_and(|now| now >= *n), "{table}: {n} rows before, {now:?} after");
    }
}

#[test]
fn a_database_newer_than_the_binary_is_refused_naming_both_versions() {
    let dir = tempfile::TempDir::new().unwrap();
    let database = fixture_in(dir.path());
    let store = Store::open_to_write(&database);
    store.insert(
        "refinery_schema_history",
        &[
            ("version", 999.into()),
            ("name", "from_the_future".into()),
            ("applied_on", "2030-01-01T00:00:00Z".into()),
            ("checksum", "0".into()),
        ],
    );
    drop(store);
    for args in [&["serve"][..], &["migrate"][..], &["migrate", "--dry-run"][..]] {
        let out = run(dir.path(), args, &[("TIDINGS_SERVER__PORT", "0"), OFFLINE[0], OFFLINE[1]]);
        assert!(!out.status.success(), "{args:?} ran on a newer database");
        let said = stderr(&out);
        let known = format!("this binary's {}", tidings::db::migrate::latest());
        assert!(said.contains("schema version 999") && said.contains(&known), "{args:?}: {said}");
    }
}
