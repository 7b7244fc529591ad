//! A campaign at scale (`cargo bench --bench campaign`), against the built `tidings` binary running as its own process (so its
//! memory is its own): seed N contacts, verify a sender domain on a loopback DNS server, send a
//! 5 KB newsletter to every subscribed contact through an SMTP relay, and print how fast the
//! audience was expanded into email rows, how fast it was delivered, and the server's peak RSS.
//!
//! The relay is a counting sink on loopback (it keeps nothing), or the one named by
//! `BENCH_RELAY=host:port`, e.g. postfix's `smtp-sink -c 127.0.0.1:2525 1000`.
//! `BENCH_CONTACTS` (1,000,000) sets the audience; `BENCH_DELIVER` stops once that many
//! messages are delivered (default: the whole campaign); `BENCH_BODY=short` sends a 0.6 KB body
//! like the transactional benchmarks' instead of the 5 KB newsletter.
//!
//! `BENCH_QUEUES=compare` (issue 34, item 4) seeds once and sends the same campaign twice, each
//! on its own copy of the database: first with mail in one queue (`[smtp.providers] enabled =
//! false`), then queued per receiving provider (the default; the seeded addresses are at Gmail,
//! Outlook, Proton, Fastmail and two other domains, the last four looked up by MX), and prints
//! the ratio of their rates.

#[path = "../tests/support/dns_server.rs"]
mod dns_server;
#[path = "../src/bin/tidings-bench/mail.rs"]
#[expect(dead_code, reason = "the benchmark uses only the newsletter body")]
mod mail;
#[path = "../src/bin/tidings-bench/seed.rs"]
mod seed;
#[path = "../tests/support/smtp_sink.rs"]
mod smtp_sink;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tidings::AppState;
use tidings::config::Config;

use seed::{memory, seed, setup_project, tempfile_dir};

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

fn call(base: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    let url = format!("{base}{path}");
    let auth = format!("Bearer {key}");
    let mut res = match body {
        Some(body) => agent()
            .post(&url)
            .header("Authorization", &auth)
            .header("content-type", "application/json")
            .send(body.to_string()),
        None => agent().get(&url).header("Authorization", &auth).call(),
    }
    .expect("the server answers");
    (res.status().as_u16(), res.body_mut().read_json().unwrap_or(Value::Null))
}

/// About 0.6 KB of HTML with a link and two variables, like the transactional benchmarks' body.
fn short_body() -> String {
    let mut body = String::from("<p>Hi {{ firstName ?? \"there\" }}, your {{ plan }} plan renews soon.</p>");
    while body.len() < 560 {
        body.push_str("<p>Thanks for reading; here is what is new this month.</p>");
    }
    body.push_str("<p><a href=\"https://example.test/renew\">Renew</a></p>");
    body
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

fn setting(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let contacts = setting("BENCH_CONTACTS").unwrap_or(1_000_000);
    let deliver = setting("BENCH_DELIVER");
    let dir = std::env::var_os("BENCH_DIR").map(PathBuf::from);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let dns = runtime.block_on(dns_server::DnsServer::start(&["test"]));
    let relay = std::env::var("BENCH_RELAY").ok();
    let sink = relay.is_none().then(smtp_sink::SmtpSink::counting);
    let (relay_host, relay_port) = match &relay {
        Some(relay) => {
            let (host, port) = relay.rsplit_once(':').expect("BENCH_RELAY is host:port");
            (host.to_string(), port.to_string())
        }
        None => ("127.0.0.1".to_string(), sink.as_ref().unwrap().port.to_string()),
    };
    let dir = tempfile_dir(dir);
    let data = dir.join("data");

    let started = Instant::now();
    let key = {
        let mut config = Config::defaults();
        config.server.data_dir = data.clone();
        let state = AppState::open(config).expect("database");
        let (project, key) = setup_project(&state);
        seed(&state, &project, contacts);
        key
    };
    println!("seeded {contacts} contacts in {:.1} s", started.elapsed().as_secs_f64());

    let compare = std::env::var("BENCH_QUEUES").is_ok_and(|q| q == "compare");
    let runs: Vec<(&str, Vec<(&str, &str)>)> = if compare {
        vec![
            ("one queue for all", vec![("TIDINGS_SMTP__PROVIDERS__ENABLED", "false")]),
            ("a queue per receiving provider", vec![("TIDINGS_SMTP__PROVIDERS__ENABLED", "true")]),
        ]
    } else {
        vec![("", Vec::new())]
    };
    let mut rates = Vec::new();
    for (n, (label, extra)) in runs.iter().enumerate() {
        let copy = dir.join(format!("run{n}"));
        copy_dir(&data, &copy);
        if !label.is_empty() {
            println!("-- {label}");
        }
        let relay = Relay { host: &relay_host, port: &relay_port, named: relay.as_deref() };
        rates.push(run(&runtime, &dns, &copy, &key, relay, extra, deliver));
        let _ = std::fs::remove_dir_all(&copy);
    }
    if let [one, per_provider] = rates[..] {
        println!(
            "per-provider queues: {per_provider:.0} messages/s against {one:.0} in one queue = {:.3} of it",
            per_provider / one
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Copies a database directory (the seeded one, for each run of a comparison).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}

/// Where the relay is.
struct Relay<'a> {
    host: &'a str,
    port: &'a str,
    /// `BENCH_RELAY`, when given.
    named: Option<&'a str>,
}

/// Serves `data` with the built binary (and `extra` settings), sends the campaign to every
/// subscribed contact, prints what it measured, and returns the delivery rate.
fn run(
    runtime: &tokio::runtime::Runtime,
    dns: &dns_server::DnsServer,
    data: &std::path::Path,
    key: &str,
    relay: Relay<'_>,
    extra: &[(&str, &str)],
    deliver: Option<usize>,
) -> f64 {
    let key = key.to_string();
    let dir = data.parent().unwrap().to_path_buf();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_tidings"));
    let child = Command::new(&binary)
        .arg("serve")
        .current_dir(&dir)
        .env("TIDINGS_SERVER__DATA_DIR", data)
        .env("TIDINGS_SERVER__PORT", port.to_string())
        .env("TIDINGS_DNS__NAMESERVERS", format!("[\"{}\"]", dns.nameserver()))
        .env("TIDINGS_SMTP__HOST", relay.host)
        .env("TIDINGS_SMTP__PORT", relay.port)
        .envs(extra.iter().copied())
        .env("TIDINGS_SMTP__SECURITY", "none")
        .env("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "1000000000")
        .env("TIDINGS_SERVER__LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
    let pid = child.id();
    let server = Server(child);
    let base = format!("http://127.0.0.1:{port}");
    let waited = Instant::now();
    while agent().get(&format!("{base}/health")).call().map(|r| r.status().as_u16()).unwrap_or(0) != 200 {
        assert!(waited.elapsed() < Duration::from_secs(30), "the server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }

    let (_, domain) = call(&base, "/domains", &key, Some(json!({ "domain": "example.test" })));
    for record in domain["records"].as_array().expect("records") {
        runtime.block_on(dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()));
    }
    let (_, verified) =
        call(&base, &format!("/domains/{}/verify", domain["id"].as_str().unwrap()), &key, None);
    assert_eq!(verified["status"], json!("verified"));
    let short = std::env::var("BENCH_BODY").is_ok_and(|b| b == "short");
    let body = if short { short_body() } else { mail::campaign_body() };
    println!("body: {} bytes of HTML with {} variables", body.len(), body.matches("{{").count());
    let (status, created) = call(
        &base,
        "/campaigns",
        &key,
        Some(json!({ "name": "Newsletter", "subject": "News for {{ firstName ?? \"you\" }}", "body": body,
            "from": "news@example.test", "fromName": "Example", "audienceType": "ALL" })),
    );
    assert_eq!(status, 200, "{created}");
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let (rss_before, _) = memory(pid);

    let sent_at = Instant::now();
    let (status, sent) = call(&base, &format!("/campaigns/{id}/send"), &key, Some(json!({})));
    assert_eq!(status, 200, "{sent}");
    let mut expanded_after = None;
    let mut peak_rss: f64 = 0.0;
    let (recipients, delivered) = loop {
        std::thread::sleep(Duration::from_millis(200));
        peak_rss = peak_rss.max(memory(pid).0);
        let (_, stats) = call(&base, &format!("/campaigns/{id}/stats"), &key, None);
        let total = stats["totalRecipients"].as_u64().unwrap_or(0) as usize;
        if expanded_after.is_none() && stats["expanded"] == json!(true) {
            expanded_after = Some((sent_at.elapsed(), total));
        }
        let done =
            stats["sent"].as_u64().unwrap_or(0) as usize + stats["failed"].as_u64().unwrap_or(0) as usize;
        let enough = deliver.is_some_and(|n| done >= n);
        if stats["status"] == json!("SENT") || enough {
            assert_eq!(stats["failed"], json!(0), "the relay refused messages: {stats}");
            break (total, done);
        }
        assert!(sent_at.elapsed() < Duration::from_secs(3 * 3600), "the campaign did not finish: {stats}");
    };
    let took = sent_at.elapsed().as_secs_f64();
    let (_, hwm) = memory(pid);
    if let Some((after, rows)) = expanded_after {
        println!(
            "expansion of the audience into email rows (delivery running alongside): {rows} rows in {:.1} s = {:.0} rows/s",
            after.as_secs_f64(),
            rows as f64 / after.as_secs_f64()
        );
    }
    let to = relay.named.map_or("a counting sink on loopback".to_string(), |r| format!("the relay at {r}"));
    println!(
        "campaign delivery, rendered per recipient + tracking + DKIM RSA-2048 + SMTP to {to}: {delivered} of {recipients} in {took:.1} s = {:.0} messages/s",
        delivered as f64 / took
    );
    println!(
        "server memory: {rss_before:.0} MiB before sending, peak {:.0} MiB while sending (VmHWM {hwm:.0} MiB, which includes start-up)",
        peak_rss.max(rss_before)
    );
    drop(server);
    delivered as f64 / took
}
