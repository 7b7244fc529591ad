//! The built binary killed with SIGKILL while it sends: after a restart every accepted message
//! reaches the relay, each with its own Message-ID, none twice except the one narrow case of
//! appliance.md section 5 (which then repeats the Message-ID).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::binary::{Server, run, stdout};
use crate::common::dns_server::DnsServer;
use crate::common::sending::Sending;
use crate::common::smtp_sink::SmtpSink;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_sending_then_restart_delivers_every_message() {
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let mut sending =
        Sending::start(dir.path(), &dns, sink.port, &[("TIDINGS_SCHEDULER__RETRY_BASE_SECS", "1")]).await;
    let key = sending.key.clone();

    // Accept 60 messages, and kill the process without warning while it is sending them.
    let mut accepted = Vec::new();
    for n in 0..60 {
        let (status, body) = tokio::task::block_in_place(|| {
            sending.server.post_keyed(
                "/v1/send",
                &key,
                json!({ "to": format!("user{n}@example.test"), "from": "h@example.test", "subject": format!("Message {n}"), "body": "<p>hi</p>" }),
            )
        });
        assert_eq!(status, 200, "{body}");
        accepted.push(body["data"]["emails"][0]["email"].as_str().unwrap().to_string());
        if n == 40 {
            tokio::task::block_in_place(|| sending.kill());
            break;
        }
    }
    let before_restart = sink.messages().len();

    // Restart: everything accepted before the kill reaches the relay.
    tokio::task::block_in_place(|| sending.restart());
    let delivered = tokio::task::block_in_place(|| sink.wait_for(accepted.len(), Duration::from_secs(60)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let delivered = sink.messages().len().max(delivered.len());
    sending.server.terminate(Duration::from_secs(15));

    let mut by_subject: HashMap<String, Vec<String>> = HashMap::new();
    for message in sink.messages() {
        let parsed = mail_parser::MessageParser::default().parse(&message.data).unwrap();
        by_subject
            .entry(parsed.subject().unwrap().to_string())
            .or_default()
            .push(parsed.message_id().unwrap().to_string());
    }
    for n in 0..accepted.len() {
        let ids = by_subject.get(&format!("Message {n}")).unwrap_or_else(|| {
            panic!(
                "message {n} was never delivered ({delivered} in all, {before_restart} before the restart)"
            )
        });
        assert!(ids.iter().all(|id| id == &ids[0]), "a repeat carries the same Message-ID");
        assert!(ids.len() <= 2, "message {n} delivered {} times", ids.len());
    }
    let repeats: usize = by_subject.values().map(|ids| ids.len() - 1).sum();
    let in_flight = 2 * tidings::config::DEFAULT_POOL_SIZE as usize;
    assert!(
        repeats <= in_flight,
        "at most the messages in flight at the kill were handed over twice ({repeats})"
    );
}

#[test]
fn an_import_killed_mid_run_resumes_at_once_after_restart() {
    let dir = TempDir::new().unwrap();
    run(dir.path(), &["user", "create", "--email", "owner@example.com", "--password", "password123"], &[]);
    let created = stdout(&run(
        dir.path(),
        &["project", "create", "--name", "Crash", "--owner", "owner@example.com"],
        &[],
    ));
    let key = serde_json::from_str::<Value>(&created).unwrap()["secretKey"].as_str().unwrap().to_string();
    let mut csv = String::from("email,firstName,plan,score\n");
    for n in 0..10_000 {
        csv.push_str(&format!("user{n}@example.com,Name {n},pro,{n}\n"));
    }

    // Kill the server while the import is between its first and last committed batch (try again
    // with a fresh import if one finishes before the kill lands).
    let mut interrupted = None;
    for _ in 0..5 {
        let mut server = Server::start(dir.path(), &[]);
        server.wait_healthy(Duration::from_secs(30));
        let job = server.upload_csv(&key, csv.as_bytes());
        let started = std::time::Instant::now();
        let state = loop {
            let state = server.get_keyed(&format!("/contacts/import/{job}"), &key);
            let processed = state["processed"].as_u64().unwrap_or(0);
            if state["status"] == json!("completed") || (processed > 0 && processed < 10_000) {
                break state;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "the import never started: {state}");
            std::thread::sleep(Duration::from_millis(2));
        };
        std::process::Command::new("kill").args(["-KILL", &server.pid().to_string()]).status().unwrap();
        server.wait(Duration::from_secs(10));
        if state["status"] != json!("completed") {
            interrupted = Some(job);
            break;
        }
    }
    let job = interrupted.expect("one import was killed mid-run");

    // The dead process's lease would hold the job for minutes; the restarted server takes it back
    // at once and finishes it, without a duplicate.
    let mut server = Server::start(dir.path(), &[]);
    let restarted = std::time::Instant::now();
    server.wait_healthy(Duration::from_secs(30));
    let state = loop {
        let state = server.get_keyed(&format!("/contacts/import/{job}"), &key);
        if state["status"] == json!("completed") {
            break state;
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(15),
            "not finished 15 s after the restart: {state}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(state["processed"], json!(10_000), "{state}");
    assert!(server.log().contains("took back the work"), "{}", server.log());
    let contacts = server.get_keyed("/contacts?limit=1", &key);
    assert_eq!(contacts["total"], json!(10_000), "no contact twice, none missing");
    server.terminate(Duration::from_secs(15));
}
