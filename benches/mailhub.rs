//! The mail hub at speed, printed as figures: `cargo bench --bench mailhub`.
//!
//! 1. `POST /v1/send` over HTTP on loopback, one recipient a request, with 8 clients on
//!    keep-alive connections: accepted requests a second.
//! 2. SMTP submission in the same run, 8 signed-in connections each submitting a 5 KB message
//!    to one recipient after another: messages a second (250 comes after the commit), and its
//!    ratio to 1 (the goal: at least 0.5).
//! 3. Inbound: 8 connections delivering 5 KB messages to a stored route: messages checked (SPF,
//!    DKIM, DMARC against the loopback DNS server), parsed and stored a second.
//!
//! The delivery worker does not run meanwhile (each phase measures what the server takes in).
//! `BENCH_SECONDS` (10) sets each phase's length. Submission runs without TLS here (loopback,
//! `allow_plaintext_auth`): on a kept connection TLS costs the cipher only.

#[path = "support/app.rs"]
mod app;
#[path = "../tests/support/dns_server.rs"]
mod dns_server;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tidings::config::{Config, SmtpSecurity};
use tidings::listeners::smtp::{Tls, inbound, submission};
use tidings::{AppState, build_rocket};

const CLIENTS: usize = 8;
/// Messages sent on one connection before it is renewed (the inbound listener's default
/// `max_commands`, 1,000, allows 250 at four commands each).
const PER_SESSION: usize = 200;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let seconds = setting("BENCH_SECONDS", 10);
    let dns = dns_server::DnsServer::start(&["test"]).await;
    let dir = std::env::temp_dir().join(format!("tidings-mailhub-bench-{}", std::process::id()));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = Config::defaults();
    config.server.data_dir = dir.clone();
    config.server.port = port;
    config.server.shutdown_grace_secs = 0;
    config.server.public_url = Some("https://mail.example.test".into());
    config.dns.nameservers = vec![dns.nameserver()];
    // Nothing is delivered: the worker does not run.
    config.smtp.host = Some("127.0.0.1".into());
    config.smtp.port = 9;
    config.smtp.security = SmtpSecurity::None;
    config.limits.requests_per_minute = u32::MAX / 2;
    config.submission.allow_plaintext_auth = true;
    config.inbound.messages_per_minute = u32::MAX / 2;
    config.inbound.messages_per_minute_per_peer = u32::MAX / 2;
    // Every client here is one address: room for its 8 sessions and the ones being renewed.
    config.inbound.max_connections_per_peer = 64;
    let state = AppState::open(config).unwrap();
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
    let (_, inbound_domain) =
        app::http(&base, "POST", "/inbound-domains", &key, Some(json!({ "domain": "in.example.test" })));
    for record in inbound_domain["records"].as_array().unwrap() {
        let (owner, value) = (record["name"].as_str().unwrap(), record["value"].as_str().unwrap());
        match record["type"].as_str().unwrap() {
            "MX" => dns.mx(owner, 10, value).await,
            _ => dns.txt(owner, value).await,
        }
    }
    let path = format!("/inbound-domains/{}/verify", inbound_domain["id"].as_str().unwrap());
    assert_eq!(app::http(&base, "GET", &path, &key, None).1["status"], json!("verified"));
    let route = json!({ "match": "*@in.example.test", "actions": [{ "type": "store" }] });
    assert_eq!(app::http(&base, "POST", "/inbound-routes", &key, Some(route)).0, 200);
    dns.txt("good.test", "v=spf1 ip4:127.0.0.1 -all").await;
    dns.txt("_dmarc.good.test", "v=DMARC1; p=reject").await;

    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let submission_port = listener.local_addr().unwrap().port();
    submission::start(state.clone(), listener, Tls::Off, stopped.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let inbound_port = listener.local_addr().unwrap().port();
    inbound::start(state.clone(), listener, stopped);

    let body = format!("<p>{}</p>", "Your order has shipped and is on its way. ".repeat(120));
    let (base_for_sends, key_for_sends, body_for_sends) = (base.clone(), key.clone(), body.clone());

    // 1. /v1/send.
    let sends = load(
        seconds,
        |_| app::agent(),
        move |agent, client, n| {
            let mail = json!({ "to": format!("s{client}n{n}@example.test"), "from": "shop@example.test",
            "subject": "Your order", "body": body_for_sends });
            assert_eq!(
                app::call(agent, &base_for_sends, "POST", "/v1/send", &key_for_sends, Some(mail)).0,
                200
            );
        },
    )
    .await;
    println!("POST /v1/send over HTTP, {CLIENTS} clients, 5 KB: {sends:.0} req/s");

    // 2. Submission.
    let message = move |to: &str, id: &str, from: &str| {
        format!(
            "From: Shop <{from}>\r\nTo: {to}\r\nSubject: Your order\r\nMessage-ID: <{id}@example.test>\r\n\
             MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n\r\n{body}\r\n"
        )
    };
    let inbound_message = message.clone();
    let submitted = sessions(seconds, submission_port, Some(&key), move |client, n| {
        let to = format!("m{client}n{n}@example.test");
        (
            "shop@example.test".to_string(),
            to.clone(),
            message(&to, &format!("c{client}n{n}"), "shop@example.test"),
        )
    })
    .await;
    println!(
        "SMTP submission, {CLIENTS} connections, 5 KB: {submitted:.0} messages/s = {:.2} of /v1/send (goal: 0.5)",
        submitted / sends
    );

    // 3. Inbound.
    let received = sessions(seconds, inbound_port, None, move |client, n| {
        let id = format!("i{client}n{n}");
        (
            "ada@good.test".to_string(),
            format!("{id}@in.example.test"),
            inbound_message("support@in.example.test", &id, "ada@good.test"),
        )
    })
    .await;
    println!(
        "inbound SMTP, {CLIENTS} connections, 5 KB, SPF+DKIM+DMARC checked, parsed, stored: {received:.0} messages/s"
    );

    shutdown.notify();
    let _ = server.await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs `work` on CLIENTS threads for `seconds`, each with the client `open` makes for it;
/// what they did a second.
async fn load<C>(
    seconds: u64,
    open: impl Fn(usize) -> C + Send + Sync + 'static,
    work: impl Fn(&mut C, usize, usize) + Send + Sync + 'static,
) -> f64 {
    let (stop, open, work) = (Arc::new(AtomicBool::new(false)), Arc::new(open), Arc::new(work));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let (stop, open, work) = (stop.clone(), open.clone(), work.clone());
            std::thread::spawn(move || {
                let (mut connection, mut n) = (open(client), 0);
                while !stop.load(Ordering::Relaxed) {
                    work(&mut connection, client, n);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let done: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    done as f64 / started.elapsed().as_secs_f64()
}

/// CLIENTS SMTP sessions on `port` (signed in with `key` when given), each sending the
/// `(mail from, rcpt to, message)` of `make` one after another for `seconds`; messages a second.
async fn sessions(
    seconds: u64,
    port: u16,
    key: Option<&str>,
    make: impl Fn(usize, usize) -> (String, String, String) + Send + Sync + 'static,
) -> f64 {
    let key = key.map(str::to_string);
    load(
        seconds,
        move |_| Session::open(port, key.clone()),
        move |session, client, n| session.send(make(client, n)),
    )
    .await
}

/// A client's SMTP session, renewed every [`PER_SESSION`] messages: a session takes a bounded
/// number of commands, and like an MTA the client starts a new one well before the cap.
struct Session {
    port: u16,
    key: Option<String>,
    smtp: Smtp,
    sent: usize,
}

impl Session {
    fn open(port: u16, key: Option<String>) -> Session {
        let mut smtp = Smtp::connect(port);
        smtp.expect("EHLO bench.good.test", 250);
        if let Some(key) = &key {
            use base64::Engine;
            let plain = base64::engine::general_purpose::STANDARD.encode(format!("\0bench\0{key}"));
            smtp.expect(&format!("AUTH PLAIN {plain}"), 235);
        }
        Session { port, key, smtp, sent: 0 }
    }

    fn send(&mut self, (from, to, message): (String, String, String)) {
        if self.sent == PER_SESSION {
            self.smtp.expect("QUIT", 221);
            *self = Session::open(self.port, self.key.take());
        }
        self.smtp.expect(&format!("MAIL FROM:<{from}>"), 250);
        self.smtp.expect(&format!("RCPT TO:<{to}>"), 250);
        self.smtp.expect("DATA", 354);
        self.smtp.expect(&format!("{message}."), 250);
        self.sent += 1;
    }
}

/// A plain SMTP client: a line out, the reply's last line in.
struct Smtp {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Smtp {
    fn connect(port: u16) -> Smtp {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut smtp = Smtp { writer: stream.try_clone().unwrap(), reader: BufReader::new(stream) };
        assert!(smtp.reply().starts_with("220"));
        smtp
    }

    fn reply(&mut self) -> String {
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                return line;
            }
        }
    }

    fn expect(&mut self, command: &str, code: u16) {
        self.writer.write_all(format!("{command}\r\n").as_bytes()).unwrap();
        let reply = self.reply();
        assert!(reply.starts_with(&code.to_string()), "{command:.40} -> {reply}");
    }
}
