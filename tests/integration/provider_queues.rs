//! Per-provider queues (issue 34, item 4), in process: a campaign to Gmail (by domain and by a
//! company's MX hosts at Google), Yahoo and a small domain. Gmail's hourly cap lets one message
//! through and gives each of the rest a slot of its own, three minutes apart; Yahoo deferred a
//! receipt just before (a 451 passed on by the relay) and rests alone, its campaign mail held;
//! the small domain gets everything at once. The report and `/metrics` show each queue. The warm-up of a
//! sender domain across days is `warmup.rs`'s, on the binary with its clock moved.

use rocket::http::Status;
use serde_json::{Value, json};

use crate::campaign_report::campaign;
use crate::common::store::Set;
use crate::send::Mailroom;

#[rocket::async_test]
async fn each_provider_waits_in_its_own_queue_at_its_own_pace() {
    let room = Mailroom::with(|c| {
        c.smtp.providers.gmail_per_hour = 20;
        c.smtp.providers.backoff_secs = 120;
    })
    .await;
    room.dns.mx("workspace.test", 1, "aspmx.l.google.com").await;
    room.sink.defer_domain("yahoo.com", 1);
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let mut people = Vec::new();
    people.extend((0..5).map(|i| format!("g{i}@gmail.com")));
    people.extend((0..3).map(|i| format!("w{i}@workspace.test")));
    people.extend((0..4).map(|i| format!("y{i}@yahoo.com")));
    people.extend((0..6).map(|i| format!("s{i}@small.test")));
    for email in &people {
        let (status, _) = app.post("/contacts", key, json!({ "email": email })).await;
        assert_eq!(status, Status::Ok);
    }
    // Yahoo defers a receipt: Yahoo rests.
    let (status, _) = room
        .send(json!({ "to": "first@yahoo.com", "from": "news@example.test", "subject": "Receipt", "body": "<p>Thanks</p>" }))
        .await;
    assert_eq!(status, Status::Ok);
    // Until the worker has recorded the refusal (not only the relay sent it): a scheduler stopped
    // between the two would send the receipt again, and Yahoo would not rest.
    let receipt = || [("to_email", "first@yahoo.com".into())];
    let tries = || -> i64 { app.store().value("emails", "attempts", &receipt()) };
    app.run_jobs_until("Yahoo's deferral", async || room.sink.refused() == 1 && tries() == 1).await;
    // The receipt's own retry comes due in seconds, and a slow machine would reach it during the
    // campaign (held for Yahoo's rest too): it waits past this test, its try already counted.
    let far = tidings::clock::now_ms() + 3_600_000;
    app.store().set("emails", &[("next_attempt_at", far.into())], &receipt());

    let id = campaign(&room, "Queues").await;
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);

    let held = |reason: &str| app.store().count("emails", &[("held", reason.into())]);
    app.run_jobs_until("each queue sorted", async || {
        held("rate") == 7 && held("backoff") == 4 && room.sink.messages().len() == 7
    })
    .await;
    let got = room.sink.messages();
    let to = |domain: &str| got.iter().filter(|m| m.to[0].ends_with(domain)).count();
    assert_eq!((to("@small.test"), to("@gmail.com") + to("@workspace.test"), to("@yahoo.com")), (6, 1, 0));

    // Gmail's held mail (Workspace's included) waits in turn, a slot each, three minutes apart.
    let mut slots: Vec<i64> = people[..8]
        .iter()
        .filter_map(|email| {
            let held: Option<String> =
                app.store().value("emails", "held", &[("to_email", email.as_str().into())]);
            held.map(|_| {
                app.store().value("emails", "next_attempt_at", &[("to_email", email.as_str().into())])
            })
        })
        .collect();
    slots.sort();
    assert_eq!(slots.len(), 7);
    assert!(slots.windows(2).all(|w| w[1] - w[0] == 180_000), "{slots:?}");
    let now = tidings::clock::now_ms();
    assert!(
        (now + 60_000..=now + 180_000).contains(&slots[0]),
        "the first slot is three minutes after the one sent"
    );
    let queue_of: Vec<String> = ["w0@workspace.test", "y1@yahoo.com", "s1@small.test"]
        .iter()
        .map(|e| app.store().value("emails", "provider", &[("to_email", (*e).into())]))
        .collect();
    assert_eq!(queue_of, ["gmail", "yahoo", "small.test"], "Workspace is Gmail by its MX hosts");

    // The report shows each queue; the metrics count what was held and why.
    let (_, report) = app.get(&format!("/campaigns/{id}/report"), key).await;
    let queue = |name: &str| -> Value {
        report["queues"].as_array().unwrap().iter().find(|q| q["provider"] == json!(name)).cloned().unwrap()
    };
    assert_eq!(
        (queue("gmail")["label"].clone(), queue("gmail")["sent"].clone(), queue("gmail")["heldRate"].clone()),
        (json!("Gmail"), json!(1), json!(7)),
        "{report}"
    );
    assert_eq!(
        (queue("yahoo")["queued"].clone(), queue("yahoo")["heldBackoff"].clone()),
        (json!(4), json!(4))
    );
    assert!(queue("yahoo")["restingUntil"].is_string(), "{report}");
    assert_eq!(
        (queue("small.test")["sent"].clone(), queue("small.test")["queued"].clone()),
        (json!(6), json!(0))
    );
    let metrics = app.client.get("/metrics").dispatch().await.into_string().await.unwrap();
    for series in [
        r#"tidings_provider_emails_total{provider="gmail",outcome="held_rate"} 7"#,
        r#"tidings_provider_emails_total{provider="yahoo",outcome="deferred"} 1"#,
        r#"tidings_provider_emails_total{provider="yahoo",outcome="held_backoff"} 4"#,
        r#"tidings_provider_emails_total{provider="other",outcome="sent"} 6"#,
    ] {
        assert!(metrics.contains(series), "{series} in\n{metrics}");
    }
    assert!(metrics.contains(r#"tidings_provider_resting_seconds{provider="yahoo"}"#), "{metrics}");

    // A held message brought forward is held again: the cap holds, and waiting uses up no try.
    // (Which of Gmail's went first is the workers' choice: one that waits is taken.)
    let early = people[..8]
        .iter()
        .find(|email| {
            let held: Option<String> =
                app.store().value("emails", "held", &[("to_email", email.as_str().into())]);
            held.is_some()
        })
        .unwrap()
        .clone();
    let of_early = || [("to_email", early.as_str().into())];
    let held_until: i64 = app.store().value("emails", "next_attempt_at", &of_early());
    let back = held_until - tidings::clock::now_ms() + 1_000;
    app.store().set("emails", &[("next_attempt_at", Set::Less(back))], &of_early());
    let later = slots[6] + 180_000;
    let next = || -> i64 { app.store().value("emails", "next_attempt_at", &of_early()) };
    app.run_jobs_until("the early one held again", async || next() > now).await;
    assert_eq!(next(), later, "the next free slot, after the others");
    let attempts: i64 = app.store().value("emails", "attempts", &of_early());
    assert_eq!(attempts, 0);
    assert_eq!(room.sink.messages().len(), 7, "nothing more went to Gmail");
}
