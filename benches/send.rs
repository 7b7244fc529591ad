//! Sending at speed, printed as figures: `cargo bench --bench send`.
//!
//! 1. `POST /v1/send` over HTTP on loopback: accepted requests a second and latency percentiles,
//!    with 32 clients on keep-alive connections (the server and the clients share the machine).
//! 2. End-to-end delivery: queued emails rendered, DKIM-signed (RSA-2048) and handed to an SMTP
//!    sink on loopback, messages a second.
//!
//! `BENCH_HTTP_SECONDS` (10) and `BENCH_DELIVERIES` (6000, at least) change the sizes;
//! `BENCH_SMTP_POOL` (the default of `[smtp] pool_size`) the relay connections. `BENCH_RELAY=127.0.0.1:2525` sends to a relay
//! already listening there instead of the built-in test sink, e.g. postfix's own sink:
//! `smtp-sink -c 127.0.0.1:2525 1000`.

#[path = "support/app.rs"]
mod app;
#[path = "../tests/support/dns_server.rs"]
mod dns_server;
#[path = "../tests/support/smtp_sink.rs"]
mod smtp_sink;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tidings::config::{Config, SmtpSecurity};
use tidings::{AppState, build_rocket, scheduler};

const CLIENTS: usize = 32;

/// A figure from the environment (`BENCH_HTTP_SECONDS`, `BENCH_DELIVERIES`), else the default.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let dns = dns_server::DnsServer::start(&["test"]).await;
    let relay = std::env::var("BENCH_RELAY").ok();
    let sink = relay.is_none().then(smtp_sink::SmtpSink::start);
    let (relay_host, relay_port) = match &relay {
        Some(relay) => {
            let (host, port) = relay.rsplit_once(':').expect("BENCH_RELAY is host:port");
            (host.to_string(), port.parse().expect("BENCH_RELAY port"))
        }
        None => ("127.0.0.1".to_string(), sink.as_ref().unwrap().port),
    };
    let dir = std::env::temp_dir().join(format!("tidings-send-bench-{}", std::process::id()));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = Config::defaults();
    config.server.data_dir = dir.clone();
    config.server.port = port;
    config.server.shutdown_grace_secs = 0;
    config.dns.nameservers = vec![dns.nameserver()];
    config.smtp.host = Some(relay_host);
    config.smtp.port = relay_port;
    config.smtp.security = SmtpSecurity::None;
    config.smtp.pool_size = setting("BENCH_SMTP_POOL", config.smtp.pool_size.into()) as u32;
    config.limits.requests_per_minute = u32::MAX / 2;
    config.tracking.opens = true;
    config.tracking.clicks = true;
    let state = AppState::open(config).unwrap();

    // A project with a verified domain.
    let key = app::project(&state);
    let rocket = build_rocket(state.clone()).ignite().await.unwrap();
    let shutdown = rocket.shutdown();
    let server = tokio::spawn(rocket.launch());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = format!("http://127.0.0.1:{port}");
    let (_, domain) = app::http(&base, "POST", "/domains", &key, Some(json!({ "domain": "example.test" })));
    for record in domain["records"].as_array().unwrap() {
        dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
    }
    let (_, verified) =
        app::http(&base, "GET", &format!("/domains/{}/verify", domain["id"].as_str().unwrap()), &key, None);
    assert_eq!(verified["status"], json!("verified"));

    // 1. The API alone (no delivery worker running).
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (base, key, stop) = (base.clone(), key.clone(), stop.clone());
        clients.push(std::thread::spawn(move || {
            let agent = app::agent();
            let mut latencies = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let body = json!({ "to": format!("c{client}n{n}@example.test"), "from": "shop@example.test",
                    "subject": "Order {{ order }}", "body": "<p>Hi {{ name ?? \"there\" }}, order {{ order }} ships today.</p>",
                    "data": { "name": "Ada", "order": n } });
                let started = Instant::now();
                let res = agent
                    .post(&format!("{base}/v1/send"))
                    .header("Authorization", &format!("Bearer {key}"))
                    .header("content-type", "application/json")
                    .send(body.to_string())
                    .unwrap();
                assert_eq!(res.status().as_u16(), 200);
                latencies.push(started.elapsed());
                n += 1;
            }
            latencies
        }));
    }
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(setting("BENCH_HTTP_SECONDS", 10))).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies: Vec<Duration> = clients.into_iter().flat_map(|c| c.join().unwrap()).collect();
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct =
        |p: usize| latencies[(latencies.len() * p / 100).min(latencies.len() - 1)].as_secs_f64() * 1000.0;
    println!(
        "POST /v1/send over HTTP, {CLIENTS} clients: {} accepted in {elapsed:.1} s = {:.0} req/s; latency p50 {:.1} ms, p99 {:.1} ms",
        latencies.len(),
        latencies.len() as f64 / elapsed,
        pct(50),
        pct(99)
    );
    let queued = latencies.len();

    // 2. Delivery of what is queued, plus more up to DELIVERIES.
    let extra = (setting("BENCH_DELIVERIES", 6000) as usize).saturating_sub(queued);
    for batch in 0..extra.div_ceil(50) {
        let to: Vec<String> =
            (0..50.min(extra - batch * 50)).map(|n| format!("d{batch}x{n}@example.test")).collect();
        app::http(
            &base,
            "POST",
            "/v1/send",
            &key,
            Some(json!({ "to": to, "from": "shop@example.test",
            "subject": "Order {{ order ?? 1 }}", "body": "<p>Hi {{ name ?? \"there\" }}, <a href=\"https://example.test/o\">your order</a>.</p>" })),
        );
    }
    let total = queued + extra;
    let started = Instant::now();
    let handle = scheduler::start(state.clone(), scheduler::registry(&state.config));
    let delivered = match &sink {
        Some(sink) => tokio::task::block_in_place(|| sink.wait_for(total, Duration::from_secs(600)).len()),
        None => wait_until_sent(&state, total, Duration::from_secs(600)).await,
    };
    let took = started.elapsed().as_secs_f64();
    handle.shutdown().await;
    let to = relay.map_or("the built-in loopback sink".to_string(), |r| format!("the relay at {r}"));
    println!(
        "delivery, rendered + click/open tracking + DKIM RSA-2048 + SMTP to {to}: {delivered} messages in {took:.1} s = {:.0} messages/s",
        delivered as f64 / took
    );
    shutdown.notify();
    let _ = server.await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Waits until `total` emails are SENT (an external relay cannot be asked what it received),
/// reading the delivery worker's own counters: polling the table would cost the server a scan.
async fn wait_until_sent(state: &AppState, total: usize, limit: Duration) -> usize {
    let started = Instant::now();
    let count = |status: &str| {
        let label = tidings::metrics::StatusLabel { status: status.into() };
        state.metrics.emails.get_or_create(&label).get() as usize
    };
    loop {
        let sent = count("sent");
        assert_eq!(count("failed"), 0, "the relay refused messages");
        if sent >= total || started.elapsed() > limit {
            return sent;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
