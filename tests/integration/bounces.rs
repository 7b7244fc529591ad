//! The bounce listener (appliance.md §12): mail leaves with a signed VERP envelope sender, and
//! DSNs (RFC 3464, postfix- and Exchange-style) and feedback reports (RFC 5965) sent over SMTP
//! to the listener bounce and complain the email it names. Unknown tokens, other domains and
//! oversized messages are refused, and nothing else changes.

use lettre::address::Envelope;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::send::Mailroom;

const DOMAIN: &str = "bounces.example.test";

struct Listener {
    port: u16,
    _stop: tokio::sync::watch::Sender<bool>,
}

/// A room whose mail leaves with VERP senders, and its listener running on loopback.
async fn room(max_bytes: u64) -> (Mailroom, Listener) {
    room_with(move |c| c.bounces.max_message_bytes = max_bytes).await
}

/// As [`room`], with `tweak` applied to the configuration.
async fn room_with(
    tweak: impl FnOnce(&mut tidings::config::Config) + Send + 'static,
) -> (Mailroom, Listener) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let room = Mailroom::with(move |c| {
        c.bounces.listen = Some(addr);
        c.bounces.domain = Some(DOMAIN.into());
        tweak(c);
    })
    .await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tidings::listeners::smtp::bounces::start(room.app.state.clone(), listener, stopped);
    (room, Listener { port: addr.port(), _stop: stop })
}

/// Sends `raw` over SMTP from the null sender to `to` at the listener on `port`, as a bouncing
/// MTA does.
pub async fn report(port: u16, to: &str, raw: &str) -> Result<(), String> {
    deliver(port, None, to, raw).await
}

/// Delivers `raw` over SMTP to the listener on `port`, from envelope sender `from` (none: the
/// null sender of a report).
pub async fn deliver(port: u16, from: Option<&str>, to: &str, raw: &str) -> Result<(), String> {
    let smtp = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(port).build();
    let from = from.map(|f| f.parse()).transpose().map_err(|e| format!("{e}"))?;
    let envelope = Envelope::new(from, vec![to.parse().map_err(|e| format!("{e}"))?]).unwrap();
    smtp.send_raw(&envelope, raw.as_bytes()).await.map(drop).map_err(|e| e.to_string())
}

/// A postfix-style DSN (RFC 3464) whose one recipient had `action` and `status`.
pub fn dsn(action: &str, status: &str, diagnostic: &str) -> String {
    format!(
        "From: MAILER-DAEMON@mx.example.net\r\nTo: {DOMAIN}\r\nSubject: Undelivered Mail Returned to Sender\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status;\r\n\tboundary=\"B0UND\"\r\n\r\n\
--B0UND\r\nContent-Description: Notification\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n\
This is the mail system at host mx.example.net.\r\n\r\n--B0UND\r\nContent-Description: Delivery report\r\n\
Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.net\r\nX-Postfix-Queue-ID: 4Xyz\r\n\
Arrival-Date: Tue, 24 Nov 2026 06:00:00 +0000 (UTC)\r\n\r\nFinal-Recipient: rfc822; someone@example.net\r\n\
Original-Recipient: rfc822;someone@example.net\r\nAction: {action}\r\nStatus: {status}\r\n\
Remote-MTA: dns; mail.example.net\r\nDiagnostic-Code: {diagnostic}\r\n\r\n--B0UND\r\n\
Content-Description: Undelivered Message Headers\r\nContent-Type: text/rfc822-headers\r\n\r\nSubject: Hi\r\n\r\n--B0UND--\r\n"
    )
}

/// RFC 5965's example of an abuse report (shortened).
pub fn arf(kind: &str) -> String {
    format!(
        "From: <abusedesk@example.com>\r\nDate: Thu, 8 Mar 2005 17:40:36 EDT\r\nSubject: FW: Earn money\r\nTo: <abuse@{DOMAIN}>\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=feedback-report;\r\n     boundary=\"part1_13d.2e68ed54_boundary\"\r\n\r\n\
--part1_13d.2e68ed54_boundary\r\nContent-Type: text/plain; charset=\"US-ASCII\"\r\n\r\n\
This is an email abuse report for an email message received from IP\r\n192.0.2.1 on Thu, 8 Mar 2005 14:00:00 EDT.\r\n\r\n\
--part1_13d.2e68ed54_boundary\r\nContent-Type: message/feedback-report\r\n\r\nFeedback-Type: {kind}\r\n\
User-Agent: SomeGenerator/1.0\r\nVersion: 1\r\n\r\n--part1_13d.2e68ed54_boundary\r\nContent-Type: message/rfc822\r\n\
Content-Disposition: inline\r\n\r\nFrom: <somespammer@example.net>\r\nSubject: Earn money\r\n\r\nSpam Spam Spam\r\n\
--part1_13d.2e68ed54_boundary--\r\n"
    )
}

async fn contact(room: &Mailroom, email: &str) -> Value {
    let key = &room.keys.secret_key;
    let (_, found) = room.app.post("/contacts/lookup", key, json!({ "emails": [email] })).await;
    let id = found["data"][0]["id"].as_str().unwrap();
    room.app.get(&format!("/contacts/{id}"), key).await.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_over_smtp_bounce_and_complain_the_email_their_address_names() {
    let (room, listener) = room(1024 * 1024).await;
    let mut ids = Vec::new();
    for to in ["ada@example.com", "bob@example.com", "cy@example.com", "dee@example.com"] {
        ids.extend(
            room.send_ok(
                json!({ "to": to, "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }),
            )
            .await,
        );
    }
    let messages = room.deliver(4).await;
    let verp: Vec<String> = ids
        .iter()
        .map(|id| {
            let to = room.email(id).to_email;
            messages.iter().find(|m| m.to == [to.clone()]).unwrap().from.clone()
        })
        .collect();
    for (address, id) in verp.iter().zip(&ids) {
        assert!(address.starts_with("b-") && address.ends_with(&format!("@{DOMAIN}")), "{address}");
        assert_eq!(
            tidings::core::verp::email_of(&room.app.state.secrets.link, address, DOMAIN).as_deref(),
            Some(id.as_str())
        );
    }

    // A postfix hard bounce, an Exchange one, a postfix delay (soft) and an abuse report.
    let postfix =
        dsn("failed", "5.1.1", "smtp; 550 5.1.1 <ada@example.com>: Recipient address rejected: User unknown");
    report(listener.port, &verp[0], &postfix).await.unwrap();
    let exchange = dsn(
        "failed",
        "5.1.10",
        "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
    );
    report(listener.port, &verp[1], &exchange).await.unwrap();
    report(listener.port, &verp[2], &dsn("delayed", "4.4.1", "smtp; 421 4.4.1 connection timed out"))
        .await
        .unwrap();
    report(listener.port, &verp[3], &arf("abuse")).await.unwrap();

    let status = |i: usize| room.email(&ids[i]).status;
    assert_eq!([status(0), status(1), status(2), status(3)], ["BOUNCED", "BOUNCED", "BOUNCED", "COMPLAINED"]);
    let ada = contact(&room, "ada@example.com").await;
    assert_eq!(ada["suppression"]["reason"], "hard_bounce", "{ada}");
    assert!(ada["suppression"]["detail"].as_str().unwrap().contains("User unknown"));
    assert_eq!(contact(&room, "bob@example.com").await["suppression"]["reason"], "hard_bounce");
    let cy = contact(&room, "cy@example.com").await;
    assert_eq!(
        (cy["suppression"].clone(), cy["subscribed"].clone()),
        (Value::Null, json!(false)),
        "soft: kept, but /v1/send made cy unsubscribed"
    );
    assert_eq!(contact(&room, "dee@example.com").await["suppression"]["reason"], "complaint");
    let (_, bounced) = room.app.get("/events?name=email.bounced", &room.keys.secret_key).await;
    let kinds: Vec<&str> = bounced["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["bounceType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["soft", "hard", "hard"]);
    // Hard bounces and complaints land on the project's suppression list, saying which.
    let (_, listed) = room.app.get("/suppressions", &room.keys.secret_key).await;
    let mut listed: Vec<(String, String)> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["value"].as_str().unwrap().to_string(), e["source"].as_str().unwrap().to_string()))
        .collect();
    listed.sort();
    let expected =
        [("ada@example.com", "bounce"), ("bob@example.com", "bounce"), ("dee@example.com", "complaint")];
    assert_eq!(listed, expected.map(|(a, s)| (a.to_string(), s.to_string())));

    // Not a report (an auto-reply), or a report that is not a complaint: taken, nothing changes.
    let before = room.email(&ids[2]).status;
    report(listener.port, &verp[2], "Subject: Out of office\r\n\r\nI am away.\r\n").await.unwrap();
    report(listener.port, &verp[2], &arf("not-spam")).await.unwrap();
    assert_eq!(room.email(&ids[2]).status, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_tokens_other_domains_and_oversized_reports_are_refused() {
    let (room, listener) = room(16 * 1024).await;
    let ids = room.send_ok(json!({ "to": "ada@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" })).await;
    let messages = room.deliver(1).await;
    let verp = messages[0].from.clone();
    let bounce = dsn("failed", "5.1.1", "smtp; 550 user unknown");

    // A made-up token, an altered one, a forged one for another email, and relaying elsewhere.
    let forged = tidings::core::verp::address("not the secret", &ids[0], DOMAIN);
    let altered = verp.replacen("b-0", "b-1", 1);
    for to in [
        "b-00000000000000000000000000000000-00000000000000000000@bounces.example.test",
        &altered,
        &forged,
        "someone@gmail.com",
        "postmaster@bounces.example.test",
    ] {
        let refused = report(listener.port, to, &bounce).await.unwrap_err();
        assert!(refused.contains("550") || refused.to_lowercase().contains("permanent"), "{to}: {refused}");
    }
    // Too big for the listener.
    let padding = "x".repeat(100);
    let big = bounce.replace(
        "This is the mail system",
        &format!("{}\r\nThis is the mail system", vec![padding; 300].join("\r\n")),
    );
    let refused = report(listener.port, &verp, &big).await.unwrap_err();
    assert!(
        refused.contains("552")
            || refused.to_lowercase().contains("size")
            || refused.to_lowercase().contains("big"),
        "{refused}"
    );
    assert_eq!(room.email(&ids[0]).status, "SENT", "nothing refused changed anything");
    assert_eq!(contact(&room, "ada@example.com").await["suppression"], Value::Null);

    // The right address still works afterwards.
    report(listener.port, &verp, &bounce).await.unwrap();
    assert_eq!(room.email(&ids[0]).status, "BOUNCED");
}

/// A raw SMTP session with the listener, from `source` (a loopback address).
struct Session {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::net::tcp::OwnedReadHalf>>,
    write: tokio::net::tcp::OwnedWriteHalf,
}

impl Session {
    async fn open(port: u16, source: &str) -> Session {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        let stream = socket.connect(format!("127.0.0.1:{port}").parse().unwrap()).await.unwrap();
        let (read, write) = stream.into_split();
        use tokio::io::AsyncBufReadExt;
        Session { lines: tokio::io::BufReader::new(read).lines(), write }
    }

    /// The next line from the server (`None` once it has closed).
    async fn line(&mut self) -> Option<String> {
        let next = tokio::time::timeout(std::time::Duration::from_secs(10), self.lines.next_line()).await;
        next.expect("the server answers or closes within 10 s").ok().flatten()
    }

    async fn say(&mut self, line: &str) {
        use tokio::io::AsyncWriteExt;
        let _ = self.write.write_all(format!("{line}\r\n").as_bytes()).await;
    }

    /// Every line until the server closes.
    async fn rest(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(line) = self.line().await {
            lines.push(line);
        }
        lines
    }
}

/// Junk counts toward a session's 100 lines, a session ends after `session_secs` however busy,
/// and one client holds at most `max_connections_per_peer` sessions: holding every connection
/// with a junk line every 45 s once kept real bounces out for good (issue 29, item 10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_one_client_can_hold_the_bounce_listener() {
    let (_room, listener) = room_with(|c| {
        c.bounces.max_connections_per_peer = 2;
        c.bounces.session_secs = 2;
        c.bounces.idle_secs = 1;
    })
    .await;
    // Junk lines are lines.
    let mut junk = Session::open(listener.port, "127.0.0.1").await;
    assert!(junk.line().await.unwrap().starts_with("220 "));
    for _ in 0..101 {
        junk.say("WHATEVER this is").await;
    }
    let said = junk.rest().await;
    assert_eq!(said.iter().filter(|l| l.starts_with("500 ")).count(), 100, "{said:?}");
    assert!(said.last().unwrap().starts_with("421 4.7.0 too many commands"), "{said:?}");

    // A session kept busy ends all the same; a silent one sooner.
    let mut busy = Session::open(listener.port, "127.0.0.1").await;
    busy.line().await;
    let started = std::time::Instant::now();
    let said = loop {
        busy.say("NOOP").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        if started.elapsed() > std::time::Duration::from_secs(5) {
            break busy.rest().await;
        }
    };
    assert!(said.iter().any(|l| l.starts_with("421 4.4.2 session too long")), "{said:?}");
    let mut silent = Session::open(listener.port, "127.0.0.1").await;
    silent.line().await;
    assert!(silent.rest().await.last().unwrap().starts_with("421 4.4.2 idle"));

    // One client holds two sessions; its third is turned away, another client is served.
    let (mut first, mut second) =
        (Session::open(listener.port, "127.0.0.1").await, Session::open(listener.port, "127.0.0.1").await);
    assert!(first.line().await.unwrap().starts_with("220 "));
    assert!(second.line().await.unwrap().starts_with("220 "));
    let mut third = Session::open(listener.port, "127.0.0.1").await;
    assert!(third.line().await.unwrap().starts_with("421 4.7.0 too many connections from your address"));
    let mut other = Session::open(listener.port, "127.0.0.2").await;
    assert!(other.line().await.unwrap().starts_with("220 "), "another client is served");
}
