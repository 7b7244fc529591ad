//! 2,000 executions through trigger → delay (2 s) → send → webhook, the built binary killed
//! with SIGKILL while they send and call, and a restart: every contact gets its email once and
//! the receiver one call per execution. The one window (appliance.md §5's, and its webhook
//! twin, engine.rs): what the relay or the receiver took in the instant before the kill, whose
//! commit never happened, goes again, with the same Message-ID or the same Idempotency-Key; the
//! test counts those and bounds them by what was in flight.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;

use crate::common::binary::{Server, wait_until};
use crate::common::dns_server::DnsServer;
use crate::common::http_receiver::HttpReceiver;
use crate::common::sending::Sending;
use crate::common::smtp_sink::SmtpSink;

const CONTACTS: usize = 2_000;

/// Builds and enables trigger("go") → DELAY 2 s → SEND_EMAIL → WEBHOOK, each step added after
/// the last; returns its id.
fn build(server: &Server, key: &str, receiver: &HttpReceiver) -> String {
    let (status, template) = server.post_keyed(
        "/templates",
        key,
        json!({ "name": "Hi", "subject": "Hi {{ email }}", "body": "<p>Order {{ event.n }}</p>",
                "from": "flows@example.test", "type": "TRANSACTIONAL" }),
    );
    assert_eq!(status, 200, "{template}");
    let (status, created) = server.post_keyed("/workflows", key, json!({ "name": "Crash" }));
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    for (kind, config) in [
        ("DELAY", json!({ "amount": 2, "unit": "seconds" })),
        ("SEND_EMAIL", json!({ "templateId": template["id"] })),
        ("WEBHOOK", json!({ "url": receiver.url("/done/{{ event.n }}") })),
    ] {
        let (status, step) = server.post_keyed(
            &format!("/workflows/{id}/steps"),
            key,
            json!({ "type": kind, "config": config }),
        );
        assert_eq!(status, 200, "{step}");
    }
    // Each step follows the one before (autoConnect, the default).
    let read = server.get_keyed(&format!("/workflows/{id}"), key);
    assert_eq!(read["transitions"].as_array().unwrap().len(), 3, "{read}");
    let (status, enabled) = server.patch_keyed(
        &format!("/workflows/{id}"),
        key,
        json!({ "enabled": true, "triggerConfig": { "eventName": "go" } }),
    );
    assert_eq!(status, 200, "{enabled}");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executions_killed_mid_run_send_and_call_once_each_after_restart() {
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let receiver = HttpReceiver::start();
    let mut sending = Sending::start(
        dir.path(),
        &dns,
        sink.port,
        &[("TIDINGS_WEBHOOKS__ALLOW_PRIVATE", "true"), ("TIDINGS_LIMITS__REQUESTS_PER_MINUTE", "1000000")],
    )
    .await;
    let (key, public) = (sending.key.clone(), sending.public_key.clone());
    let workflow = tokio::task::block_in_place(|| build(&sending.server, &key, &receiver));

    // 2,000 contacts each track the event, from four clients at once.
    let emails: Vec<String> = (0..CONTACTS).map(|n| format!("w{n:04}@example.test")).collect();
    tokio::task::block_in_place(|| {
        std::thread::scope(|scope| {
            for part in emails.chunks(CONTACTS / 4) {
                let (server, public) = (&sending.server, &public);
                scope.spawn(move || {
                    for email in part {
                        let n = email[1..5].to_string();
                        let (status, tracked) = server.post_keyed(
                            "/v1/track",
                            public,
                            json!({ "email": email, "event": "go", "data": { "n": n } }),
                        );
                        assert_eq!(status, 200, "{tracked}");
                    }
                });
            }
        });
    });

    // Kill without warning while mail goes out and webhooks are called.
    let started = Instant::now();
    while receiver.requests().len() < 500 {
        assert!(started.elapsed() < Duration::from_secs(120), "the executions did not get to their webhooks");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::task::block_in_place(|| sending.kill());
    let (mail_at_kill, calls_at_kill) = (sink.messages().len(), receiver.requests().len());

    tokio::task::block_in_place(|| sending.restart());
    let path = format!("/workflows/{workflow}/executions?status=COMPLETED&pageSize=1");
    tokio::task::block_in_place(|| {
        wait_until(&sending.server, &key, &path, Duration::from_secs(300), |list| {
            list["total"] == json!(CONTACTS)
        })
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while sink.messages().len() < CONTACTS && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));

    let mut mail: HashMap<String, Vec<String>> = HashMap::new();
    for message in sink.messages() {
        let parsed = mail_parser::MessageParser::default().parse(&message.data).unwrap();
        mail.entry(message.to[0].clone()).or_default().push(parsed.message_id().unwrap().to_string());
    }
    let mut mail_repeats = 0;
    for email in &emails {
        let ids = mail.get(email).unwrap_or_else(|| panic!("{email} never got its email"));
        assert!(ids.iter().all(|id| id == &ids[0]), "a repeat carries the same Message-ID");
        mail_repeats += ids.len() - 1;
    }
    assert_eq!(mail.len(), CONTACTS, "no one else was mailed");

    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    for request in receiver.requests() {
        calls.entry(request.path.clone()).or_default().push(request.headers["idempotency-key"].clone());
    }
    let mut call_repeats = 0;
    for n in 0..CONTACTS {
        let keys =
            calls.get(&format!("/done/{n:04}")).unwrap_or_else(|| panic!("execution {n} was never called"));
        assert!(keys.iter().all(|k| k == &keys[0]), "a repeat carries the same Idempotency-Key: {keys:?}");
        call_repeats += keys.len() - 1;
    }
    assert_eq!(calls.len(), CONTACTS);
    // In flight at the kill: at most what the delivery worker and the runner hold.
    let in_flight = 2 * tidings::config::DEFAULT_POOL_SIZE as usize;
    assert!(mail_repeats <= in_flight, "only mail in flight at the kill went twice ({mail_repeats})");
    assert!(
        call_repeats <= tidings::scheduler::workflows::IN_FLIGHT,
        "only calls in flight at the kill went twice ({call_repeats})"
    );
    eprintln!(
        "killed after {mail_at_kill} emails and {calls_at_kill} calls; repeated: {mail_repeats} emails, \
         {call_repeats} calls; {CONTACTS} executions in all"
    );
}
