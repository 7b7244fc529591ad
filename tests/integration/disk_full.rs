//! A full disk (issue 35, item 4), with the built binary on a small file system of its own (a
//! tmpfs mounted for the test, which needs root, as CI runs): filling it makes writes fail with
//! 507 in the envelope while reads go on, the database stays sound, the data's size passes 90 %
//! of its budget in `/metrics` and `/server/storage`, and writes work again by themselves once
//! there is room.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::binary::{Server, agent, cli_project};
use crate::common::store::Store;

/// A tmpfs of `bytes` mounted on `dir`, unmounted when dropped.
struct Mounted(PathBuf);

impl Mounted {
    fn tmpfs(dir: &Path, bytes: u64) -> Option<Mounted> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0700"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mounted(dir.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn track(server: &Server, key: &str, n: usize, filler: &str) -> (u16, serde_json::Value) {
    let body = json!({ "event": "filled", "email": format!("c{n}@example.org"), "data": { "n": n, "filler": filler } });
    server.post_keyed("/v1/track", key, body)
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself() {
    let dir = tempfile::TempDir::new().unwrap();
    let data = dir.path().join("data");
    let Some(_mounted) = Mounted::tmpfs(&data, 24 * 1024 * 1024) else {
        assert!(std::env::var_os("CI").is_none(), "CI must be able to mount a tmpfs (run as root)");
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let project = cli_project(dir.path());
    let (key, public) = (project["secretKey"].as_str().unwrap(), project["publicKey"].as_str().unwrap());
    // Room that is given back later, to show the server recovers by itself.
    let ballast = data.join("ballast");
    std::fs::write(&ballast, vec![0u8; 8 * 1024 * 1024]).unwrap();
    let mut server = Server::start(dir.path(), &[("TIDINGS_DATABASE__DISK_BUDGET_BYTES", "16000000")]);
    server.wait_healthy(Duration::from_secs(30));

    // Signed in first: a sign-in writes its session, which a full disk refuses too.
    let mut login = agent()
        .post(&server.url("/auth/login"))
        .header("content-type", "application/json")
        .send(json!({ "email": "bench@example.com", "password": "benchmark password" }).to_string())
        .unwrap();
    assert_eq!(login.status().as_u16(), 200, "{}", login.body_mut().read_to_string().unwrap());
    let cookie =
        login.headers().get("set-cookie").unwrap().to_str().unwrap().split(';').next().unwrap().to_string();
    let filler = "x".repeat(48 * 1024);
    let mut refused = None;
    for n in 0..2_000 {
        let (status, answer) = track(&server, public, n, &filler);
        match status {
            200 => {}
            507 => {
                refused = Some((n, answer));
                break;
            }
            other => panic!("event {n}: {other} {answer}"),
        }
    }
    let (stored, answer) = refused.expect("the disk filled up");
    assert!(stored > 20, "{stored} events before the disk was full");
    assert_eq!(answer["error"]["code"], "INSUFFICIENT_STORAGE", "{answer}");
    assert_eq!(answer["error"]["statusCode"], 507, "{answer}");
    assert!(answer["error"]["requestId"].is_string(), "{answer}");
    // Large writes go on being refused the same way. One may still fit now and then: a WAL
    // checkpoint that ends lets the log start over in room it already holds, and a refused write
    // frees pages. So the disk counts as full once three in a row are refused.
    let mut in_a_row = 0;
    for n in 5_000..5_200 {
        let (status, answer) = track(&server, public, n, &filler);
        match status {
            507 => {
                assert_eq!(answer["error"]["code"], "INSUFFICIENT_STORAGE", "{answer}");
                in_a_row += 1;
            }
            200 => in_a_row = 0,
            other => panic!("event {n}: {other} {answer}"),
        }
        if in_a_row == 3 {
            break;
        }
    }
    assert_eq!(in_a_row, 3, "the disk did not stay full");
    // Reads go on.
    let contacts = server.get_keyed("/contacts?limit=1", key);
    assert!(contacts["total"].as_i64().unwrap() >= stored as i64, "{contacts}");
    let (status, _) = server.get_json("/health");
    assert_eq!(status, 200);

    // The data passed 90 % of its budget: the metric and the dashboard's endpoint say so.
    let started = Instant::now();
    let metrics = loop {
        let mut res = agent().get(&server.url("/metrics")).call().unwrap();
        let text = res.body_mut().read_to_string().unwrap();
        let used: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("tidings_data_bytes "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if used >= 14_400_000 {
            break text;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the data's size was not measured: {used}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(metrics.contains("tidings_data_budget_bytes 16000000"), "{metrics}");
    let mut storage = agent().get(&server.url("/server/storage")).header("cookie", &cookie).call().unwrap();
    let storage: serde_json::Value = storage.body_mut().read_json().unwrap();
    assert_eq!(storage["warning"], true, "{storage}");

    // Room again: the next writes go through, with nothing restarted.
    std::fs::remove_file(&ballast).unwrap();
    let started = Instant::now();
    loop {
        let (status, answer) = track(&server, public, 10_000, &filler);
        if status == 200 {
            break;
        }
        assert_eq!(status, 507, "{answer}");
        assert!(started.elapsed() < Duration::from_secs(20), "writes did not come back: {answer}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, answer) = track(&server, public, 10_001, "after");
    assert_eq!(status, 200, "{answer}");
    server.terminate(Duration::from_secs(10));
    let store = Store::open(&data.join("tidings.db"));
    assert_eq!(store.integrity(), "ok");
    assert_eq!(store.count("contacts", &[("email", "c10001@example.org".into())]), 1);
    assert!(store.count("events", &[("name", "filled".into())]) >= stored as i64);
}
