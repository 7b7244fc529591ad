//! Workflows at scale, printed as figures: `cargo bench --bench workflows`.
//!
//! The server is the built `tidings` binary on a fresh database, with one enabled workflow:
//! trigger `signup` → DELAY 1 day. A burst of `BENCH_EXECUTIONS` (100,000) tracked `signup`
//! events, one per new contact, comes from `BENCH_CLIENTS` (32) keep-alive clients.
//!
//! 1. Executions started per second: each event starts its execution in the transaction that
//!    records it, so the burst's rate is the start rate; the runner then takes each to its
//!    DELAY, and the time until every one waits is printed too. The same burst for an event
//!    that starts nothing comes first, for comparison.
//! 2. Memory with every execution waiting: the server's RSS when idle before the burst, once
//!    quiet after it, and after a restart with all of them still waiting (goal: within 20 MiB
//!    of idle; waits are rows with a due time, not timers).

#[allow(dead_code)]
#[path = "../tests/integration/common/binary.rs"]
mod binary;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

const ENV: &[(&str, &str)] =
    &[("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "2000000000"), ("TIDINGS_SERVER__LOG_LEVEL", "warn")];

/// `n` tracked `event`s, each for a new contact, from `clients` threads; returns the seconds.
fn burst(url: &str, key: &str, event: &str, prefix: &str, n: usize, clients: usize) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (next, url, key) = (next.clone(), url.to_string(), format!("Bearer {key}"));
            let (event, prefix) = (event.to_string(), prefix.to_string());
            std::thread::spawn(move || {
                let agent = binary::agent();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let body = json!({ "email": format!("{prefix}{i}@example.com"), "event": event,
                                       "data": { "plan": "free", "n": i } });
                    let res = agent
                        .post(&url)
                        .header("Authorization", &key)
                        .header("content-type", "application/json")
                        .send(body.to_string())
                        .unwrap();
                    assert_eq!(res.status().as_u16(), 200);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    started.elapsed().as_secs_f64()
}

fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let executions = setting("BENCH_EXECUTIONS", 100_000) as usize;
    let clients = setting("BENCH_CLIENTS", 32) as usize;
    let out = binary::run(
        dir.path(),
        &["user", "create", "--email", "bench@example.com", "--password", "benchmark password"],
        &[],
    );
    assert!(out.status.success(), "{}", binary::stderr(&out));
    let project: Value = serde_json::from_str(&binary::stdout(&binary::run(
        dir.path(),
        &["project", "create", "--name", "Bench", "--owner", "bench@example.com"],
        &[],
    )))
    .unwrap();
    let (secret, public) = (
        project["secretKey"].as_str().unwrap().to_string(),
        project["publicKey"].as_str().unwrap().to_string(),
    );
    let mut server = binary::Server::start(dir.path(), ENV);
    server.wait_healthy(Duration::from_secs(30));

    let (_, created) = server.post_keyed("/workflows", &secret, json!({ "name": "Bench" }));
    let id = created["id"].as_str().unwrap().to_string();
    let trigger = created["steps"][0]["id"].as_str().unwrap().to_string();
    let (_, delay) = server.post_keyed(
        &format!("/workflows/{id}/steps"),
        &secret,
        json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } }),
    );
    server.post_keyed(
        &format!("/workflows/{id}/transitions"),
        &secret,
        json!({ "fromStepId": trigger, "toStepId": delay["id"] }),
    );
    let (status, _) = server.patch_keyed(
        &format!("/workflows/{id}"),
        &secret,
        json!({ "enabled": true, "triggerConfig": { "eventName": "signup" } }),
    );
    assert_eq!(status, 200);
    std::thread::sleep(Duration::from_secs(3));
    let idle = rss_mib(server.pid());

    // The same burst for an event no workflow starts on: what tracking costs without them.
    let plain = burst(&server.url("/v1/track"), &public, "visit", "plain", executions, clients);
    println!(
        "{executions} tracked events no workflow starts on, {clients} clients: {plain:.1} s = {:.0} a second",
        executions as f64 / plain
    );
    std::thread::sleep(Duration::from_secs(3));
    let started = Instant::now();
    let took = burst(&server.url("/v1/track"), &public, "signup", "user", executions, clients);
    println!(
        "{executions} tracked events starting a workflow each, {clients} clients: {took:.1} s = {:.0} executions started a second",
        executions as f64 / took
    );
    let waiting_path = format!("/workflows/{id}/executions?status=WAITING&pageSize=1");
    loop {
        let list = server.get_keyed(&waiting_path, &secret);
        if list["total"].as_u64() == Some(executions as u64) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1800),
            "the runner did not get them all waiting: {list}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let all_waiting = started.elapsed().as_secs_f64();
    println!(
        "every execution at its DELAY after {all_waiting:.1} s = {:.0} executions a second through the runner",
        executions as f64 / all_waiting
    );
    // Quiet: the memory trimming hands back what the burst took.
    std::thread::sleep(Duration::from_secs(15));
    let after = rss_mib(server.pid());
    server.terminate(Duration::from_secs(15));
    let mut server = binary::Server::start(dir.path(), ENV);
    server.wait_healthy(Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(5));
    let restarted = rss_mib(server.pid());
    let list = server.get_keyed(&waiting_path, &secret);
    assert_eq!(list["total"].as_u64(), Some(executions as u64), "still waiting after the restart");
    println!(
        "RSS: idle {idle:.1} MiB; {executions} waiting, quiet after the burst {after:.1} MiB ({:+.1}); \
         after a restart {restarted:.1} MiB ({:+.1}); goal: within 20 MiB of idle",
        after - idle,
        restarted - idle
    );
    server.terminate(Duration::from_secs(15));
}
