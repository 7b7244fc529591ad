//! `/v1/send` and delivery: real messages into an SMTP sink on loopback, parsed and checked,
//! DKIM verified against the key published in a DNS server on loopback.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use mail_auth::{AuthenticatedMessage, DkimResult, MessageAuthenticator};
use mail_parser::{MessageParser, MimeHeaders};
use rocket::http::{Header, Status};
use serde_json::{Value, json};
use tidings::db::emails;

use crate::common::dns_server::DnsServer;
use crate::common::smtp_sink::{Received, SmtpSink};
use crate::common::store::NotNull;
use crate::common::{Keys, TestApp, assert_envelope};

pub const LINKS: &str = "https://links.example.test";

/// An app with a verified sender domain, an SMTP sink as its relay and a DNS server.
pub struct Mailroom {
    pub app: TestApp,
    /// The owner's session.
    pub session: rocket::http::Cookie<'static>,
    pub keys: Keys,
    pub dns: DnsServer,
    pub sink: SmtpSink,
}

impl Mailroom {
    pub async fn new() -> Mailroom {
        Self::with(|_| {}).await
    }

    pub async fn with(tweak: impl FnOnce(&mut tidings::config::Config)) -> Mailroom {
        let dns = DnsServer::start(&["test"]).await;
        let sink = SmtpSink::start();
        let (nameserver, port) = (dns.nameserver(), sink.port);
        let app = TestApp::with(|c| {
            c.dns.nameservers = vec![nameserver];
            c.smtp.host = Some("127.0.0.1".into());
            c.smtp.port = port;
            c.smtp.security = tidings::config::SmtpSecurity::None;
            c.server.public_url = Some(LINKS.into());
            tweak(c);
        })
        .await;
        let (session, keys) = app.user_with_project("owner@example.com").await;
        let room = Mailroom { app, session, keys, dns, sink };
        // Signing the owner up queued an address verification mail; these tests are about
        // their own mail, so it is dropped before anything is delivered.
        room.app.store().delete("emails", &[("project_id", "system".into())]);
        room.verify_domain("example.test").await;
        room
    }

    pub async fn verify_domain(&self, name: &str) {
        let (_, domain) = self.app.post("/domains", &self.keys.secret_key, json!({ "domain": name })).await;
        for record in domain["records"].as_array().unwrap() {
            self.dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
        }
        let (_, checked) = self
            .app
            .get(&format!("/domains/{}/verify", domain["id"].as_str().unwrap()), &self.keys.secret_key)
            .await;
        assert_eq!(checked["status"], json!("verified"), "{checked}");
    }

    pub async fn send(&self, body: Value) -> (Status, Value) {
        self.app.post("/v1/send", &self.keys.secret_key, body).await
    }

    /// Sends and expects success; returns the email ids.
    pub async fn send_ok(&self, body: Value) -> Vec<String> {
        let (status, response) = self.send(body.clone()).await;
        assert_eq!(status, Status::Ok, "{body} -> {response}");
        response["data"]["emails"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["email"].as_str().unwrap().to_string())
            .collect()
    }

    /// Runs the workers until the sink has `n` messages.
    /// Runs the jobs until `n` messages reached the sink and `n` emails are recorded as sent.
    /// The sink keeps a message before it answers, so the send is recorded a moment later; a
    /// test that stopped at the sink alone would stop the worker in between (the tests give it
    /// no grace), and the email, handed back unrecorded, would go again.
    pub async fn deliver(&self, n: usize) -> Vec<Received> {
        let (sink, app) = (&self.sink, &self.app);
        let recorded = || app.store().count("emails", &[("sent_at", NotNull)]) as usize;
        app.run_jobs_until(&format!("{n} messages at the sink, recorded"), async || {
            sink.messages().len() >= n && recorded() >= n
        })
        .await;
        sink.messages()
    }

    pub fn email(&self, id: &str) -> emails::Email {
        emails::get(&self.app.state.db.conn().unwrap(), id).unwrap().unwrap()
    }

    /// Verifies every DKIM signature of a message against the keys published in DNS.
    pub async fn dkim_passes(&self, raw: &[u8]) -> bool {
        let mut server = NameServerConfig::udp_and_tcp(self.dns.nameserver().ip());
        let (mut udp, mut tcp) = (ConnectionConfig::udp(), ConnectionConfig::tcp());
        udp.port = self.dns.nameserver().port();
        tcp.port = self.dns.nameserver().port();
        server.connections = vec![udp, tcp];
        // A loopback server, but one that shares two cores with the whole suite: a generous wait.
        let mut opts = ResolverOpts::default();
        opts.timeout = std::time::Duration::from_secs(30);
        let authenticator =
            MessageAuthenticator::new(ResolverConfig::from_parts(None, vec![], vec![server]), opts).unwrap();
        let message = AuthenticatedMessage::parse(raw).expect("a parseable message");
        let results = authenticator.verify_dkim(&message).await;
        !results.is_empty() && results.iter().all(|r| r.result() == &DkimResult::Pass)
    }
}

pub(crate) fn parse(raw: &[u8]) -> mail_parser::Message<'_> {
    MessageParser::default().parse(raw).expect("a MIME message")
}

/// The display name and address of the From header.
fn sender(message: &mail_parser::Message<'_>) -> (Option<String>, String) {
    let from = message.from().and_then(|a| a.first()).expect("a From address");
    (from.name().map(str::to_string), from.address().unwrap_or_default().to_string())
}

pub(crate) fn header<'a>(message: &'a mail_parser::Message<'a>, name: &str) -> Option<String> {
    message.header_raw(name).map(|v| v.trim().to_string())
}

#[rocket::async_test]
async fn a_template_renders_every_feature_and_the_message_is_signed() {
    let room = Mailroom::new().await;
    let body = r#"<html><body><h1>Hi {{ name }}!</h1>
<p>Plan: {{ plan | upcase }}. Tier: {{ profile.tier }}. Nick: {{ nickname ?? "friend" }}. {{ first name }} / {{ data["first name"] }}</p>
{% if plan == "pro" and seats > 2 %}<p>Team of {{ seats }}</p>{% else %}<p>Solo</p>{% endif %}
<ul>{% for item in items %}<li>{{ forloop.index }}. {{ item.name }} x{{ item.qty }}</li>{% endfor %}</ul>
<p>{{ total | times: 2 | round: 2 }} {{ code }} {{ email }}</p>
<a href="https://shop.example.test/orders?id=7&amp;x=1">Your order</a>
</body></html>"#;
    let (status, template) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": "Receipt", "subject": "Receipt for {{ name ?? \"you\" }}", "body": body,
                "from": "shop@example.test", "fromName": "The Shop", "replyTo": "help@example.test", "type": "TRANSACTIONAL" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{template}");
    let ids = room
        .send_ok(json!({
            "to": { "name": "Ada Lovelace", "email": "ada@example.test" },
            "template": template["id"],
            "data": { "name": "Ada", "plan": "pro", "seats": 3, "profile": { "tier": "gold" }, "first name": "Augusta",
                "items": [{ "name": "Lens", "qty": 2 }, { "name": "Cap", "qty": 1 }], "total": 10.125,
                "code": { "value": "X-42", "persistent": false } },
            "headers": { "X-Order": "7" }
        }))
        .await;
    let messages = room.deliver(1).await;
    let raw = &messages[0].data;
    assert_eq!(messages[0].from, "shop@example.test");
    assert_eq!(messages[0].to, ["ada@example.test"]);
    let message = parse(raw);
    assert_eq!(message.subject(), Some("Receipt for Ada"));
    let html = message.body_html(0).unwrap().to_string();
    for expected in [
        "<h1>Hi Ada!</h1>",
        "Plan: PRO.",
        "Tier: gold.",
        "Nick: friend.",
        "Augusta / Augusta",
        "<p>Team of 3</p>",
        "<li>1. Lens x2</li><li>2. Cap x1</li>",
        "20.25 X-42 ada@example.test",
    ] {
        assert!(html.contains(expected), "{expected} in {html}");
    }
    assert!(!html.contains("shop.example.test/orders"), "links go through the click redirect");
    assert!(html.contains(&format!("{LINKS}/t/c/")) && html.contains(&format!("{LINKS}/t/o/")));
    let text = message.body_text(0).unwrap().to_string();
    assert!(text.contains("Hi Ada!") && text.contains("Lens x2"), "{text}");
    assert!(header(&message, "Content-Type").unwrap().starts_with("multipart/alternative"));
    assert_eq!(header(&message, "Message-ID").unwrap(), room.email(&ids[0]).message_id);
    assert!(header(&message, "Date").is_some());
    assert!(header(&message, "From").unwrap().contains("The Shop"));
    assert!(header(&message, "To").unwrap().contains("Ada Lovelace"));
    assert!(header(&message, "Reply-To").unwrap().contains("help@example.test"));
    assert_eq!(header(&message, "X-Order").as_deref(), Some("7"));
    assert!(header(&message, "List-Unsubscribe").is_none(), "transactional mail has no List-Unsubscribe");
    assert!(header(&message, "DKIM-Signature").unwrap().contains("d=example.test"));
    assert!(room.dkim_passes(raw).await, "the DKIM signature verifies against the published key");

    // The email moved to SENT and emitted email.sent; the one-off value was not stored.
    let email = room.email(&ids[0]);
    assert_eq!((email.status.as_str(), email.attempts), ("SENT", 1));
    assert_eq!(email.subject, "Receipt for Ada");
    let contact = email.contact_id.unwrap();
    let names = tidings::db::events::names_for_contact(&room.app.state.db.conn().unwrap(), &contact).unwrap();
    assert_eq!(names, ["email.sent"]);
    let (_, stored) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert!(stored["data"].get("code").is_none());
    assert_eq!(stored["subscribed"], json!(false), "a contact made by /v1/send is not subscribed");

    // A tampered message no longer verifies.
    let tampered = String::from_utf8_lossy(raw).replace("Hi Ada!", "Hi Eve!");
    assert!(!room.dkim_passes(tampered.as_bytes()).await);
}

#[rocket::async_test]
async fn each_recipient_gets_their_own_rendering() {
    let room = Mailroom::new().await;
    for (email, name) in [("ada@example.test", "Ada"), ("grace@example.test", "Grace")] {
        room.app
            .post("/contacts", &room.keys.secret_key, json!({ "email": email, "data": { "name": name } }))
            .await;
    }
    let ids = room
        .send_ok(json!({
            "to": ["ada@example.test", { "email": "grace@example.test", "name": "G. Hopper" }, "new@example.test"],
            "from": { "email": "hello@example.test", "name": "Hello" },
            "subject": "Hi {{ name ?? \"there\" }}",
            "body": "<p>Dear {{ name ?? \"reader\" }}</p>"
        }))
        .await;
    assert_eq!(ids.len(), 3);
    let mut subjects: Vec<String> =
        room.deliver(3).await.iter().map(|m| parse(&m.data).subject().unwrap().to_string()).collect();
    subjects.sort();
    assert_eq!(subjects, ["Hi Ada", "Hi Grace", "Hi there"]);
}

#[rocket::async_test]
async fn request_fields_override_the_template() {
    let room = Mailroom::new().await;
    room.verify_domain("other.test").await;
    let (_, template) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": "T", "subject": "From template", "body": "<p>Template body</p>", "from": "a@example.test", "fromName": "Template Name", "type": "TRANSACTIONAL" }),
        )
        .await;
    room.send_ok(json!({ "to": "x@example.test", "template": template["id"], "subject": "Overridden", "from": "b@other.test", "name": "Legacy Name" })).await;
    room.send_ok(json!({ "to": "y@example.test", "template": template["id"] })).await;
    let messages = room.deliver(2).await;
    let by_to = |to: &str| messages.iter().find(|m| m.to[0] == to).map(|m| m.data.clone()).unwrap();
    let first = by_to("x@example.test");
    let first = parse(&first);
    assert_eq!(first.subject(), Some("Overridden"));
    assert_eq!(sender(&first), (Some("Legacy Name".to_string()), "b@other.test".to_string()));
    assert!(first.body_html(0).unwrap().contains("<p>Template body</p>"), "the template body is kept");
    let second = by_to("y@example.test");
    let second = parse(&second);
    assert_eq!(second.subject(), Some("From template"));
    assert_eq!(sender(&second), (Some("Template Name".to_string()), "a@example.test".to_string()));
}

#[rocket::async_test]
async fn attachments_are_delivered() {
    let room = Mailroom::new().await;
    let pdf = b"%PDF-1.4 not really a pdf".to_vec();
    let to = ["ada@example.test", "bob@example.test", "cy@example.test"];
    room.send_ok(json!({
        "to": to, "from": "hello@example.test", "subject": "Invoice", "body": "<p>Attached</p>",
        "attachments": [{ "filename": "invoice.pdf", "content": STANDARD.encode(&pdf), "contentType": "application/pdf" }]
    }))
    .await;
    // Stored once for the three recipients, not on each one's row.
    let sets = || room.app.store().count("attachment_sets", &[]);
    assert_eq!(sets(), 1);
    assert_eq!(room.app.store().count("emails", &[("attachments", NotNull)]), 0);
    assert_eq!(room.app.store().distinct("emails", "attachment_set", &[]), 1);
    let messages = room.deliver(3).await;
    for raw in &messages {
        let message = parse(&raw.data);
        assert!(header(&message, "Content-Type").unwrap().starts_with("multipart/mixed"));
        let attachment = message.attachments().next().expect("an attachment");
        assert_eq!(attachment.attachment_name(), Some("invoice.pdf"));
        assert_eq!(attachment.contents(), pdf.as_slice());
        assert!(room.dkim_passes(&raw.data).await);
    }
    // Once every message has left the queue, the copy goes.
    room.app.run_jobs_until("the attachments dropped", async || sets() == 0).await;

    // A request none of whose emails may go (MARKETING to a contact /v1/send made unsubscribed)
    // keeps no copy either.
    let (_, template) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": "News", "subject": "s", "body": "<p>b</p>",
            "from": "hello@example.test", "type": "MARKETING" }),
        )
        .await;
    room.send_ok(json!({ "to": "new@example.test", "template": template["id"],
        "attachments": [{ "filename": "a.txt", "content": STANDARD.encode(b"a") }] }))
        .await;
    let failed = [("to_email", "new@example.test".into()), ("status", "FAILED".into())];
    assert_eq!(room.app.store().count("emails", &failed), 1);
    assert_eq!(sets(), 0);
}

#[rocket::async_test]
async fn bad_requests_are_refused_and_send_nothing() {
    let room = Mailroom::new().await;
    let base = json!({ "to": "ada@example.test", "from": "hello@example.test", "subject": "Hi", "body": "<p>x</p>" });
    let with = |patch: Value| {
        let mut body = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        body
    };
    for (patch, field) in [
        (json!({ "headers": { "X-Evil": "a\r\nBcc: victim@example.test" } }), "headers.X-Evil"),
        (json!({ "headers": { "Bcc": "victim@example.test" } }), "headers.Bcc"),
        (json!({ "subject": "two\nlines" }), "subject"),
        (json!({ "subject": "x".repeat(999) }), "subject"),
        (json!({ "subject": null }), "subject"),
        (json!({ "body": "" }), "body"),
        (json!({ "body": "{% if %}" }), "body"),
        (json!({ "to": null }), "to"),
        (json!({ "to": "not-an-email" }), "to"),
        (json!({ "to": [{ "name": "no email" }] }), "to[0].email"),
        (json!({ "from": null }), "from"),
        (json!({ "reply": "nope" }), "reply"),
        (json!({ "template": "no-such-template", "subject": null, "body": null }), "template"),
        (json!({ "attachments": [{ "filename": "a", "content": "%%%" }] }), "attachments[0].content"),
        (json!({ "cc": "x@example.test" }), "cc"),
    ] {
        let (status, response) = room.send(with(patch.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{patch}: {response}");
        assert_eq!(response["error"]["errors"][0]["field"], json!(field), "{patch}: {response}");
    }
    let too_many = vec![json!({ "filename": "a.txt", "content": "YQ==" }); 11];
    assert_eq!(room.send(with(json!({ "attachments": too_many }))).await.0, Status::UnprocessableEntity);

    // An unverified sender: 403 with the code, details and suggestion of appliance.md.
    let (status, response) = room.send(with(json!({ "from": "someone@unverified.test" }))).await;
    assert_eq!(status, Status::Forbidden);
    assert_eq!(response["error"]["code"], json!("INTERNAL_SERVER_ERROR"));
    assert_eq!(
        response["error"]["details"],
        json!({ "domain": "unverified.test", "reason": "DOMAIN_NOT_VERIFIED" })
    );
    assert!(response["error"]["suggestion"].is_string());

    // A public key is not enough.
    let (status, _) = room.app.post("/v1/send", &room.keys.public_key, base.clone()).await;
    assert_eq!(status, Status::Unauthorized);

    assert_eq!(room.app.store().count("emails", &[]), 0, "nothing was queued");
    assert_eq!(room.app.store().count("contacts", &[]), 0, "no contact was made");
}

#[rocket::async_test]
async fn a_large_attachment_is_413() {
    let room = Mailroom::with(|c| {
        c.limits.attachment_bytes = 1024;
        c.limits.message_bytes = 1024 * 1024;
    })
    .await;
    let big = STANDARD.encode(vec![7u8; 2048]);
    let (status, response) = room
        .send(json!({ "to": "a@example.test", "from": "h@example.test", "subject": "s", "body": "b",
            "attachments": [{ "filename": "big.bin", "content": big }] }))
        .await;
    assert_eq!(status, Status::PayloadTooLarge, "{response}");
    assert_eq!(response["error"]["code"], json!("PAYLOAD_TOO_LARGE"));
}

#[rocket::async_test]
async fn an_idempotent_replay_sends_nothing() {
    let room = Mailroom::new().await;
    let body = json!({ "to": "ada@example.test", "from": "hello@example.test", "subject": "Once", "body": "<p>once</p>" });
    let send = |key: &'static str| {
        room.app
            .keyed(room.app.client.post("/v1/send"), &room.keys.secret_key)
            .header(Header::new("Idempotency-Key", key))
            .body(body.to_string())
    };
    assert_eq!(send("order-1").dispatch().await.status(), Status::Ok);
    let replay = send("order-1").dispatch().await;
    let error = assert_envelope(replay, 409, "IDEMPOTENCY_KEY_REUSED").await;
    assert_eq!(error["details"]["originalRequest"], json!("POST /v1/send"));
    room.deliver(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(room.sink.messages().len(), 1);
    assert_eq!(room.app.store().count("emails", &[]), 1);
}
