//! Inbound mail (issue 31) through real clients: Python's smtplib delivers real messages (plain,
//! multipart with attachments, a reply to a campaign, a forged sender, a message Tidings signed)
//! to the inbound listener on loopback. SPF, DKIM and DMARC are checked against a real DNS
//! server; what arrives reaches a route's webhook, starts a workflow, shows on the contact, and
//! counts a reply in its campaign. What must be refused is refused at RCPT, and kept nowhere.
//! swaks delivers a multipart message with a binary attachment, and is refused for a mailbox no
//! route takes.

use base64::Engine;
use rocket::http::Status;
use serde_json::{Value, json};
use tempfile::TempDir;
use tidings::listeners::smtp::inbound;
use tokio::sync::watch;

use crate::common::http_receiver::HttpReceiver;
use crate::send::Mailroom;

/// smtplib: builds a message from a JSON spec (Python's email package) or takes raw bytes, and
/// sends it to the listener; prints what happened as JSON.
const SEND: &str = r#"
import base64, json, smtplib, sys
from email.message import EmailMessage
port, path = int(sys.argv[1]), sys.argv[2]
spec = json.load(open(path))
if "raw" in spec:
    data = base64.b64decode(spec["raw"])
else:
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = spec["from"], ", ".join(spec["rcpts"]), spec["subject"]
    for name, value in spec.get("headers", {}).items():
        m[name] = value
    m.set_content(spec["text"])
    if "html" in spec:
        m.add_alternative(spec["html"], subtype="html")
    for a in spec.get("attachments", []):
        kind, sub = a["type"].split("/")
        m.add_attachment(base64.b64decode(a["b64"]), maintype=kind, subtype=sub, filename=a["name"])
    data = m.as_bytes()
out = {}
s = smtplib.SMTP("127.0.0.1", port, local_hostname="mx.good.test", timeout=30)
try:
    refused = s.sendmail(spec["mailFrom"], spec["rcpts"], data)
    out["sent"] = True
    out["refused"] = {k: v[0] for k, v in refused.items()}
except smtplib.SMTPRecipientsRefused as e:
    out["refused"] = {k: v[0] for k, v in e.recipients.items()}
except smtplib.SMTPResponseException as e:
    out["code"], out["text"] = e.smtp_code, e.smtp_error.decode()
try:
    s.quit()
except Exception:
    pass
print(json.dumps(out))
"#;

/// A mailroom with the inbound listener on a loopback port and an inbound domain verified.
struct Inbox {
    room: Mailroom,
    port: u16,
    dir: TempDir,
    _stop: watch::Sender<bool>,
}

const DOMAIN: &str = "in.example.test";

impl Inbox {
    async fn new(tweak: impl FnOnce(&mut tidings::config::Config)) -> Inbox {
        let room = Mailroom::with(|c| {
            c.webhooks.allow_private = true;
            tweak(c);
        })
        .await;
        let (stop, stopped) = watch::channel(false);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        inbound::start(room.app.state.clone(), listener, stopped);
        // Senders' DNS: good.test passes SPF for loopback under a strict DMARC policy; spoof.test
        // lets no server send for it.
        room.dns.txt("good.test", "v=spf1 ip4:127.0.0.1 -all").await;
        room.dns.txt("_dmarc.good.test", "v=DMARC1; p=reject").await;
        room.dns.txt("spoof.test", "v=spf1 -all").await;
        room.dns.txt("_dmarc.spoof.test", "v=DMARC1; p=reject").await;
        let inbox = Inbox { room, port, dir: TempDir::new().unwrap(), _stop: stop };
        inbox.verify(DOMAIN, &inbox.room.keys.secret_key.clone()).await;
        inbox
    }

    /// Adds `name` to the project of `key`, publishes its records and verifies it; the domain.
    async fn verify(&self, name: &str, key: &str) -> Value {
        let (status, domain) = self.room.app.post("/inbound-domains", key, json!({ "domain": name })).await;
        assert_eq!(status, Status::Ok, "{domain}");
        for record in domain["records"].as_array().unwrap() {
            let (owner, value) = (record["name"].as_str().unwrap(), record["value"].as_str().unwrap());
            match record["type"].as_str().unwrap() {
                "MX" => self.room.dns.mx(owner, 10, value).await,
                _ => self.room.dns.txt(owner, value).await,
            }
        }
        let id = domain["id"].as_str().unwrap();
        self.room.app.get(&format!("/inbound-domains/{id}/verify"), key).await.1
    }

    async fn route(&self, matching: &str, actions: Value) -> Value {
        let body = json!({ "match": matching, "actions": actions });
        let (status, route) = self.room.app.post("/inbound-routes", &self.room.keys.secret_key, body).await;
        assert_eq!(status, Status::Ok, "{route}");
        route
    }

    /// smtplib's account of sending `spec` (see [`SEND`]).
    async fn send(&self, spec: Value) -> Value {
        let path = self.dir.path().join(format!("{}.json", tidings::db::new_id()));
        std::fs::write(&path, spec.to_string()).unwrap();
        let args = ["-c".to_string(), SEND.into(), self.port.to_string(), path.to_string_lossy().into()];
        let out =
            tokio::task::spawn_blocking(move || std::process::Command::new("python3").args(args).output())
                .await
                .unwrap()
                .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    async fn inbound(&self, query: &str) -> Value {
        let (status, list) = self.room.app.get(&format!("/inbound{query}"), &self.room.keys.secret_key).await;
        assert_eq!(status, Status::Ok, "{list}");
        list
    }
}

fn plain(from: &str, to: &str, subject: &str) -> Value {
    json!({ "from": from, "rcpts": [to], "mailFrom": from, "subject": subject, "text": "Hello there" })
}

#[rocket::async_test]
async fn real_messages_reach_the_webhook_start_a_workflow_show_on_the_contact_and_count_replies() {
    let inbox = Inbox::new(|_| {}).await;
    let (room, key) = (&inbox.room, inbox.room.keys.secret_key.clone());
    let receiver = HttpReceiver::start();
    let route = inbox
        .route(
            "Support@in.example.test",
            json!([{ "type": "webhook", "url": receiver.url("/in") }, { "type": "store" }]),
        )
        .await;
    assert_eq!(route["match"], "support@in.example.test");
    let endpoint = route["actions"][0]["endpointId"].as_str().unwrap().to_string();
    let (_, flow) =
        room.app.post("/workflows", &key, json!({ "name": "Triage", "eventName": "email.received" })).await;
    let flow = flow["id"].as_str().unwrap().to_string();
    let (status, enabled) = room
        .app
        .call(
            rocket::http::Method::Patch,
            &format!("/workflows/{flow}"),
            &key,
            Some(json!({ "enabled": true })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{enabled}");

    // A plain message from a sender whose SPF and DMARC pass; plus addressing finds the route.
    let sent = inbox.send(plain("Ada <ada@good.test>", "support+billing@in.example.test", "Help")).await;
    assert_eq!(sent["sent"], true, "{sent}");
    room.app.run_jobs_until("the webhook delivery", async || !receiver.requests().is_empty()).await;
    let call = receiver.requests()[0].clone();
    assert!(call.headers.contains_key("webhook-signature"), "signed like every webhook: {:?}", call.headers);
    let body: Value = serde_json::from_str(&call.body).unwrap();
    assert_eq!(body["type"], "email.received");
    let data = &body["data"];
    assert_eq!(
        (data["from"]["email"].clone(), data["from"]["name"].clone()),
        (json!("ada@good.test"), json!("Ada"))
    );
    assert_eq!(data["to"], json!(["support+billing@in.example.test"]));
    assert_eq!(
        (data["spf"].clone(), data["dmarc"].clone(), data["dmarcFailed"].clone()),
        (json!("pass"), json!("pass"), json!(false))
    );
    assert_eq!(data["content"]["text"].as_str().map(str::trim), Some("Hello there"));
    let (_, deliveries) = room.app.get(&format!("/webhooks/{endpoint}/deliveries"), &key).await;
    assert!(
        !deliveries["data"].as_array().unwrap().is_empty(),
        "logged on the route's endpoint: {deliveries}"
    );

    // The sender became a contact (not subscribed), with the event; the workflow started for it.
    let contact = data["contactId"].as_str().unwrap().to_string();
    let (_, person) = room.app.get(&format!("/contacts/{contact}"), &key).await;
    assert_eq!(
        (person["email"].clone(), person["subscribed"].clone()),
        (json!("ada@good.test"), json!(false))
    );
    let (_, events) = room.app.get(&format!("/events/contact/{contact}"), &key).await;
    assert!(events.to_string().contains("email.received"), "{events}");
    room.app
        .run_jobs_until("the workflow's execution", async || {
            room.app.store().count("workflow_executions", &[("workflow_id", flow.clone().into())]) == 1
        })
        .await;

    // Multipart with attachments: stored, each attachment downloadable byte for byte.
    let png: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let mut spec = plain("ada@good.test", "support@in.example.test", "Invoice");
    spec["html"] = json!("<p>See <b>attached</b></p>");
    spec["attachments"] = json!([
        { "name": "scan.png", "type": "image/png", "b64": base64::engine::general_purpose::STANDARD.encode(&png) },
        { "name": "notes.txt", "type": "text/plain", "b64": base64::engine::general_purpose::STANDARD.encode("line one\n") },
    ]);
    assert_eq!(inbox.send(spec).await["sent"], true);
    let list = inbox.inbound("").await;
    assert_eq!(list["total"], 2);
    let newest = &list["data"][0];
    assert_eq!((newest["subject"].clone(), newest["stored"].clone()), (json!("Invoice"), json!(true)));
    let (_, detail) = room.app.get(&format!("/inbound/{}", newest["id"].as_str().unwrap()), &key).await;
    assert!(detail["content"]["html"].as_str().unwrap().contains("<b>attached</b>"), "{detail}");
    let attachments = detail["content"]["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 2, "{detail}");
    assert_eq!(
        (attachments[0]["filename"].clone(), attachments[0]["size"].clone()),
        (json!("scan.png"), json!(3000))
    );
    let url = attachments[0]["url"].as_str().unwrap().strip_prefix(crate::send::LINKS).unwrap().to_string();
    let res = room.app.keyed(room.app.client.get(url), &key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(res.headers().get_one("Content-Type"), Some("image/png"));
    assert_eq!(res.into_bytes().await.unwrap(), png, "the attachment arrives byte for byte");

    // A forged sender: accepted (the owner decides), but flagged on the record and the webhook.
    assert_eq!(
        inbox.send(plain("ceo@spoof.test", "support@in.example.test", "Wire money")).await["sent"],
        true
    );
    let forged = &inbox.inbound("").await["data"][0];
    assert_eq!(
        (forged["spf"].clone(), forged["dmarc"].clone(), forged["dmarcFailed"].clone()),
        (json!("fail"), json!("fail"), json!(true))
    );
    room.app.run_jobs_until("three webhook deliveries", async || receiver.requests().len() >= 3).await;
    assert!(receiver.requests().iter().any(|r| r.body.contains(r#""dmarcFailed":true"#)));

    // A reply to a campaign: email.replied on the email's contact, and the campaign counts it.
    let (_, _) =
        room.app.post("/contacts", &key, json!({ "email": "ada@good.test", "subscribed": true })).await;
    let (_, made) = room
        .app
        .post("/campaigns", &key, json!({ "name": "News", "subject": "News", "body": "<p>Hi</p>", "from": "news@example.test", "audienceType": "ALL" }))
        .await;
    let campaign = made["data"]["id"].as_str().unwrap().to_string();
    room.app.post(&format!("/campaigns/{campaign}/send"), &key, json!({})).await;
    let sent = room.deliver(1).await;
    let original = crate::send::parse(&sent[0].data).message_id().unwrap().to_string();
    let mut reply = plain("ada@good.test", "support@in.example.test", "Re: News");
    reply["headers"] =
        json!({ "In-Reply-To": format!("<{original}>"), "References": format!("<{original}>") });
    assert_eq!(inbox.send(reply).await["sent"], true);
    let replied = &inbox.inbound("").await["data"][0];
    assert!(replied["replyToEmailId"].is_string(), "{replied}");
    let (_, stats) = room.app.get(&format!("/campaigns/{campaign}"), &key).await;
    assert_eq!(stats["repliedCount"], 1, "{stats}");
    let (_, events) = room.app.get(&format!("/events/contact/{contact}"), &key).await;
    assert!(events.to_string().contains("email.replied"), "{events}");
    assert_eq!(inbox.inbound(&format!("?contactId={contact}")).await["total"], 3, "the contact's history");

    // Mail Tidings itself signed comes back with a passing DKIM signature.
    let raw = base64::engine::general_purpose::STANDARD.encode(&sent[0].data);
    let back = json!({ "raw": raw, "rcpts": ["support@in.example.test"], "mailFrom": "" });
    assert_eq!(inbox.send(back).await["sent"], true);
    assert_eq!(inbox.inbound("").await["data"][0]["dkim"], "pass");
}

#[rocket::async_test]
async fn unknown_addresses_are_refused_at_rcpt_caps_hold_and_other_projects_are_kept_out() {
    let inbox = Inbox::new(|c| {
        c.inbound.messages_per_minute = 3;
        c.inbound.max_message_bytes = 20_000;
    })
    .await;
    let (room, key) = (&inbox.room, inbox.room.keys.secret_key.clone());
    inbox.route("*@in.example.test", json!([{ "type": "store" }])).await;
    inbox.route("ops@in.example.test", json!([{ "type": "forward", "to": "oncall@elsewhere.test" }])).await;

    // No relay, no mailbox outside the routes' domains, no backscatter.
    let out = inbox.send(plain("ada@good.test", "someone@elsewhere.test", "Relay?")).await;
    assert_eq!(out["refused"]["someone@elsewhere.test"], 550, "{out}");
    // The catch-all takes anything of its domain; forwarded mail goes out resent, signed.
    assert_eq!(inbox.send(plain("ada@good.test", "ops@in.example.test", "Disk full")).await["sent"], true);
    let forwarded = room.deliver(1).await;
    assert_eq!(forwarded[0].to, ["oncall@elsewhere.test"]);
    let text = String::from_utf8_lossy(&forwarded[0].data).to_string();
    assert!(
        text.contains("Resent-From: <ops@in.example.test>") && text.contains("Subject: Disk full"),
        "{text}"
    );
    assert!(room.dkim_passes(&forwarded[0].data).await, "the forward is signed for its domain: {text}");
    assert_eq!(inbox.send(plain("ada@good.test", "anyone@in.example.test", "Hi")).await["sent"], true);

    // Over the size cap: 552, nothing kept.
    let mut big = plain("ada@good.test", "anyone@in.example.test", "Big");
    big["text"] = json!("x".repeat(30_000));
    let out = inbox.send(big).await;
    assert_eq!(out["code"], 552, "{out}");
    // Over the project's rate: deferred at RCPT (the third message of the minute was the last).
    assert_eq!(inbox.send(plain("ada@good.test", "anyone@in.example.test", "Third")).await["sent"], true);
    let out = inbox.send(plain("ada@good.test", "anyone@in.example.test", "Fourth")).await;
    assert_eq!(out["refused"]["anyone@in.example.test"], 451, "{out}");
    assert_eq!(inbox.inbound("").await["total"], 3);

    // Another project cannot take the domain: its own token is not the one published, and even
    // with it published the domain stays the first project's.
    let (_, other) = room.app.user_with_project("mallory@example.com").await;
    let claimed = inbox.verify(DOMAIN, &other.secret_key).await;
    assert_eq!(claimed["status"], "pending", "{claimed}");
    assert!(claimed["problem"].as_str().unwrap().contains("another project"), "{claimed}");
    let (_, theirs) = room.app.get("/inbound", &other.secret_key).await;
    assert_eq!(theirs["total"], 0);
    let id = inbox.inbound("").await["data"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = room.app.get(&format!("/inbound/{id}"), &other.secret_key).await;
    assert_eq!(status, Status::NotFound);

    // Bad routes are refused with the field named.
    for (body, field) in [
        (json!({ "match": "x@nowhere.test", "actions": [{ "type": "store" }] }), "match"),
        (
            json!({ "match": "x@in.example.test", "actions": [{ "type": "forward", "to": "loop@in.example.test" }] }),
            "actions[0].to",
        ),
        (json!({ "match": "x@in.example.test", "actions": [{ "type": "bounce" }] }), "actions[0].type"),
    ] {
        let (status, error) = room.app.post("/inbound-routes", &key, body.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body}");
        assert_eq!(error["error"]["errors"][0]["field"], field, "{error}");
    }
    let (status, _) = room
        .app
        .post(
            "/inbound-routes",
            &key,
            json!({ "match": "*@in.example.test", "actions": [{ "type": "store" }] }),
        )
        .await;
    assert_eq!(status, Status::Conflict, "one route per address");

    // Past their retention, messages go.
    room.app.store().set("inbound_messages", &[("expires_at", 1i64.into())], &[]);
    let expired =
        tidings::db::inbound::expire(&room.app.state.db.conn().unwrap(), tidings::clock::now_ms(), 100);
    assert_eq!(expired.unwrap(), 3);
    assert_eq!(inbox.inbound("").await["total"], 0);
}

#[rocket::async_test]
async fn a_project_over_its_quota_of_received_mail_gets_no_more_until_some_expires() {
    let inbox = Inbox::new(|c| c.inbound.max_bytes_per_project = 100).await;
    inbox.route("*@in.example.test", json!([{ "type": "store" }])).await;
    assert_eq!(inbox.send(plain("ada@good.test", "a@in.example.test", "One")).await["sent"], true);
    let out = inbox.send(plain("ada@good.test", "a@in.example.test", "Two")).await;
    assert_eq!(out["refused"]["a@in.example.test"], 452, "deferred, not lost: {out}");
    assert_eq!(inbox.inbound("").await["total"], 1);
    inbox.room.app.store().set("inbound_messages", &[("expires_at", 1i64.into())], &[]);
    tidings::db::inbound::expire(&inbox.room.app.state.db.conn().unwrap(), tidings::clock::now_ms(), 100)
        .unwrap();
    assert_eq!(inbox.send(plain("ada@good.test", "a@in.example.test", "Three")).await["sent"], true);
}

#[rocket::async_test]
async fn bounces_for_the_bounce_domain_take_the_bounce_path_on_the_shared_port() {
    // [bounces] listens where [inbound] does: the inbound listener takes the reports.
    let inbox = Inbox::new(|c| {
        c.bounces.listen = Some("127.0.0.1:9".parse().unwrap());
        c.bounces.domain = Some("bounces.example.test".into());
    })
    .await;
    let room = &inbox.room;
    let ids = room
        .send_ok(json!({ "to": "ada@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }))
        .await;
    let sent = room.deliver(1).await;
    let verp = sent[0].from.clone();
    assert!(verp.ends_with("@bounces.example.test"), "{verp}");
    let bounce = crate::bounces::dsn("failed", "5.1.1", "smtp; 550 5.1.1 <ada@example.com>: User unknown");
    crate::bounces::report(inbox.port, &verp, &bounce).await.unwrap();
    assert_eq!(room.email(&ids[0]).status, "BOUNCED");
    assert_eq!(inbox.inbound("").await["total"], 0, "a report is not inbound mail");
    let forged = crate::bounces::report(inbox.port, "b-00-00@bounces.example.test", &bounce).await;
    assert!(forged.is_err(), "a VERP address whose signature fails is refused");
}

/// swaks (Debian's) delivers a multipart message with a binary attachment to the listener: the
/// route stores it, its attachment downloads byte for byte, its sender's SPF passes; and swaks
/// to a mailbox no route takes is refused at RCPT with 550 5.1.1, nothing kept.
#[rocket::async_test]
async fn swaks_delivers_an_attachment_and_is_refused_for_an_unknown_mailbox() {
    let inbox = Inbox::new(|_| {}).await;
    inbox.route("hello@in.example.test", json!([{ "type": "store" }])).await;
    let pdf: Vec<u8> = b"%PDF-1.4\n".iter().copied().chain((0..=255u8).cycle().take(20_000)).collect();
    let file = inbox.dir.path().join("report.pdf");
    std::fs::write(&file, &pdf).unwrap();
    let swaks = |to: &str| {
        let (port, file, to) = (inbox.port.to_string(), file.to_string_lossy().to_string(), to.to_string());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new("swaks")
                .args(["--server", "127.0.0.1", "--port", &port, "--helo", "mx.good.test"])
                .args(["--from", "bob@good.test", "--to", &to])
                .args(["--header", "Subject: Quarterly report"])
                .args(["--body", "The report is attached."])
                .args(["--attach-type", "application/pdf", "--attach-name", "report.pdf"])
                .args(["--attach", &format!("@{file}")])
                .output()
                .expect("swaks (apt-get install swaks)")
        })
    };
    let out = swaks("hello@in.example.test").await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "swaks: {said}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("<-  250 "), "{said}");

    let list = inbox.inbound("").await;
    assert_eq!(list["total"], 1, "{list}");
    let message = &list["data"][0];
    assert_eq!(
        (message["subject"].clone(), message["spf"].clone(), message["stored"].clone()),
        (json!("Quarterly report"), json!("pass"), json!(true))
    );
    let key = inbox.room.keys.secret_key.clone();
    let (_, detail) =
        inbox.room.app.get(&format!("/inbound/{}", message["id"].as_str().unwrap()), &key).await;
    assert_eq!(
        detail["content"]["text"].as_str().map(str::trim),
        Some("The report is attached."),
        "{detail}"
    );
    let attachment = &detail["content"]["attachments"][0];
    assert_eq!(attachment["filename"], "report.pdf", "{detail}");
    let url = attachment["url"].as_str().unwrap().strip_prefix(crate::send::LINKS).unwrap().to_string();
    let res = inbox.room.app.keyed(inbox.room.app.client.get(url), &key).dispatch().await;
    assert_eq!(res.headers().get_one("Content-Type"), Some("application/pdf"));
    assert_eq!(res.into_bytes().await.unwrap(), pdf, "the attachment arrives byte for byte");

    let out = swaks("nobody@in.example.test").await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("<** 550 5.1.1"), "refused at RCPT: {said}");
    assert_eq!(inbox.inbound("").await["total"], 1, "nothing kept for the unknown mailbox");
}

/// A route's webhook endpoint shows among the project's webhooks, where it can be disabled and
/// enabled again, but its URL and events are the route's and it goes with the route: changing
/// those or deleting it there is 409 naming the route, and leaves it as it was.
#[rocket::async_test]
async fn a_routes_webhook_endpoint_goes_with_its_route() {
    use rocket::http::Method;
    let inbox = Inbox::new(|_| {}).await;
    let (app, key) = (&inbox.room.app, inbox.room.keys.secret_key.clone());
    let route = inbox
        .route("*@in.example.test", json!([{ "type": "webhook", "url": "https://hooks.example.org/in" }]))
        .await;
    let endpoint = route["actions"][0]["endpointId"].as_str().unwrap().to_string();
    let path = format!("/webhooks/{endpoint}");

    let (status, refused) = app.call(Method::Delete, &path, &key, None).await;
    assert_eq!(status, Status::Conflict, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("*@in.example.test"), "{refused}");
    let moved = Some(json!({ "url": "https://elsewhere.example.org/" }));
    let (status, refused) = app.call(Method::Patch, &path, &key, moved).await;
    assert_eq!(status, Status::Conflict, "{refused}");
    let (status, off) = app.call(Method::Patch, &path, &key, Some(json!({ "enabled": false }))).await;
    assert_eq!((status, off["enabled"].clone()), (Status::Ok, json!(false)), "{off}");

    let (_, listed) = app.get("/webhooks", &key).await;
    let kept = listed.as_array().unwrap().iter().find(|e| e["id"] == endpoint.as_str()).cloned().unwrap();
    assert_eq!(kept["url"], "https://hooks.example.org/in", "unchanged: {kept}");

    let (status, _) = app
        .call(Method::Delete, &format!("/inbound-routes/{}", route["id"].as_str().unwrap()), &key, None)
        .await;
    assert_eq!(status, Status::NoContent);
    let (_, listed) = app.get("/webhooks", &key).await;
    assert!(
        listed.as_array().unwrap().iter().all(|e| e["id"] != endpoint.as_str()),
        "gone with the route: {listed}"
    );
}
