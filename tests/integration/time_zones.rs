//! A campaign sent "at 09:00 in each contact's time zone" (issue 34, item 3), on the built
//! binary with a shifted clock (`[scheduler] clock_offset_secs`): contacts in Tokyo, Berlin and
//! New York, and some without a zone (the project's, São Paulo), each receive it at their 09:00
//! and not before, exact to the minute, across restarts of the server between the zones' hours.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;
use tidings::clock;

use crate::common::dns_server::DnsServer;
use crate::common::sending::Sending;
use crate::common::smtp_sink::SmtpSink;

/// The clock offset, in seconds, that makes the server's now `at` minus `lead` seconds.
fn offset_to(at: i64, lead: i64) -> String {
    ((at - clock::now_ms()) / 1000 - lead).to_string()
}

fn instant(text: &str) -> i64 {
    clock::parse_date(text).unwrap().0
}

const OFFSET: &str = "TIDINGS_SCHEDULER__CLOCK_OFFSET_SECS";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_at_nine_arrives_at_nine_in_each_zone() {
    // 09:00 on Wednesday 2027-03-10, before any daylight-saving change of these zones.
    let tokyo = instant("2027-03-10T00:00:00.000Z");
    let berlin = instant("2027-03-10T08:00:00.000Z");
    let sao_paulo = instant("2027-03-10T12:00:00.000Z");
    let new_york = instant("2027-03-10T14:00:00.000Z");
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let first = offset_to(tokyo, 12);
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &[(OFFSET, first.as_str())]).await;
    let key = sending.key.clone();

    let people = [
        ("kenji@example.test", Some("Asia/Tokyo")),
        ("yui@example.test", Some("Asia/Tokyo")),
        ("anna@example.test", Some("Europe/Berlin")),
        ("jonas@example.test", Some("Europe/Berlin")),
        ("mia@example.test", Some("America/New_York")),
        ("noah@example.test", Some("America/New_York")),
        ("ana@example.test", None),
        ("joao@example.test", None),
    ];
    let id = tokio::task::block_in_place(|| {
        let server = &sending.server;
        // A zone that is none is refused, and nothing is saved.
        let (status, refused) = server.post_keyed(
            "/contacts",
            &key,
            json!({ "email": "x@example.test", "data": { "timezone": "Mars/Olympus" } }),
        );
        assert_eq!(status, 422, "{refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], json!("data.timezone"));
        for (email, zone) in people {
            let data = zone.map_or(json!({}), |z| json!({ "timezone": z }));
            let (status, made) =
                server.post_keyed("/contacts", &key, json!({ "email": email, "data": data }));
            assert_eq!(status, 200, "{made}");
        }
        let (status, settings) =
            server.patch_keyed("/sending-settings", &key, json!({ "timezone": "America/Sao_Paulo" }));
        assert_eq!(status, 200, "{settings}");
        let (status, created) = server.post_keyed(
            "/campaigns",
            &key,
            json!({ "name": "Morning", "subject": "Good morning", "body": "<p>Hello</p>",
                    "from": "news@example.test", "audienceType": "ALL" }),
        );
        assert_eq!(status, 200, "{created}");
        let id = created["data"]["id"].as_str().unwrap().to_string();
        let (status, bad) = server.post_keyed(
            &format!("/campaigns/{id}/send"),
            &key,
            json!({ "localTime": "2027-03-10T09:00", "scheduledFor": "2027-03-10T09:00:00Z" }),
        );
        assert_eq!(status, 422, "one or the other: {bad}");
        let (status, sent) = server.post_keyed(
            &format!("/campaigns/{id}/send"),
            &key,
            json!({ "localTime": "2027-03-10T09:00" }),
        );
        assert_eq!(status, 200, "{sent}");
        assert!(sent["message"].as_str().unwrap().contains("in each contact's time zone"), "{sent}");
        id
    });

    let due_of = |email: &str| match people.iter().find(|(e, _)| *e == email).unwrap().1 {
        Some("Asia/Tokyo") => tokyo,
        Some("Europe/Berlin") => berlin,
        Some(_) => new_york,
        None => sao_paulo,
    };
    // Each zone's hour: the server (restarted with its clock shortly before it) sends to that
    // zone's contacts at their 09:00, and to no one else.
    let mut delivered = 0;
    for (n, (at, zone)) in
        [(tokyo, "Tokyo"), (berlin, "Berlin"), (sao_paulo, "São Paulo"), (new_york, "New York")]
            .into_iter()
            .enumerate()
    {
        if n > 0 {
            let shifted = offset_to(at, 12);
            tokio::task::block_in_place(|| sending.restart_with(&[(OFFSET, shifted.as_str())]));
        }
        assert_eq!(sink.messages().len(), delivered, "nothing for {zone} before its 09:00");
        let started = Instant::now();
        while sink.messages().len() < delivered + 2 {
            assert!(started.elapsed() < Duration::from_secs(90), "{zone}'s mail did not come");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        delivered += 2;
        let recipients = tokio::task::block_in_place(|| {
            sending.server.get_keyed(&format!("/campaigns/{id}/recipients?status=sent&limit=100"), &key)
        });
        let sent: Vec<&Value> = recipients["data"].as_array().unwrap().iter().collect();
        assert_eq!(sent.len(), delivered, "{recipients}");
        for r in sent {
            let due = due_of(r["email"].as_str().unwrap());
            let sent_at = clock::parse_date(r["sentAt"].as_str().unwrap()).unwrap().0;
            assert!(
                (due..due + 60_000).contains(&sent_at),
                "{zone}: {} sent {} ms after its 09:00, within the minute",
                r["email"],
                sent_at - due
            );
        }
        // Nothing more comes before the next zone's hour.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(sink.messages().len(), delivered, "{zone}: only its own");
    }
    let mut to: Vec<String> = sink.messages().iter().map(|m| m.to[0].clone()).collect();
    to.sort();
    let mut expected: Vec<String> = people.iter().map(|(e, _)| e.to_string()).collect();
    expected.sort();
    assert_eq!(to, expected, "every contact exactly once");
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));
}
