//! `POST /webhooks/sns`: SES notifications through SNS, signed (versions 1 and 2) by a test
//! certificate that an HTTPS server on loopback serves under a test CA. Only the configured
//! topic's messages whose signature verifies change anything; a subscription is confirmed by
//! visiting its SubscribeURL.

use std::sync::{Arc, Mutex};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{self, RsaKeyPair};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rocket::http::Status;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

use crate::send::Mailroom;

const TOPIC: &str = "arn:aws:sns:eu-west-1:123456789012:ses-feedback";

/// An HTTPS server on loopback (certificate for `localhost` from a test CA) that serves the
/// signing certificate at [`CERT`] and records the other paths it is asked for.
struct CertServer {
    port: u16,
    ca_file: tempfile::NamedTempFile,
    signing: RsaKeyPair,
    /// The signing key as PEM, for `openssl dgst -sign`.
    key_file: tempfile::NamedTempFile,
    asked: Arc<Mutex<Vec<String>>>,
}

impl CertServer {
    async fn start() -> CertServer {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let server_key = rcgen::KeyPair::generate().unwrap();
        let server_cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&server_key, &issuer)
            .unwrap();
        // The key SNS signs with, and its certificate as SNS publishes it.
        let signing_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_RSA_SHA256).unwrap();
        let signing_pem = rcgen::CertificateParams::new(vec!["sns.amazonaws.com".to_string()])
            .unwrap()
            .self_signed(&signing_key)
            .unwrap()
            .pem();
        let signing = RsaKeyPair::from_pkcs8(&signing_key.serialize_der()).unwrap();
        let key_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(key_file.path(), signing_key.serialize_pem()).unwrap();

        let ca_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(ca_file.path(), ca_cert.pem()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![server_cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into()),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, log, pem) = (acceptor.clone(), log.clone(), signing_pem.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                    let mut request = Vec::new();
                    let mut buf = [0u8; 4096];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let path =
                        String::from_utf8_lossy(&request).split_whitespace().nth(1).unwrap_or("").to_string();
                    log.lock().unwrap().push(path.clone());
                    let body = if path == CERT { pem } else { "<ConfirmSubscriptionResponse/>".into() };
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(answer.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        CertServer { port, ca_file, signing, key_file, asked }
    }

    fn url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.port)
    }

    /// An SNS message of `kind` around `message`, signed with `version`, sent now.
    fn message(&self, kind: &str, message: &str, version: &str, topic: &str) -> Value {
        self.message_at(kind, message, version, topic, &tidings::clock::now_iso(), CERT)
    }

    /// [`CertServer::message`] with its `Timestamp` and the path of its certificate.
    fn message_at(
        &self,
        kind: &str,
        message: &str,
        version: &str,
        topic: &str,
        at: &str,
        cert: &str,
    ) -> Value {
        let mut m = json!({
            "Type": kind, "MessageId": uuid::Uuid::new_v4().to_string(), "TopicArn": topic,
            "Message": message, "Timestamp": at, "SignatureVersion": version,
            "SigningCertURL": self.url(cert),
        });
        if kind == "SubscriptionConfirmation" {
            m["Token"] = json!("token-1");
            m["SubscribeURL"] = json!(self.url("/confirm?token=token-1"));
        }
        let mut unsigned = m.clone();
        unsigned["Signature"] = json!("-");
        let parsed = tidings::adapters::sns::Message::parse(&unsigned).unwrap();
        let text = parsed.string_to_sign();
        let signed = if version == "1" {
            // SHA-1, which aws-lc-rs does not sign with: OpenSSL's command line does.
            let mut openssl = std::process::Command::new("openssl")
                .args(["dgst", "-sha1", "-sign"])
                .arg(self.key_file.path())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("openssl (apt-get install openssl)");
            std::io::Write::write_all(&mut openssl.stdin.take().unwrap(), text.as_bytes()).unwrap();
            let out = openssl.wait_with_output().unwrap();
            assert!(out.status.success());
            out.stdout
        } else {
            let mut signed = vec![0; self.signing.public_modulus_len()];
            self.signing
                .sign(&signature::RSA_PKCS1_SHA256, &SystemRandom::new(), text.as_bytes(), &mut signed)
                .unwrap();
            signed
        };
        m["Signature"] = json!(STANDARD.encode(signed));
        m
    }
}

/// Where the test server keeps its signing certificate: a path of SNS's own form.
const CERT: &str = "/SimpleNotificationService-5e1f0a9c.pem";

/// A room that takes SNS messages of [`TOPIC`] with certificates from `certs`.
async fn room(certs: &CertServer) -> Mailroom {
    let (ca, port) = (certs.ca_file.path().to_path_buf(), certs.port);
    Mailroom::with(move |c| {
        c.webhooks.sns_enabled = true;
        c.webhooks.sns_topic_arns = vec![TOPIC.into()];
        c.webhooks.sns_cert_hosts = vec![format!("localhost:{port}")];
        c.webhooks.sns_ca_file = Some(ca);
    })
    .await
}

/// An SES notification about the email with `message_id`.
fn ses(kind: &str, message_id: &str, details: Value) -> String {
    let mut n = json!({ "notificationType": kind, "mail": { "messageId": "0102-ses-id",
        "commonHeaders": { "messageId": message_id }, "headers": [{ "name": "Message-ID", "value": message_id }] } });
    let key = kind.to_ascii_lowercase();
    n[key] = details;
    n.to_string()
}

async fn post(room: &Mailroom, message: &Value) -> (Status, Value) {
    post_to(room, "/webhooks/sns", message).await
}

/// The receiver's other addresses: where Plunk deployments point SNS.
const ALIASES: [&str; 3] = ["/webhooks/incoming/sns", "/api/webhooks/sns", "/api/webhooks/incoming/sns"];

async fn post_to(room: &Mailroom, path: &str, message: &Value) -> (Status, Value) {
    let res = room
        .app
        .client
        .post(path.to_string())
        .header(rocket::http::ContentType::Plain)
        .header(rocket::http::Header::new(
            "x-amz-sns-message-type",
            message["Type"].as_str().unwrap().to_string(),
        ))
        .body(message.to_string())
        .dispatch()
        .await;
    let status = res.status();
    (status, res.into_json::<Value>().await.unwrap_or(Value::Null))
}

async fn suppression(room: &Mailroom, email: &str) -> Value {
    let (_, found) =
        room.app.post("/contacts/lookup", &room.keys.secret_key, json!({ "emails": [email] })).await;
    let id = found["data"][0]["id"].as_str().unwrap();
    room.app.get(&format!("/contacts/{id}"), &room.keys.secret_key).await.1["suppression"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_notifications_of_the_topic_bounce_and_complain_and_nothing_else_does() {
    let certs = CertServer::start().await;
    let room = room(&certs).await;
    let key = room.keys.secret_key.clone();
    for to in ["ada@example.com", "bob@example.com"] {
        room.send_ok(json!({ "to": to, "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }))
            .await;
    }
    room.deliver(2).await;
    let message_id =
        |to: &str| room.app.store().value::<String>("emails", "message_id", &[("to_email", to.into())]);
    let (ada, bob) = (message_id("ada@example.com"), message_id("bob@example.com"));
    let hard = json!({ "bounceType": "Permanent", "bouncedRecipients": [{ "emailAddress": "ada@example.com",
        "diagnosticCode": "smtp; 550 5.1.1 user unknown" }] });

    // Refused, and nothing changes: a forged signature, another topic, a certificate elsewhere,
    // an unsigned message.
    let mut forged = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "1", TOPIC);
    forged["Message"] = json!(ses("Complaint", &ada, json!({ "complaintFeedbackType": "abuse" })));
    let foreign = certs.message(
        "Notification",
        &ses("Bounce", &ada, hard.clone()),
        "2",
        "arn:aws:sns:eu-west-1:999:other",
    );
    let mut elsewhere = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "2", TOPIC);
    elsewhere["SigningCertURL"] = json!(format!("https://127.0.0.1:{}{CERT}", certs.port));
    let mut plain_http = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "2", TOPIC);
    plain_http["SigningCertURL"] = json!(format!("http://localhost:{}{CERT}", certs.port));
    let mut other_port = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "2", TOPIC);
    other_port["SigningCertURL"] = json!(format!("https://localhost:{}{CERT}", certs.port + 1));
    let mut not_a_cert = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "2", TOPIC);
    not_a_cert["SigningCertURL"] = json!(certs.url("/cert.pem"));
    let stale = certs.message_at(
        "Notification",
        &ses("Bounce", &ada, hard.clone()),
        "2",
        TOPIC,
        "2001-09-09T01:46:40.000Z",
        CERT,
    );
    let mut unsigned = certs.message("Notification", &ses("Bounce", &ada, hard.clone()), "2", TOPIC);
    unsigned.as_object_mut().unwrap().remove("Signature");
    for (what, message, status) in [
        ("forged", &forged, Status::Forbidden),
        ("foreign topic", &foreign, Status::Forbidden),
        ("certificate on another host", &elsewhere, Status::Forbidden),
        ("certificate over http", &plain_http, Status::Forbidden),
        ("certificate on another port", &other_port, Status::Forbidden),
        ("certificate at a path SNS does not use", &not_a_cert, Status::Forbidden),
        ("signed in 2001 (item 15: a replay)", &stale, Status::Forbidden),
        ("unsigned", &unsigned, Status::BadRequest),
    ] {
        let (got, answer) = post(&room, message).await;
        assert_eq!(got, status, "{what}: {answer}");
        assert!(answer["error"]["code"].is_string(), "{what}: {answer}");
    }
    assert_eq!(suppression(&room, "ada@example.com").await, Value::Null);
    let statuses: Vec<String> = room.app.store().values("emails", "status", &[]);
    assert_eq!(statuses, ["SENT", "SENT"]);

    // A version 1 (SHA-1) hard bounce, then a version 2 (SHA-256) complaint.
    let bounce = certs.message("Notification", &ses("Bounce", &ada, hard), "1", TOPIC);
    let (status, answer) = post(&room, &bounce).await;
    assert_eq!(status, Status::Ok, "{answer}");
    assert_eq!(answer["event"], "email.bounced");
    let (status, again) = post(&room, &bounce).await;
    assert_eq!(
        (status, again["applied"].clone()),
        (Status::Ok, json!(false)),
        "SNS delivering it twice changes nothing"
    );
    let ada_suppression = suppression(&room, "ada@example.com").await;
    assert_eq!(ada_suppression["reason"], "hard_bounce", "{ada_suppression}");
    assert_eq!(ada_suppression["detail"], "smtp; 550 5.1.1 user unknown");
    let complaint = certs.message(
        "Notification",
        &ses("Complaint", &bob, json!({ "complaintFeedbackType": "abuse", "complainedRecipients": [] })),
        "2",
        TOPIC,
    );
    let (status, answer) = post_to(&room, ALIASES[1], &complaint).await;
    assert_eq!(status, Status::Ok, "{answer}");
    assert_eq!(answer["event"], "email.complained", "taken at Plunk's address too");
    assert_eq!(suppression(&room, "bob@example.com").await["reason"], "complaint");
    let (_, bounced) = room.app.get("/events?name=email.bounced", &key).await;
    assert_eq!(bounced["data"][0]["data"]["bounceType"], "hard", "{bounced}");

    // About mail this server never sent: acknowledged, nothing else.
    let stranger =
        certs.message("Notification", &ses("Delivery", "<not-ours@x.test>", json!({})), "2", TOPIC);
    for path in ["/webhooks/sns"].iter().chain(&ALIASES) {
        let (status, answer) = post_to(&room, path, &stranger).await;
        assert_eq!((status, answer["applied"].clone()), (Status::Ok, json!(false)), "{path}: {answer}");
    }
    let (status, answer) = post_to(&room, ALIASES[0], &forged).await;
    assert_eq!(status, Status::Forbidden, "every address checks the signature: {answer}");
    assert_eq!(
        certs.asked.lock().unwrap().iter().filter(|p| *p == CERT).count(),
        1,
        "the certificate is fetched once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_is_confirmed_and_a_disabled_receiver_is_not_there() {
    let certs = CertServer::start().await;
    let room = room(&certs).await;
    let confirmation = certs.message("SubscriptionConfirmation", "You have chosen to subscribe", "2", TOPIC);
    let (status, answer) = post(&room, &confirmation).await;
    assert_eq!(status, Status::Ok, "{answer}");
    assert!(
        certs.asked.lock().unwrap().iter().any(|p| p == "/confirm?token=token-1"),
        "the SubscribeURL was visited"
    );

    let off = Mailroom::new().await;
    for path in ["/webhooks/sns"].iter().chain(&ALIASES) {
        let (status, answer) = post_to(&off, path, &confirmation).await;
        assert_eq!(status, Status::NotFound, "{path}: {answer}");
    }
}

/// Item 15: every distinct certificate URL was one fetch; now a minute holds at most
/// `FETCHES_PER_MINUTE` of them, whatever the messages name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_are_fetched_a_few_times_a_minute_at_most() {
    let certs = CertServer::start().await;
    let room = room(&certs).await;
    for n in 0..(tidings::adapters::sns::FETCHES_PER_MINUTE + 5) {
        let cert = format!("/SimpleNotificationService-{n:08x}.pem");
        let message = certs.message_at("Notification", "{}", "2", TOPIC, &tidings::clock::now_iso(), &cert);
        let (status, answer) = post(&room, &message).await;
        assert_eq!(status, Status::Forbidden, "{answer}");
    }
    let fetched =
        certs.asked.lock().unwrap().iter().filter(|p| p.starts_with("/SimpleNotificationService-")).count();
    assert_eq!(fetched, tidings::adapters::sns::FETCHES_PER_MINUTE as usize);
}

/// A message submitted over SMTP gives its Message-ID to every recipient's email, and an app
/// may reuse one another project's mail carries: a report reaches the email of the recipient it
/// names, and none when the Message-ID is held in more than one project.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_reaches_its_recipient_and_never_another_project() {
    use crate::common::store::among;
    let certs = CertServer::start().await;
    let room = room(&certs).await;
    let people = ["ada@example.com", "bob@example.com", "cy@example.com"];
    for to in people {
        room.send_ok(json!({ "to": to, "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }))
            .await;
    }
    room.deliver(3).await;
    let store = room.app.store();
    store.set("emails", &[("message_id", "<shared@app>".into())], &[("to_email", among(&people))]);
    let status = |to: &str| room.app.store().value::<String>("emails", "status", &[("to_email", to.into())]);

    let bounce =
        json!({ "bounceType": "Permanent", "bouncedRecipients": [{ "emailAddress": "Bob@example.com" }] });
    let (code, answer) =
        post(&room, &certs.message("Notification", &ses("Bounce", "<shared@app>", bounce), "2", TOPIC)).await;
    assert_eq!((code, answer["event"].clone()), (Status::Ok, json!("email.bounced")), "{answer}");
    assert_eq!((status("ada@example.com"), status("bob@example.com")), ("SENT".into(), "BOUNCED".into()));

    // Cy's email is now another project's: the same Message-ID in two projects reaches neither.
    let (_, other) = room.app.user_with_project("other@example.com").await;
    store.set("emails", &[("project_id", (&other.id).into())], &[("to_email", "cy@example.com".into())]);
    let complaint = json!({ "complaintFeedbackType": "abuse", "complainedRecipients": [] });
    let (code, answer) =
        post(&room, &certs.message("Notification", &ses("Complaint", "<shared@app>", complaint), "2", TOPIC))
            .await;
    assert_eq!((code, answer["applied"].clone()), (Status::Ok, json!(false)), "{answer}");
    assert_eq!((status("ada@example.com"), status("cy@example.com")), ("SENT".into(), "SENT".into()));
}
