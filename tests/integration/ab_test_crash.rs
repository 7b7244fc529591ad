//! An A/B test on the built binary (issue 34, item 1's must-show): 10,000 contacts, 20 % of
//! them split between two subjects, the server killed with SIGKILL while the test share goes
//! out, people clicking in B's mail and a link scanner following every link of A's, the wait
//! shortened by moving the server's clock an hour on; the winner by people's clicks is B, and
//! it goes to the other 8,000. Every contact gets exactly one message: one Message-ID each (a
//! message the relay took in the instant before the kill goes again with the same one, and is
//! counted, as in `campaign_crash.rs`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;

use crate::campaign_report::CHROME;
use crate::common::binary::wait_until;
use crate::common::dns_server::DnsServer;
use crate::common::sending::Sending;
use crate::common::smtp_sink::{Received, SmtpSink};

const CONTACTS: usize = 10_000;
const OFFSET: &str = "TIDINGS_SCHEDULER__CLOCK_OFFSET_SECS";
const BODY: &str = "<p>Hello</p><p><a href=\"https://example.org/offer\">Offer</a> \
    <a href=\"https://example.org/about\">About</a></p>";

/// The paths of the tracked links in a message.
fn click_paths(message: &Received) -> Vec<String> {
    let html = crate::send::parse(&message.data).body_html(0).unwrap().to_string();
    html.match_indices("/t/c/").map(|(at, _)| html[at..].split('"').next().unwrap().to_string()).collect()
}

fn subject(message: &Received) -> String {
    crate::send::header(&crate::send::parse(&message.data), "Subject").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ab_test_picks_the_winner_by_peoples_clicks_and_reaches_everyone_once_across_a_kill() {
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &[]).await;
    let key = sending.key.clone();
    let emails: Vec<String> = (0..CONTACTS).map(|n| format!("u{n:05}@example.test")).collect();

    let campaign = tokio::task::block_in_place(|| {
        let server = &sending.server;
        let csv = format!("email\n{}\n", emails.join("\n"));
        let job = server.upload_csv(&key, csv.as_bytes());
        wait_until(server, &key, &format!("/contacts/import/{job}"), Duration::from_secs(120), |j| {
            j["status"] == json!("completed")
        });
        let (status, created) = server.post_keyed(
            "/campaigns",
            &key,
            json!({ "name": "Sale", "subject": "Our sale", "body": BODY,
                    "from": "news@example.test", "audienceType": "ALL" }),
        );
        assert_eq!(status, 200, "{created}");
        let id = created["data"]["id"].as_str().unwrap().to_string();
        let test = json!({ "variants": [{}, { "subject": "Last days of our sale" }], "testShare": 20,
                           "metric": "humanClicks", "waitHours": 1 });
        let auth = format!("Bearer {key}");
        let (status, saved) = server
            .send_raw(
                "PUT",
                &format!("/campaigns/{id}/ab-test"),
                &[("Authorization", &auth)],
                test.to_string().as_bytes(),
            )
            .unwrap();
        assert_eq!(status, 200, "{saved}");
        let (status, sent) = server.post_keyed(&format!("/campaigns/{id}/send"), &key, json!({}));
        assert_eq!(status, 200, "{sent}");
        id
    });

    // Killed without warning while the test share goes out.
    let started = Instant::now();
    while sink.messages().len() < 400 {
        assert!(started.elapsed() < Duration::from_secs(120), "the test share did not start going out");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::task::block_in_place(|| sending.kill());
    let at_kill = sink.messages().len();
    tokio::task::block_in_place(|| sending.restart());
    let path = format!("/campaigns/{campaign}/ab-test");
    let tested = tokio::task::block_in_place(|| {
        wait_until(&sending.server, &key, &path, Duration::from_secs(120), |t| {
            let sum =
                |what: &str| (0..2).map(|v| t["variants"][v]["results"][what].as_i64().unwrap()).sum::<i64>();
            t["decideAt"].is_string() && sum("sent") == sum("recipients")
        })
    });
    assert_eq!(tested["phase"], json!("TESTING"));
    let share: i64 = (0..2).map(|v| tested["variants"][v]["results"]["recipients"].as_i64().unwrap()).sum();
    assert!((1_800..=2_200).contains(&share), "about 20 % of 10,000: {share}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let test_mail = sink.messages();
    assert!(
        test_mail.len() as i64 >= share
            && test_mail.len() as i64 <= share + 2 * tidings::config::DEFAULT_POOL_SIZE as i64,
        "the test share alone went out ({} messages, {share} in the share)",
        test_mail.len()
    );

    // A minute on: people click once in 40 of B's messages; a link scanner follows both links of
    // 80 of A's. By all clicks A would win; by people's, B does.
    tokio::task::block_in_place(|| sending.restart_with(&[(OFFSET, "60")]));
    let no_redirects: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let click = |path: &str| {
        let res = no_redirects.get(&sending.server.url(path)).header("User-Agent", CHROME).call().unwrap();
        assert_eq!(res.status().as_u16(), 302, "{path}");
    };
    let mut seen = std::collections::HashSet::new();
    let (of_b, of_a): (Vec<&Received>, Vec<&Received>) = test_mail
        .iter()
        .filter(|m| seen.insert(m.to[0].clone()))
        .partition(|m| subject(m) == "Last days of our sale");
    tokio::task::block_in_place(|| {
        for m in of_b.iter().take(40) {
            click(&click_paths(m)[0]);
        }
        for m in of_a.iter().take(80) {
            for path in click_paths(m) {
                click(&path);
            }
        }
    });
    let results = tokio::task::block_in_place(|| sending.server.get_keyed(&path, &key));
    let (a, b) = (&results["variants"][0]["results"], &results["variants"][1]["results"]);
    assert_eq!((a["clicked"].clone(), a["clickedByPeople"].clone()), (json!(80), json!(0)), "{results}");
    assert_eq!((b["clicked"].clone(), b["clickedByPeople"].clone()), (json!(40), json!(40)), "{results}");

    // An hour on, the wait is over: the winner is decided by the metric and goes to the rest.
    tokio::task::block_in_place(|| sending.restart_with(&[(OFFSET, "3660")]));
    let done = tokio::task::block_in_place(|| {
        let path = format!("/campaigns/{campaign}");
        wait_until(&sending.server, &key, &path, Duration::from_secs(300), |c| c["status"] == json!("SENT"))
    });
    let decided = tokio::task::block_in_place(|| sending.server.get_keyed(&path, &key));
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));
    assert_eq!(
        (decided["phase"].clone(), decided["winner"].clone(), decided["decidedBy"].clone()),
        (json!("DECIDED"), json!(1), json!("metric")),
        "{decided}"
    );

    let tested_to: HashMap<&str, String> = test_mail.iter().map(|m| (m.to[0].as_str(), subject(m))).collect();
    let mut received: HashMap<String, Vec<(String, String)>> = HashMap::new();
    for message in sink.messages() {
        let parsed = mail_parser::MessageParser::default().parse(&message.data).unwrap();
        let id = parsed.message_id().unwrap().to_string();
        received.entry(message.to[0].clone()).or_default().push((id, subject(&message)));
    }
    let mut repeats = 0;
    for email in &emails {
        let got = received.get(email).unwrap_or_else(|| panic!("{email} never received the campaign"));
        assert!(got.iter().all(|m| m == &got[0]), "{email}: one message, a repeat the same: {got:?}");
        repeats += got.len() - 1;
        let want = tested_to.get(email.as_str()).map_or("Last days of our sale", String::as_str);
        assert_eq!(got[0].1, want, "{email}: its variant in the test, the winner after");
    }
    let in_flight = 2 * tidings::config::DEFAULT_POOL_SIZE as usize;
    assert!(repeats <= in_flight, "only messages in flight at the kill went twice ({repeats})");
    assert_eq!(done["totalRecipients"], json!(CONTACTS));
    assert_eq!(done["sentCount"], json!(CONTACTS), "one count per contact");
    assert_eq!(sink.messages().len(), CONTACTS + repeats);
    eprintln!("killed after {at_kill} messages; {share} in the test share; {repeats} handed over twice");
}
