//! `POST /v1/verify` throughput with a warm DNS cache, and the cost of a cold lookup, against a
//! DNS server on loopback. Prints figures: `cargo bench --bench verify`.

#[path = "support/app.rs"]
mod app;
#[path = "../tests/support/dns_server.rs"]
mod dns_server;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rocket::http::{ContentType, Header};
use rocket::local::asynchronous::Client;
use serde_json::json;
use tidings::config::Config;
use tidings::{AppState, build_rocket};

const CONCURRENCY: usize = 16;
const WARM_SECONDS: u64 = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let dns = dns_server::DnsServer::start(&["test"]).await;
    dns.mx("warm.test", 10, "mx.warm.test").await;
    dns.a("warm.test", Ipv4Addr::new(192, 0, 2, 1)).await;
    for n in 0..200 {
        dns.mx(&format!("cold{n}.test"), 10, &format!("mx.cold{n}.test")).await;
    }

    let dir = std::env::temp_dir().join(format!("tidings-verify-bench-{}", std::process::id()));
    let mut config = Config::defaults();
    config.server.data_dir = dir.clone();
    config.dns.nameservers = vec![dns.nameserver()];
    config.limits.requests_per_minute = u32::MAX / 2;
    config.auth.bcrypt_cost = 4;
    let state = AppState::open(config).unwrap();
    let secret = app::project(&state);
    let client = Arc::new(Client::untracked(build_rocket(state.clone())).await.unwrap());
    let auth = Header::new("Authorization", format!("Bearer {secret}"));

    let verify = |client: Arc<Client>, auth: Header<'static>, email: String| async move {
        let res = client
            .post("/v1/verify")
            .header(auth)
            .header(ContentType::JSON)
            .body(json!({ "email": email }).to_string())
            .dispatch()
            .await;
        assert_eq!(res.status().code, 200);
        res.into_string().await.unwrap_or_default()
    };

    // Cold: each domain seen for the first time (five lookups: MX, A, AAAA, www A, www AAAA).
    let mut cold = Vec::new();
    for n in 0..200 {
        let started = Instant::now();
        let body = verify(client.clone(), auth.clone(), format!("someone@cold{n}.test")).await;
        cold.push(started.elapsed());
        assert!(body.contains("\"valid\":true"), "{body}");
    }
    cold.sort();
    println!(
        "cold /v1/verify (new domain, DNS on loopback): median {:.2} ms, p95 {:.2} ms",
        ms(cold[cold.len() / 2]),
        ms(cold[cold.len() * 95 / 100])
    );

    // Warm: one domain, answers cached; {CONCURRENCY} requests in flight at a time.
    verify(client.clone(), auth.clone(), "first@warm.test".into()).await;
    let queries_before = dns.queries();
    let done = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(WARM_SECONDS);
    let mut workers = Vec::new();
    for worker in 0..CONCURRENCY {
        let (client, auth, done) = (client.clone(), auth.clone(), done.clone());
        workers.push(tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < deadline {
                verify(client.clone(), auth.clone(), format!("user{worker}x{n}@warm.test")).await;
                done.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
        }));
    }
    let started = Instant::now();
    for worker in workers {
        worker.await.unwrap();
    }
    let total = done.load(Ordering::Relaxed);
    println!(
        "warm /v1/verify: {total} requests in {:.1} s = {:.0} req/s ({CONCURRENCY} in flight, in process); DNS queries meanwhile: {}",
        started.elapsed().as_secs_f64(),
        total as f64 / started.elapsed().as_secs_f64(),
        dns.queries() - queries_before
    );
    drop(client);
    let _ = std::fs::remove_dir_all(dir);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
