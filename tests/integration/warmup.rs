//! A sender domain's warm-up (issue 34, item 4's must-show), on the built binary with its clock
//! moved from day to day (`[scheduler] clock_offset_secs`): a plan of 50, 100 and 200 messages
//! a day, a receipt on the first day (transactional mail goes, and counts) and a campaign to 300
//! contacts. Each day's volume is held exactly: 49 of the campaign on the first day, 100 on the
//! second, the last 151 on the third, the rest waiting for the next day each time; and the plan
//! shows what each day sent.

use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;
use tidings::clock;

use crate::common::binary::wait_until;
use crate::common::dns_server::DnsServer;
use crate::common::sending::Sending;
use crate::common::smtp_sink::SmtpSink;

const OFFSET: &str = "TIDINGS_SCHEDULER__CLOCK_OFFSET_SECS";
const CONTACTS: usize = 300;

/// The clock offset, in seconds, that makes the server's now `at`.
fn offset_to(at: i64) -> String {
    ((at - clock::now_ms()) / 1000).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_holds_each_days_volume_exactly() {
    let day = |d: &str| clock::parse_date(d).unwrap().0;
    let (first, second, third) =
        (day("2027-03-01T10:00:00.000Z"), day("2027-03-02T00:00:30.000Z"), day("2027-03-03T00:00:30.000Z"));
    let dir = TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let start = offset_to(first);
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &[(OFFSET, start.as_str())]).await;
    let key = sending.key.clone();
    let warmup = format!("/domains/{}/warmup", sending.domain_id);
    let auth = format!("Bearer {key}");
    let campaign = tokio::task::block_in_place(|| {
        let server = &sending.server;
        let put = |body: serde_json::Value| {
            server.send_raw("PUT", &warmup, &[("Authorization", &auth)], body.to_string().as_bytes()).unwrap()
        };
        // What a plan refuses, naming the field.
        for (bad, field) in [
            (json!({ "startDaily": 0, "targetDaily": 10, "days": 3 }), "startDaily"),
            (json!({ "startDaily": 50, "targetDaily": 10, "days": 3 }), "targetDaily"),
            (json!({ "startDaily": 50, "targetDaily": 200, "days": 1 }), "days"),
            (
                json!({ "startDaily": 50, "targetDaily": 200, "days": 3, "startsOn": "2027-02-01" }),
                "startsOn",
            ),
        ] {
            let (status, refused) = put(bad.clone());
            assert_eq!(status, 422, "{bad}: {refused}");
            assert_eq!(refused["error"]["errors"][0]["field"], json!(field), "{refused}");
        }
        let (status, plan) = put(json!({ "startDaily": 50, "targetDaily": 200, "days": 3 }));
        assert_eq!(status, 200, "{plan}");
        assert_eq!(plan["startsOn"], json!("2027-03-01"), "today, in the project's zone");
        let volumes: Vec<i64> =
            plan["schedule"].as_array().unwrap().iter().map(|d| d["volume"].as_i64().unwrap()).collect();
        assert_eq!(volumes, [50, 100, 200]);

        let csv = format!(
            "email\n{}\n",
            (0..CONTACTS).map(|n| format!("w{n:03}@example.org")).collect::<Vec<_>>().join("\n")
        );
        let job = server.upload_csv(&key, csv.as_bytes());
        wait_until(server, &key, &format!("/contacts/import/{job}"), Duration::from_secs(60), |j| {
            j["status"] == json!("completed")
        });
        let receipt = json!({ "to": "buyer@example.org", "from": "shop@example.test", "subject": "Receipt", "body": "<p>Thanks</p>" });
        let (status, sent) = server.post_keyed("/v1/send", &key, receipt);
        assert_eq!(status, 200, "{sent}");
        let (status, created) = server.post_keyed(
            "/campaigns",
            &key,
            json!({ "name": "Launch", "subject": "Launch", "body": "<p>Hello</p>", "from": "news@example.test", "audienceType": "ALL" }),
        );
        assert_eq!(status, 200, "{created}");
        let id = created["data"]["id"].as_str().unwrap().to_string();
        let (status, _) = server.post_keyed(&format!("/campaigns/{id}/send"), &key, json!({}));
        assert_eq!(status, 200);
        id
    });

    // Each day: exactly its volume goes, then nothing more until the next day.
    for (n, (expected, next)) in
        [(50, Some(second)), (150, Some(third)), (CONTACTS + 1, None)].into_iter().enumerate()
    {
        let started = Instant::now();
        while sink.messages().len() < expected {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "day {n}: {} of {expected}",
                sink.messages().len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(sink.messages().len(), expected, "day {n}: exactly the day's volume");
        let plan = tokio::task::block_in_place(|| sending.server.get_keyed(&warmup, &key));
        let sent: Vec<i64> =
            plan["schedule"].as_array().unwrap().iter().map(|d| d["sent"].as_i64().unwrap()).collect();
        assert_eq!(sent[n], [50, 100, 151][n], "day {n}: {plan}");
        if let Some(next) = next {
            let report = tokio::task::block_in_place(|| {
                sending.server.get_keyed(&format!("/campaigns/{campaign}/report"), &key)
            });
            let held: i64 =
                report["queues"].as_array().unwrap().iter().map(|q| q["heldWarmup"].as_i64().unwrap()).sum();
            assert_eq!(held as usize, CONTACTS + 1 - expected, "the rest waits for the next day: {report}");
            let moved = offset_to(next);
            tokio::task::block_in_place(|| sending.restart_with(&[(OFFSET, moved.as_str())]));
        }
    }
    let done = tokio::task::block_in_place(|| {
        wait_until(&sending.server, &key, &format!("/campaigns/{campaign}"), Duration::from_secs(30), |c| {
            c["status"] == json!("SENT")
        })
    });
    assert_eq!(done["sentCount"], json!(CONTACTS));
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));
}
