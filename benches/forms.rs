//! Signup form submissions under load, printed as figures: `cargo bench --bench forms`.
//!
//! The server is the built `tidings` binary on a loopback port with a fresh database, its form
//! limits raised and the minimum fill time off. A form with a custom field and a topic
//! subscribes at once (single opt-in), so each submission verifies its proof of work, spends
//! its challenge, upserts the contact, subscribes it to marketing and the topic (two events)
//! and stores two consent rows, in one transaction.
//!
//! `BENCH_SUBMISSIONS` (6,000) challenges are fetched and solved first, as browsers would (the
//! solving is the visitor's cost, not the server's); then `BENCH_CLIENTS` (32) clients submit
//! them as fast as answers come back: submissions a second and latency percentiles.

#[allow(dead_code)]
#[path = "../tests/integration/common/binary.rs"]
mod binary;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let project = binary::cli_project(dir.path());
    let key = project["secretKey"].as_str().unwrap().to_string();
    let mut server = binary::Server::start(
        dir.path(),
        &[
            ("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "2000000000"),
            ("TIDINGS_LIMITS__FORM_SUBMISSIONS_PER_FORM_HOUR", "2000000000"),
            ("TIDINGS_LIMITS__FORM_SUBMISSIONS_PER_ADDRESS_HOUR", "2000000000"),
            ("TIDINGS_LIMITS__FORM_MIN_FILL_MS", "0"),
            ("TIDINGS_SERVER__LOG_LEVEL", "warn"),
        ],
    );
    server.wait_healthy(Duration::from_secs(30));
    let (_, topic) = server.post_keyed("/topics", &key, json!({ "name": "News" }));
    let form = json!({ "name": "Newsletter", "consentText": "Send me the newsletter", "topics": [topic["id"]],
        "fields": [{ "key": "firstName", "label": "First name", "type": "string", "required": true }] });
    let (status, form) = server.post_keyed("/forms", &key, form);
    assert_eq!(status, 200, "{form}");
    let id = form["id"].as_str().unwrap().to_string();
    let topic = topic["id"].as_str().unwrap().to_string();

    let submissions = setting("BENCH_SUBMISSIONS", 6_000) as usize;
    let clients = setting("BENCH_CLIENTS", 32) as usize;
    let started = Instant::now();
    let challenge_url = server.url(&format!("/f/{id}/challenge"));
    let solvers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let solved: Vec<String> = (0..solvers)
        .map(|s| {
            let url = challenge_url.clone();
            let n = submissions / solvers + usize::from(s < submissions % solvers);
            std::thread::spawn(move || {
                let agent = binary::agent();
                (0..n)
                    .map(|_| {
                        let text = agent.get(&url).call().unwrap().into_body().read_to_string().unwrap();
                        let challenge: altcha::Challenge = serde_json::from_str(&text).unwrap();
                        let options = altcha::SolveChallengeOptions::new(&challenge);
                        let solution = altcha::solve_challenge(options).unwrap().unwrap();
                        let payload =
                            serde_json::to_vec(&json!({ "challenge": challenge, "solution": solution }));
                        base64::engine::general_purpose::STANDARD.encode(payload.unwrap())
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    println!(
        "{} challenges fetched and solved in {:.1} s by {solvers} threads (the visitors' side)",
        solved.len(),
        started.elapsed().as_secs_f64()
    );

    let queue = Arc::new(Mutex::new(solved.into_iter().enumerate().collect::<Vec<_>>()));
    let url = server.url(&format!("/f/{id}/submit"));
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (queue, url, topic) = (queue.clone(), url.clone(), topic.clone());
            std::thread::spawn(move || {
                let agent = binary::agent();
                let mut latencies = Vec::new();
                loop {
                    let Some((n, proof)) = queue.lock().unwrap().pop() else { break };
                    let body = json!({ "email": format!("reader{n}@example.com"), "firstName": "Reader",
                        "topics": [topic], "altcha": proof });
                    let sent = Instant::now();
                    let res = agent
                        .post(&url)
                        .header("content-type", "application/json")
                        .send(body.to_string())
                        .unwrap();
                    assert_eq!(res.status().as_u16(), 200);
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let took = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |p: f64| {
        latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)].as_secs_f64() * 1000.0
    };
    println!(
        "POST /f/:id/submit (proof of work verified, contact, topic, consent), {clients} clients: {} in {took:.1} s = {:.0} submissions/s; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        latencies.len() as f64 / took,
        at(0.5),
        at(0.99),
        at(1.0)
    );
    server.terminate(Duration::from_secs(10));
}
