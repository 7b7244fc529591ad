//! Scheduled backups and restores (issue 35, item 2), with the built binary: a copy per slot of
//! `[backup] schedule`, each checked and recorded, the oldest removed past `keep`; `tidings
//! restore` checks its file, refuses while a server holds the database, and keeps the
//! database it replaces aside.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::binary::{Server, cli_project, run, stderr, stdout};
use crate::common::store::Store;

const DAY_SECS: i64 = 86_400;

fn start(dir: &Path, schedule: &str, days_on: i64) -> Server {
    let offset = (days_on * DAY_SECS).to_string();
    let mut server = Server::start(
        dir,
        &[
            ("TIDINGS_BACKUP__SCHEDULE", schedule),
            ("TIDINGS_BACKUP__KEEP", "2"),
            ("TIDINGS_SCHEDULER__CLOCK_OFFSET_SECS", &offset),
        ],
    );
    server.wait_healthy(Duration::from_secs(30));
    server
}

fn store(dir: &Path) -> Store {
    Store::open(&dir.join("data/tidings.db"))
}

/// Waits until `n` scheduled backups have been checked (kept or since removed).
fn wait_for_backups(dir: &Path, n: i64) -> Vec<String> {
    let started = Instant::now();
    loop {
        let s = store(dir);
        let done = s.count("backups", &[("status", crate::common::store::among(&["ok", "removed"]))]);
        assert_eq!(s.count("backups", &[("status", "failed".into())]), 0, "a backup failed");
        if done >= n {
            return s.values("backups", "path", &[]);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{done} of {n} backups after a minute");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn add_contact(server: &Server, key: &str, email: &str) {
    let (status, answer) = server.post_keyed("/contacts", key, json!({ "email": email }));
    assert_eq!(status, 200, "{answer}");
}

fn emails(server: &Server, key: &str) -> Vec<String> {
    let page = server.get_keyed("/contacts?limit=100", key);
    let mut found: Vec<String> =
        page["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()).collect();
    found.sort();
    found
}

#[test]
fn scheduled_backups_are_checked_rotated_and_restored() {
    let dir = tempfile::TempDir::new().unwrap();
    let dir = dir.path();
    let project = cli_project(dir);
    let key = project["secretKey"].as_str().unwrap().to_string();
    // The current minute: a slot already past, so the first look makes a copy.
    let now = jiff::Timestamp::now();
    let schedule = format!("daily {}", now.strftime("%H:%M"));
    let uploads = dir.join("data/uploads/p1");
    std::fs::create_dir_all(&uploads).unwrap();
    std::fs::write(uploads.join("logo.png"), b"first logo").unwrap();

    let mut server = start(dir, &schedule, 0);
    add_contact(&server, &key, "a@example.org");
    wait_for_backups(dir, 1);
    add_contact(&server, &key, "b@example.org");
    server.terminate(Duration::from_secs(10));
    // A day on, the next slot is due: one copy a day.
    let mut server = start(dir, &schedule, 1);
    wait_for_backups(dir, 2);
    add_contact(&server, &key, "c@example.org");
    server.terminate(Duration::from_secs(10));
    let mut server = start(dir, &schedule, 2);
    let paths = wait_for_backups(dir, 3);
    assert_eq!(paths.len(), 3, "{paths:?}");

    // Two are kept; the oldest copy and its uploads are gone, its record says so.
    let s = store(dir);
    let removed: Vec<String> = s.values("backups", "path", &[("status", "removed".into())]);
    let kept: Vec<String> = s.values("backups", "path", &[("status", "ok".into())]);
    assert_eq!((removed.len(), kept.len()), (1, 2), "{removed:?} {kept:?}");
    assert!(!Path::new(&removed[0]).exists() && !Path::new(&format!("{}.uploads", removed[0])).exists());
    for copy in &kept {
        assert!(Path::new(copy).is_file(), "{copy}");
        assert!(copy.starts_with(&dir.join("data/backups").to_string_lossy().into_owned()), "{copy}");
        assert_eq!(Store::open(Path::new(copy)).integrity(), "ok");
        assert_eq!(std::fs::read(format!("{copy}.uploads/p1/logo.png")).unwrap(), b"first logo");
    }
    let mut metrics = crate::common::binary::agent().get(&server.url("/metrics")).call().unwrap();
    let metrics = metrics.body_mut().read_to_string().unwrap();
    let last = metrics
        .lines()
        .find_map(|l| l.strip_prefix("tidings_backup_last_success_timestamp_seconds "))
        .expect("the backup gauge");
    assert!(last.parse::<i64>().unwrap() > now.as_second() + DAY_SECS, "{last}");

    // The copy of the third day has a, b and c; the second's only a and b.
    let mut kept_by_age = kept.clone();
    kept_by_age.sort();
    let older = kept_by_age[0].clone();

    let refused = run(dir, &["restore", &older], &[]);
    assert!(!refused.status.success(), "a restore under a running server");
    assert!(stderr(&refused).contains("stop the server first"), "{}", stderr(&refused));
    assert_eq!(emails(&server, &key).len(), 3, "nothing changed");
    server.terminate(Duration::from_secs(10));

    // Files that are no database, or a damaged one, are refused and change nothing.
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    let bytes = std::fs::read(&older).unwrap();
    let truncated = dir.join("truncated.db");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    for bad in [&garbage, &truncated, &dir.join("missing.db")] {
        let out = run(dir, &["restore", &bad.to_string_lossy()], &[]);
        assert!(!out.status.success(), "{bad:?} was restored: {}", stdout(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "one sentence: {}", stderr(&out));
    }
    std::fs::write(uploads.join("logo.png"), b"second logo").unwrap();

    let restored = run(dir, &["restore", &older], &[]);
    assert!(restored.status.success(), "{}", stderr(&restored));
    let aside: Vec<_> = std::fs::read_dir(dir.join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tidings.db.before-restore-") && n.ends_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert_eq!(aside.len(), 1, "the replaced database is kept aside: {aside:?}");
    assert_eq!(std::fs::read(uploads.join("logo.png")).unwrap(), b"first logo", "the copy's uploads");

    let server = start(dir, &schedule, 2);
    assert_eq!(emails(&server, &key), ["a@example.org", "b@example.org"]);
    let (status, _) = server.get_json("/health");
    assert_eq!(status, 200);
}
