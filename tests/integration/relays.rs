//! Several relays (appliance.md §12): failover when a relay refuses connections or answers 4xx
//! to everyone, the rest after which it is tried again, per-relay rate caps, the pool that
//! shrinks to a relay's connection limit, and the whole path from `/v1/send` through
//! `[[smtp.relays]]`.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tidings::config::{RelayConfig, SmtpSecurity};
use tidings::mail::transport::{Refusal, Relays, TEMPORARY_IN_A_ROW};

use crate::common::smtp_sink::{Reply, SmtpSink};
use crate::send::Mailroom;

fn relay(port: u16) -> RelayConfig {
    RelayConfig {
        host: "127.0.0.1".into(),
        port,
        security: SmtpSecurity::None,
        pool_size: 4,
        ..RelayConfig::default()
    }
}

/// A loopback port nothing listens on (connections to it are refused).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn relays(list: Vec<RelayConfig>, rest: Duration) -> Relays {
    Relays::new(list, Duration::from_secs(5), rest)
}

/// Sends messages `numbers` all at once, each from its own task; their results in order.
async fn send_at_once(relays: &Arc<Relays>, numbers: std::ops::Range<usize>) -> Vec<Result<(), Refusal>> {
    let sends: Vec<_> = numbers
        .map(|n| {
            let relays = relays.clone();
            tokio::spawn(async move { send(&relays, n).await })
        })
        .collect();
    let mut results = Vec::new();
    for sent in sends {
        results.push(sent.await.unwrap());
    }
    results
}

async fn send(relays: &Relays, n: usize) -> Result<(), Refusal> {
    send_to(relays, n, None).await
}

/// Message `n`, for a recipient in receiving queue `queue` (`None`: not queued per provider).
async fn send_to(relays: &Relays, n: usize, queue: Option<&str>) -> Result<(), Refusal> {
    let (from, to) = ("sender@example.test".parse().unwrap(), format!("to{n}@example.test").parse().unwrap());
    let envelope = lettre::address::Envelope::new(Some(from), vec![to]).unwrap();
    let raw = format!("Subject: {n}\r\n\r\nmessage {n}\r\n");
    relays.send(&envelope, raw.as_bytes(), queue).await
}

#[tokio::test]
async fn a_relay_that_refuses_connections_rests_and_the_next_takes_the_mail() {
    let port = closed_port();
    let second = SmtpSink::start();
    let relays = relays(vec![relay(port), relay(second.port)], Duration::from_millis(600));

    send(&relays, 1).await.unwrap();
    assert_eq!(second.messages().len(), 1, "the message that found the first relay down went on");
    assert!(relays.list()[0].resting() && !relays.list()[1].resting());

    // The first relay comes back, but rests its minute (here 600 ms) before it is tried again.
    let first = SmtpSink::on_port(port);
    send(&relays, 2).await.unwrap();
    assert_eq!((first.messages().len(), second.messages().len()), (0, 2), "still resting");
    tokio::time::sleep(Duration::from_millis(700)).await;
    send(&relays, 3).await.unwrap();
    assert_eq!((first.messages().len(), second.messages().len()), (1, 2), "back to the first relay");
    assert!(!relays.list()[0].resting());
}

#[tokio::test]
async fn a_relay_answering_4xx_to_everyone_rests_but_one_4xx_is_the_messages_own() {
    let (first, second) = (SmtpSink::start(), SmtpSink::start());
    let relays = relays(vec![relay(first.port), relay(second.port)], Duration::from_secs(60));

    // One temporary refusal is about that message: it is retried later, nothing rests.
    first.script(&[Reply::Temporary]);
    assert!(matches!(send(&relays, 0).await, Err(Refusal::Temporary(_))));
    send(&relays, 1).await.unwrap();
    assert_eq!((first.messages().len(), second.messages().len()), (1, 0));
    assert!(!relays.list()[0].resting());

    // A permanent refusal is the message's too, and does not move anything.
    first.script(&[Reply::Permanent]);
    assert!(matches!(send(&relays, 2).await, Err(Refusal::Permanent(_))));
    assert!(!relays.list()[0].resting());

    // Refusing everyone: the refusal that makes TEMPORARY_IN_A_ROW rests the relay, and that
    // message goes to the next relay at once.
    first.script(&[Reply::Temporary; 20]);
    for n in 1..TEMPORARY_IN_A_ROW {
        assert!(matches!(send(&relays, 10 + n as usize).await, Err(Refusal::Temporary(_))), "{n}");
    }
    send(&relays, 99).await.unwrap();
    assert!(relays.list()[0].resting());
    assert_eq!(first.refused(), 1 + 1 + TEMPORARY_IN_A_ROW as usize);
    let at_second = second.messages();
    assert_eq!(at_second.len(), 1);
    assert_eq!(at_second[0].to, vec!["to99@example.test".to_string()]);
    send(&relays, 100).await.unwrap();
    assert_eq!(second.messages().len(), 2, "the resting relay is skipped");
}

/// Issue 34, item 4: 4xx replies all for one receiving provider are that provider's deferrals
/// (it rests alone, in the worker); the relay rests only when they name several.
#[tokio::test]
async fn one_providers_deferrals_do_not_rest_the_relay_but_everyones_do() {
    let sink = SmtpSink::start();
    let relays = relays(vec![relay(sink.port)], Duration::from_secs(60));
    sink.script(&[Reply::Temporary; 12]);
    for n in 0..12 {
        let refused = send_to(&relays, n, Some("gmail")).await;
        assert!(matches!(refused, Err(Refusal::Deferred(_))), "{n}: {refused:?}");
    }
    assert!(!relays.list()[0].resting(), "Gmail deferring is no reason to stop sending to others");
    send_to(&relays, 20, Some("yahoo")).await.unwrap();
    // Many of one provider's, then another's: the run counts from the turn, so no rest yet.
    sink.script(&[Reply::Temporary; 8]);
    for n in 0..7 {
        assert!(matches!(send_to(&relays, 40 + n, Some("gmail")).await, Err(Refusal::Deferred(_))));
    }
    assert!(matches!(send_to(&relays, 50, Some("yahoo")).await, Err(Refusal::Temporary(_))));
    assert!(!relays.list()[0].resting(), "one refusal of a second provider is not everyone's");
    send_to(&relays, 51, Some("apple")).await.unwrap();
    // Refusals for several providers in a row: the relay refuses everyone, and rests.
    sink.script(&[Reply::Temporary; 20]);
    let queues = ["gmail", "yahoo", "microsoft", "example.org", "apple"];
    for (n, queue) in queues.iter().enumerate().take(TEMPORARY_IN_A_ROW as usize) {
        let refused = send_to(&relays, 30 + n, Some(queue)).await;
        assert!(refused.is_err(), "{n}");
    }
    assert!(relays.list()[0].resting(), "refusals for everyone rest the relay");
}

#[tokio::test]
async fn when_every_relay_rests_the_mail_waits_without_using_a_try() {
    let relays = relays(vec![relay(closed_port()), relay(closed_port())], Duration::from_secs(60));
    // Both relays fail to connect: the message was never sent, so it has had no try, and waits
    // for the first rest to end.
    let Err(Refusal::Busy(wait)) = send(&relays, 1).await else { panic!("not tried") };
    assert!(wait > Duration::from_secs(59) && wait <= Duration::from_secs(60), "{wait:?}");
    assert!(relays.list().iter().all(|r| r.resting()));
    // The next one is not tried at all.
    let Err(Refusal::Busy(next)) = send(&relays, 2).await else { panic!("not tried") };
    assert!(next <= wait && relays.resting_for().is_some_and(|left| left <= next), "the wait only shortens");
}

#[tokio::test]
async fn the_message_a_relay_refused_too_many_times_in_a_row_has_had_its_try() {
    let sink = SmtpSink::start();
    let relays = relays(vec![relay(sink.port), relay(closed_port())], Duration::from_secs(60));
    sink.script(&[Reply::Temporary; 20]);
    for n in 0..TEMPORARY_IN_A_ROW {
        // The last 4xx rests the first relay, the second cannot be reached: still a try, since
        // the first relay did answer the message.
        assert!(matches!(send(&relays, n as usize).await, Err(Refusal::Temporary(_))), "{n}");
    }
    assert!(relays.resting_for().is_some());
}

#[tokio::test]
async fn the_wait_ends_with_the_first_rest_that_ends() {
    let relays = relays(vec![relay(closed_port())], Duration::from_millis(300));
    assert_eq!(relays.resting_for(), None, "nothing rests before a failure");
    let Err(Refusal::Busy(wait)) = send(&relays, 1).await else { panic!("not tried") };
    assert!(wait <= Duration::from_millis(300), "{wait:?}");
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(relays.resting_for(), None);
    assert!(matches!(send(&relays, 2).await, Err(Refusal::Busy(_))), "tried again, and down again");
    assert!(relays.resting_for().is_some());
}

#[rocket::async_test]
async fn while_every_relay_rests_queued_mail_is_neither_claimed_nor_charged_a_try() {
    let room = Mailroom::with(|c| c.smtp.port = closed_port()).await;
    let message =
        |to: &str| json!({ "to": to, "from": "hello@example.test", "subject": "Hi", "body": "<p>Hello</p>" });
    let first = room.send_ok(message("a@example.org")).await.remove(0);
    let due = |id: &str| -> i64 { room.app.store().value("emails", "next_attempt_at", &[("id", id.into())]) };
    let mut later = Vec::new();
    let mut quiet_since = None;
    room.app
        .run_jobs_until("the queue to stay quiet while the relay rests", async || {
            if let Some(since) = quiet_since {
                return Instant::now().duration_since(since) > Duration::from_millis(1500);
            }
            // The first email finds the relay down, which rests its minute: the email goes back
            // to the queue, due when the rest ends.
            if due(&first) > room.email(&first).created_at + 50_000 {
                for to in ["b@example.org", "c@example.org"] {
                    later.push(room.send_ok(message(to)).await.remove(0));
                }
                quiet_since = Some(Instant::now());
            }
            false
        })
        .await;
    let email = room.email(&first);
    assert_eq!((email.status.as_str(), email.attempts, email.last_error), ("QUEUED", 0, None), "no try used");
    for id in &later {
        let email = room.email(id);
        assert_eq!((email.status.as_str(), email.attempts, email.last_error), ("QUEUED", 0, None), "{id}");
        // Never claimed: a claimed one would have been handed back due at the end of the rest.
        let due = due(id);
        assert!(
            due <= email.created_at,
            "not claimed while the relay rests: due {due}, created {}",
            email.created_at
        );
    }
}

#[tokio::test]
async fn a_relays_rate_cap_holds_for_everything_sent_through_it() {
    let sink = SmtpSink::start();
    let capped = RelayConfig { max_messages_per_second: 4, ..relay(sink.port) };
    let relays = Arc::new(relays(vec![capped], Duration::from_secs(60)));
    // 4 at once (the burst), then one every 250 ms: the 10th leaves 1.5 s after the first.
    let started = Instant::now();
    for sent in send_at_once(&relays, 0..10).await {
        sent.unwrap();
    }
    assert_eq!(sink.messages().len(), 10);
    assert!(started.elapsed() >= Duration::from_millis(1400), "{:?}", started.elapsed());

    // A wait longer than a moment is not spent holding the message: it goes back to the queue.
    let mut busy = 0;
    for sent in send_at_once(&relays, 100..120).await {
        match sent {
            Ok(()) => {}
            Err(Refusal::Busy(wait)) => {
                assert!(wait > Duration::ZERO, "{wait:?}");
                busy += 1;
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    assert!(busy > 0, "some of the flood is handed back");
}

#[tokio::test]
async fn the_pool_shrinks_to_the_connections_a_relay_accepts() {
    let sink = SmtpSink::with_connection_limit(2);
    let relays =
        Arc::new(relays(vec![RelayConfig { pool_size: 8, ..relay(sink.port) }], Duration::from_secs(60)));
    for sent in send_at_once(&relays, 0..40).await {
        sent.unwrap();
    }
    assert_eq!(sink.messages().len(), 40, "every message went through the connections it has");
    assert!(sink.turned_away() > 0, "the relay did refuse extra connections");
    assert!(relays.list()[0].pool_size() <= 2, "{}", relays.list()[0].pool_size());
    assert!(!relays.list()[0].resting(), "a connection limit is not a failure");
}

#[rocket::async_test]
async fn sent_mail_goes_through_the_configured_relays_in_order() {
    let down = closed_port();
    let second = SmtpSink::start();
    let second_port = second.port;
    let room = Mailroom::with(|c| {
        c.smtp.host = Some("ignored.invalid".into());
        c.smtp.relays = vec![relay(down), RelayConfig { max_messages_per_second: 100, ..relay(second_port) }];
    })
    .await;
    let ids = room
        .send_ok(json!({
            "to": ["a@example.org", "b@example.org", "c@example.org"],
            "from": "hello@example.test",
            "subject": "Hi",
            "body": "<p>Hello</p>",
        }))
        .await;
    assert_eq!(ids.len(), 3);
    let app = &room.app;
    // Until the sends are recorded too: the relay keeps a message before it answers.
    app.run_jobs_until("three messages at the second relay, recorded", async || {
        second.messages().len() >= 3 && ids.iter().all(|id| room.email(id).status == "SENT")
    })
    .await;
    assert!(room.sink.messages().is_empty(), "the [smtp] host is not used");
    for id in &ids {
        let email = room.email(id);
        assert_eq!(email.status, "SENT", "{id}");
    }
    let mut to: Vec<String> = second.messages().iter().flat_map(|m| m.to.clone()).collect();
    to.sort();
    assert_eq!(to, ["a@example.org", "b@example.org", "c@example.org"]);
}

#[tokio::test]
async fn an_implicit_tls_relay_is_spoken_to_in_tls_from_the_first_byte() {
    // A listener that records what the client sends first: an SMTP client waits for the
    // greeting, a TLS client opens with a handshake record (0x16, version 3.x).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let first_bytes = std::thread::spawn(move || {
        use std::io::Read;
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = [0u8; 2];
        stream.read_exact(&mut head).unwrap();
        head
    });
    let backup = SmtpSink::start();
    let tls = RelayConfig { host: "localhost".into(), security: SmtpSecurity::Tls, ..relay(port) };
    let relays = relays(vec![tls, relay(backup.port)], Duration::from_secs(60));
    send(&relays, 1).await.unwrap();
    assert_eq!(first_bytes.join().unwrap(), [0x16, 0x03], "a TLS handshake record");
    assert!(relays.list()[0].resting(), "the handshake failed, so the relay rests");
    assert_eq!(backup.messages().len(), 1);
}
