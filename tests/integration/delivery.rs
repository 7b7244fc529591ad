//! The delivery worker against an SMTP sink: retries, permanent refusals, crashes, the capture
//! outbox, per-project throttling and leases.

use std::time::Duration;

use rocket::http::Status;
use serde_json::json;
use tidings::db::emails;

use crate::common::TestApp;
use crate::common::dns_server::DnsServer;
use crate::common::smtp_sink::{Reply, SmtpSink};
use crate::send::{Mailroom, header, parse};

#[rocket::async_test]
async fn a_temporary_refusal_is_retried_and_a_permanent_one_fails() {
    let room = Mailroom::new().await;
    room.sink.script(&[Reply::Temporary]);
    let retried = room.send_ok(json!({ "to": "ada@example.test", "from": "h@example.test", "subject": "Retry", "body": "<p>r</p>" })).await;
    room.deliver(1).await;
    let email = room.email(&retried[0]);
    assert_eq!((email.status.as_str(), email.attempts), ("SENT", 2));
    assert_eq!(room.sink.refused(), 1);

    room.sink.script(&[Reply::Permanent]);
    let failed = room.send_ok(json!({ "to": "bob@example.test", "from": "h@example.test", "subject": "Fail", "body": "<p>f</p>" })).await;
    let db = room.app.state.db.clone();
    let id = failed[0].clone();
    room.app
        .run_jobs_until("the permanent failure", async || {
            emails::get(&db.conn().unwrap(), &id).unwrap().unwrap().status == "FAILED"
        })
        .await;
    let email = room.email(&failed[0]);
    assert_eq!(email.attempts, 1, "no retry after a 5xx");
    assert!(email.last_error.as_deref().unwrap_or("").contains("550"), "{:?}", email.last_error);
    let names = tidings::db::events::names_for_contact(
        &room.app.state.db.conn().unwrap(),
        email.contact_id.as_deref().unwrap(),
    )
    .unwrap();
    assert_eq!(names, ["email.failed"]);
    assert_eq!(room.sink.messages().len(), 1);
}

#[rocket::async_test]
async fn queued_mail_survives_a_crash_and_is_delivered_once() {
    let room = Mailroom::new().await;
    // Accepted while no worker runs, then the process "dies".
    let ids = room.send_ok(json!({ "to": ["a@example.test", "b@example.test"], "from": "h@example.test", "subject": "Kept", "body": "<p>k</p>" })).await;
    let (config, dir) = ((*room.app.state.config).clone(), room.app.dir.clone());
    // One of them had been claimed by a worker that died mid-send (its lease runs out soon).
    tidings::db::write_tx(&mut room.app.state.db.conn().unwrap(), |tx| {
        emails::claim(
            tx,
            tidings::clock::now_ms(),
            1,
            200,
            &[],
            &mut tidings::db::fair::Turns::new(usize::MAX),
        )
    })
    .unwrap();

    // A new process on the same database delivers both, once each.
    let restarted = TestApp::on_state(tidings::AppState::open(config).unwrap(), dir).await;
    let sink = &room.sink;
    restarted.run_jobs_until("both messages", async || sink.messages().len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let messages = room.sink.messages();
    assert_eq!(messages.len(), 2);
    let message_ids: Vec<String> =
        messages.iter().map(|m| header(&parse(&m.data), "Message-ID").unwrap()).collect();
    for id in &ids {
        assert!(message_ids.contains(&room.email(id).message_id));
    }
}

#[rocket::async_test]
async fn the_capture_transport_keeps_messages_in_the_outbox() {
    let dns = DnsServer::start(&["test"]).await;
    let nameserver = dns.nameserver();
    let app = TestApp::with(|c| c.dns.nameservers = vec![nameserver]).await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let room = Mailroom { app, session, keys, dns, sink: SmtpSink::start() };
    room.verify_domain("example.test").await;
    let ids = room.send_ok(json!({ "to": "ada@example.test", "from": "h@example.test", "subject": "Captured", "body": "<p>c</p>" })).await;
    let db = room.app.state.db.clone();
    let id = ids[0].clone();
    room.app
        .run_jobs_until("capture", async || {
            emails::get(&db.conn().unwrap(), &id).unwrap().unwrap().status == "SENT"
        })
        .await;
    let (status, outbox) = room.app.get("/outbox", &room.keys.secret_key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(outbox["total"], json!(1));
    let entry = &outbox["data"][0];
    assert_eq!(
        (entry["to"].clone(), entry["subject"].clone(), entry["emailId"].clone()),
        (json!("ada@example.test"), json!("Captured"), json!(ids[0]))
    );
    let (_, full) = room.app.get(&format!("/outbox/{}", entry["id"]), &room.keys.secret_key).await;
    let raw = full["raw"].as_str().unwrap();
    assert!(raw.contains("Subject: Captured"));
    assert!(room.dkim_passes(raw.as_bytes()).await);
    // The parts read back for the dashboard: headers in order, the HTML and the text.
    assert!(full["html"].as_str().unwrap().contains("<p>c</p>"), "{full}");
    assert_eq!(full["text"].as_str().unwrap().trim(), "c");
    let headers = full["headers"].as_array().unwrap();
    let subject = headers.iter().find(|h| h["name"] == "Subject").unwrap();
    assert_eq!(subject["value"], json!("Captured"));
    assert!(
        headers.iter().any(|h| h["name"] == "DKIM-Signature" && !h["value"].as_str().unwrap().contains('\n'))
    );
    assert!(room.sink.messages().is_empty());
}

#[rocket::async_test]
async fn sending_is_throttled_per_project() {
    let room = Mailroom::with(|c| c.smtp.max_messages_per_second = 2).await;
    let to: Vec<String> = (0..6).map(|n| format!("user{n}@example.test")).collect();
    let ids = room
        .send_ok(json!({ "to": to, "from": "h@example.test", "subject": "Slow", "body": "<p>s</p>" }))
        .await;
    room.deliver(6).await;
    let sent: Vec<i64> = ids.iter().map(|id| room.email(id).sent_at.unwrap()).collect();
    let spread = sent.iter().max().unwrap() - sent.iter().min().unwrap();
    // Two at once, then one every half second.
    assert!(spread >= 1500, "six messages at two a second took {spread} ms");
}

#[rocket::async_test]
async fn five_temporary_refusals_fail_the_email() {
    let room = Mailroom::with(|c| c.scheduler.retry_base_secs = 0).await;
    room.sink.script(&[Reply::Temporary; 5]);
    let ids = room.send_ok(json!({ "to": "ada@example.test", "from": "h@example.test", "subject": "Doomed", "body": "<p>d</p>" })).await;
    let db = room.app.state.db.clone();
    let id = ids[0].clone();
    room.app
        .run_jobs_until("five tries", async || {
            emails::get(&db.conn().unwrap(), &id).unwrap().unwrap().status == "FAILED"
        })
        .await;
    let email = room.email(&ids[0]);
    assert_eq!(email.attempts, 5);
    assert!(email.last_error.unwrap().starts_with("gave up after 5 tries"), "the relay's reply is kept");
    assert_eq!(room.sink.refused(), 5);
    assert!(room.sink.messages().is_empty());
}

#[rocket::async_test]
async fn a_renewed_lease_keeps_an_email_from_being_claimed_again() {
    let room = Mailroom::new().await;
    let ids = room.send_ok(json!({ "to": "a@example.test", "from": "h@example.test", "subject": "Held", "body": "<p>h</p>" })).await;
    let mut conn = room.app.state.db.conn().unwrap();
    let now = tidings::clock::now_ms();
    let claimed = tidings::db::write_tx(&mut conn, |tx| {
        emails::claim(tx, now, 10, 1_000, &[], &mut tidings::db::fair::Turns::new(usize::MAX))
    })
    .unwrap();
    assert_eq!(claimed.len(), 1);
    // Past the first lease, but renewed before it ran out: not free to claim.
    tidings::db::write_tx(&mut conn, |tx| emails::renew_leases(tx, &ids, now + 60_000)).unwrap();
    let again = tidings::db::write_tx(&mut conn, |tx| {
        emails::claim(tx, now + 5_000, 10, 1_000, &[], &mut tidings::db::fair::Turns::new(usize::MAX))
    })
    .unwrap();
    assert!(again.is_empty(), "{again:?}");
    // Once the renewed lease runs out, it is (a worker that died held it).
    let later = tidings::db::write_tx(&mut conn, |tx| {
        emails::claim(tx, now + 61_000, 10, 1_000, &[], &mut tidings::db::fair::Turns::new(usize::MAX))
    })
    .unwrap();
    assert_eq!(later.len(), 1);
}

/// The worker's loop can claim again between a send recording its retry (due at once) and the
/// worker seeing that send end. The email is still in hand then: a claim that locked it and
/// dropped it would have left it waiting out a whole lease (this made a test flaky in CI).
#[rocket::async_test]
async fn emails_in_hand_are_neither_claimed_again_nor_waited_for() {
    let room = Mailroom::new().await;
    let ids = room
        .send_ok(json!({ "to": ["a@example.test", "b@example.test"], "from": "h@example.test", "subject": "Held", "body": "<p>h</p>" }))
        .await;
    let mut conn = room.app.state.db.conn().unwrap();
    let now = tidings::clock::now_ms();
    let in_hand = vec![ids[0].clone()];
    let claimed = tidings::db::write_tx(&mut conn, |tx| {
        emails::claim(tx, now, 10, 60_000, &in_hand, &mut tidings::db::fair::Turns::new(usize::MAX))
    })
    .unwrap();
    assert_eq!(claimed.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), vec![ids[1].clone()]);
    let locked: Option<i64> = room.app.store().value("emails", "locked_until", &[("id", (&ids[0]).into())]);
    assert_eq!(locked, None, "the email in hand was not locked by the claim");
    // The worker's sleep counts neither: one is in hand, the other is leased.
    let due = emails::next_due(&conn, &in_hand).unwrap().unwrap();
    assert!(due >= now + 60_000, "the next due email is the leased one, {} ms on", due - now);
    assert!(emails::next_due(&conn, &[]).unwrap().unwrap() <= now);
}

#[rocket::async_test]
async fn emails_claimed_but_not_readable_are_handed_back_at_once() {
    let room = Mailroom::new().await;
    let ids = room.send_ok(json!({ "to": "a@example.test", "from": "h@example.test", "subject": "Back", "body": "<p>b</p>" })).await;
    let db = &room.app.state.db;
    let lease = || -> (Option<i64>, i64) {
        let (store, row) = (room.app.store(), [("id", (&ids[0]).into())]);
        (store.value("emails", "locked_until", &row), store.value("emails", "next_attempt_at", &row))
    };
    let (_, due) = lease();
    // The claim (emails only) succeeds; reading the sender domain for signing fails.
    db.conn().unwrap().execute_batch("ALTER TABLE domains RENAME TO domains_away").unwrap();
    room.app
        .run_jobs_until("the email handed back", async || {
            let (locked_until, next_attempt_at) = lease();
            locked_until.is_none() && next_attempt_at > due
        })
        .await;
    assert!(room.sink.messages().is_empty());
    db.conn().unwrap().execute_batch("ALTER TABLE domains_away RENAME TO domains").unwrap();
    let received = room.deliver(1).await;
    assert_eq!(received.len(), 1, "delivered once the domain can be read again");
}
