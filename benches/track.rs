//! `POST /v1/track` under load, printed as figures: `cargo bench --bench track`.
//!
//! The server is the built `tidings` binary, started as its own process on a loopback port with
//! a fresh database; the load comes from this process over keep-alive HTTP connections.
//!
//! 1. Closed loop: `BENCH_CLIENTS` (32) clients send as fast as answers come back for
//!    `BENCH_SECONDS` (10): accepted requests a second and latency percentiles.
//! 2. Open loop at `BENCH_RATE` requests a second (default: half of what phase 1 reached): each
//!    request has a scheduled time, and its latency counts from then, so a slow answer delays
//!    the requests behind it in the figures too (no coordinated omission).
//!
//! Requests spread over `BENCH_CONTACTS` (20,000) contacts: most upsert an existing contact,
//! each stores a new event with a little data.

#[allow(dead_code)]
#[path = "../tests/integration/common/binary.rs"]
mod binary;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let project = binary::cli_project(dir.path());
    let key = project["publicKey"].as_str().unwrap().to_string();
    let mut server = binary::Server::start(
        dir.path(),
        &[("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "2000000000"), ("TIDINGS_SERVER__LOG_LEVEL", "warn")],
    );
    server.wait_healthy(Duration::from_secs(30));
    let url = server.url("/v1/track");
    let clients = setting("BENCH_CLIENTS", 32) as usize;
    let seconds = setting("BENCH_SECONDS", 10);
    let contacts = setting("BENCH_CONTACTS", 20_000);

    // Warm up: create the contacts' rows and the prepared statements.
    load(&url, &key, clients, Duration::from_secs(2), contacts, None);
    let (done, took, mut latencies) = load(&url, &key, clients, Duration::from_secs(seconds), contacts, None);
    let rate = done as f64 / took;
    println!(
        "POST /v1/track, closed loop, {clients} clients: {done} in {took:.1} s = {rate:.0} req/s; {}",
        percentiles(&mut latencies)
    );
    let target = std::env::var("BENCH_RATE").ok().and_then(|r| r.parse().ok()).unwrap_or(rate / 2.0);
    let (done, took, mut latencies) =
        load(&url, &key, clients, Duration::from_secs(seconds), contacts, Some(target));
    println!(
        "POST /v1/track, open loop at {target:.0} req/s: {done} in {took:.1} s = {:.0} req/s; {}",
        done as f64 / took,
        percentiles(&mut latencies)
    );
    server.terminate(Duration::from_secs(10));
}

fn percentiles(latencies: &mut [Duration]) -> String {
    latencies.sort();
    let at = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)].as_secs_f64() * 1000.0
    };
    format!("latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms", at(0.50), at(0.99), at(1.0))
}

/// Sends requests from `clients` threads for `length`; with `rate`, on a fixed schedule.
/// Returns how many were accepted, the seconds taken and every latency.
fn load(
    url: &str,
    key: &str,
    clients: usize,
    length: Duration,
    contacts: u64,
    rate: Option<f64>,
) -> (usize, f64, Vec<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let (url, key, stop) = (url.to_string(), format!("Bearer {key}"), stop.clone());
            std::thread::spawn(move || {
                let agent = binary::agent();
                let interval = rate.map(|r| Duration::from_secs_f64(clients as f64 / r));
                let offset = interval.map(|i| i.mul_f64(client as f64 / clients as f64)).unwrap_or_default();
                let mut latencies = Vec::new();
                let mut n: u64 = 0;
                let mut seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(client as u64 + 1);
                while !stop.load(Ordering::Relaxed) {
                    let due = interval.map(|i| started + offset + i.mul_f64(n as f64));
                    if let Some(due) = due {
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let event = ["page.viewed", "signup", "purchase"][(seed % 3) as usize];
                    let plan = ["free", "pro"][(seed % 2) as usize];
                    let body = json!({
                        "email": format!("user{}@example.com", seed % contacts),
                        "event": event,
                        "data": { "plan": plan, "path": { "value": format!("/p/{n}"), "persistent": false } },
                    });
                    let sent = due.unwrap_or_else(Instant::now);
                    let res = agent
                        .post(&url)
                        .header("Authorization", &key)
                        .header("content-type", "application/json")
                        .send(body.to_string())
                        .unwrap();
                    assert_eq!(res.status().as_u16(), 200);
                    latencies.push(sent.elapsed());
                    n += 1;
                }
                latencies
            })
        })
        .collect();
    std::thread::sleep(length);
    stop.store(true, Ordering::Relaxed);
    let latencies: Vec<Duration> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    (latencies.len(), started.elapsed().as_secs_f64(), latencies)
}
