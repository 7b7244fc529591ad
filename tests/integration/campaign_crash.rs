//! A campaign to 20,000 contacts, the built binary killed with SIGKILL while it sends, and a
//! restart: every subscribed contact receives the campaign exactly once — except messages the
//! relay acknowledged in the instant before the kill, which go again with the same Message-ID
//! (appliance.md §5), and are counted — unsubscribed contacts none, and the campaign's counters
//! equal what the relay received.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::binary::wait_until;
use crate::common::dns_server::DnsServer;
use crate::common::sending::Sending;
use crate::common::smtp_sink::SmtpSink;

const CONTACTS: usize = 20_000;
const UNSUBSCRIBED: usize = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_killed_mid_send_reaches_everyone_once_after_restart() {
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &[]).await;
    let key = sending.key.clone();

    // 20,000 contacts by CSV import; 500 of them then unsubscribed.
    let emails: Vec<String> = (0..CONTACTS).map(|n| format!("u{n:05}@example.test")).collect();
    let server = &sending.server;
    let campaign = tokio::task::block_in_place(|| {
        let csv = format!(
            "email,n\n{}\n",
            emails.iter().enumerate().map(|(n, e)| format!("{e},{n}")).collect::<Vec<_>>().join("\n")
        );
        let job = server.upload_csv(&key, csv.as_bytes());
        wait_until(server, &key, &format!("/contacts/import/{job}"), Duration::from_secs(120), |j| {
            j["status"] == json!("completed")
        });
        let (_, found) =
            server.post_keyed("/contacts/lookup", &key, json!({ "emails": emails[..UNSUBSCRIBED] }));
        let ids: Vec<Value> = found["data"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect();
        let (status, job) =
            server.post_keyed("/contacts/bulk-unsubscribe", &key, json!({ "contactIds": ids }));
        assert_eq!(status, 202, "{job}");
        let path = format!("/contacts/bulk/{}", job["jobId"].as_str().unwrap());
        wait_until(server, &key, &path, Duration::from_secs(60), |j| j["status"] == json!("completed"));
        let (status, created) = server.post_keyed(
            "/campaigns",
            &key,
            json!({
            "name": "Everyone", "subject": "Hello {{ email }}", "body": "<p>Number {{ n }}</p>",
            "from": "news@example.test", "audienceType": "ALL" }),
        );
        assert_eq!(status, 200, "{created}");
        let id = created["data"]["id"].as_str().unwrap().to_string();
        let (status, sent) = server.post_keyed(&format!("/campaigns/{id}/send"), &key, json!({}));
        assert_eq!(status, 200, "{sent}");
        id
    });

    // Kill without warning while it sends.
    let started = Instant::now();
    while sink.messages().len() < 1_000 {
        assert!(started.elapsed() < Duration::from_secs(120), "the campaign did not start sending");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::task::block_in_place(|| sending.kill());
    let at_kill = sink.messages().len();

    tokio::task::block_in_place(|| sending.restart());
    let done = tokio::task::block_in_place(|| {
        let path = format!("/campaigns/{campaign}");
        wait_until(&sending.server, &key, &path, Duration::from_secs(600), |c| c["status"] == json!("SENT"))
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));

    let mut received: HashMap<String, Vec<String>> = HashMap::new();
    for message in sink.messages() {
        let parsed = mail_parser::MessageParser::default().parse(&message.data).unwrap();
        received.entry(message.to[0].clone()).or_default().push(parsed.message_id().unwrap().to_string());
    }
    for email in &emails[..UNSUBSCRIBED] {
        assert!(!received.contains_key(email), "{email} unsubscribed and still received the campaign");
    }
    let mut repeats = 0;
    for email in &emails[UNSUBSCRIBED..] {
        let ids = received.get(email).unwrap_or_else(|| {
            panic!("{email} never received the campaign ({at_kill} sent before the kill)")
        });
        assert!(ids.iter().all(|id| id == &ids[0]), "a repeat carries the same Message-ID");
        assert!(ids.len() <= 2, "{email} received it {} times", ids.len());
        repeats += ids.len() - 1;
    }
    // In flight: at most what the delivery worker holds (two per relay connection).
    let in_flight = 2 * tidings::config::DEFAULT_POOL_SIZE as usize;
    assert!(repeats <= in_flight, "only messages in flight at the kill went twice ({repeats})");
    let subscribed = (CONTACTS - UNSUBSCRIBED) as i64;
    assert_eq!(done["totalRecipients"], json!(subscribed));
    assert_eq!(
        done["sentCount"],
        json!(subscribed),
        "one count per recipient, however often the relay saw it"
    );
    assert_eq!(sink.messages().len() as i64, subscribed + repeats as i64);
    eprintln!("killed after {at_kill} messages; {repeats} handed over twice; {subscribed} recipients in all");
}
