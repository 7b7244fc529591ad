//! Sender domains: records, verification through a real DNS server, periodic re-checks, the
//! sender rule.

use std::time::{Duration, Instant};

use base64::Engine;
use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::core::domains::require_verified_sender;

use crate::common::dns_server::{DnsServer, silent_server};
use crate::common::{Keys, TestApp};

async fn app_with_dns(zones: &[&str]) -> (TestApp, Keys, DnsServer) {
    let server = DnsServer::start(zones).await;
    let nameserver = server.nameserver();
    let app = TestApp::with(|c| {
        c.dns.nameservers = vec![nameserver];
        c.dns.timeout_ms = 1000;
    })
    .await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    (app, keys, server)
}

async fn add_domain(app: &TestApp, keys: &Keys, name: &str) -> Value {
    let (status, domain) = app.post("/domains", &keys.secret_key, json!({ "domain": name })).await;
    assert_eq!(status, Status::Ok, "{domain}");
    domain
}

/// Publishes every record a domain asks for.
async fn publish(server: &DnsServer, domain: &Value) {
    for record in domain["records"].as_array().unwrap() {
        server.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
    }
}

async fn verify(app: &TestApp, keys: &Keys, domain: &Value) -> Value {
    let (status, body) =
        app.get(&format!("/domains/{}/verify", domain["id"].as_str().unwrap()), &keys.secret_key).await;
    assert_eq!(status, Status::Ok, "{body}");
    body
}

fn found(domain: &Value) -> Vec<Value> {
    domain["records"].as_array().unwrap().iter().map(|r| r["found"].clone()).collect()
}

#[rocket::async_test]
async fn a_new_domain_is_pending_with_the_records_to_publish() {
    let (app, keys, _server) = app_with_dns(&["test"]).await;
    let domain = add_domain(&app, &keys, "Mail.Example.TEST").await;
    assert_eq!(domain["domain"], json!("mail.example.test"));
    assert_eq!(domain["status"], json!("pending"));
    assert_eq!(domain["projectId"], json!(keys.id));
    assert_eq!(domain["verifiedAt"], Value::Null);
    assert!(domain["createdAt"].is_string());
    let records = domain["records"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    let shape =
        |r: &Value| (r["type"].clone(), r["name"].clone(), r["purpose"].clone(), r["required"].clone());
    assert_eq!(
        shape(&records[0]),
        (json!("TXT"), json!("_tidings.mail.example.test"), json!("verification"), json!(true))
    );
    assert_eq!(
        shape(&records[1]),
        (json!("TXT"), json!("tidings._domainkey.mail.example.test"), json!("dkim"), json!(true))
    );
    assert_eq!(shape(&records[2]), (json!("TXT"), json!("mail.example.test"), json!("spf"), json!(false)));
    let token = records[0]["value"].as_str().unwrap().strip_prefix("tidings-verification=").unwrap();
    assert!(token.len() >= 20);
    assert!(records[2]["value"].as_str().unwrap().starts_with("v=spf1"));

    // The DKIM record carries a 2048-bit RSA public key.
    let dkim = records[1]["value"].as_str().unwrap();
    let p = dkim.strip_prefix("v=DKIM1; k=rsa; p=").expect(dkim);
    let der = base64::engine::general_purpose::STANDARD.decode(p).unwrap();
    let key = aws_lc_rs::rsa::PublicEncryptingKey::from_der(&der).unwrap();
    assert_eq!(key.key_size_bits(), 2048);

    // No answer ever carries the private key.
    let (_, listed) = app.get(&format!("/domains/project/{}", keys.id), &keys.secret_key).await;
    let verified = verify(&app, &keys, &domain).await;
    for text in [domain.to_string(), listed.to_string(), verified.to_string()] {
        assert!(!text.contains("PRIVATE KEY") && !text.contains("privateKey"), "{text}");
    }
    let stored: String = app.store().value("domains", "dkim_private_key", &[]);
    assert!(stored.starts_with("-----BEGIN PRIVATE KEY-----"));
}

#[rocket::async_test]
async fn verification_follows_the_published_records() {
    let (app, keys, server) = app_with_dns(&["test"]).await;
    let domain = add_domain(&app, &keys, "example.test").await;

    let checked = verify(&app, &keys, &domain).await;
    assert_eq!(checked["status"], json!("pending"));
    assert_eq!(found(&checked), [json!(false), json!(false), json!(false)]);
    assert!(checked["records"][0].get("error").is_none(), "NXDOMAIN is an answer, not an error");

    // Only the verification record: still pending.
    let token = &domain["records"][0];
    server.txt(token["name"].as_str().unwrap(), token["value"].as_str().unwrap()).await;
    let checked = verify(&app, &keys, &domain).await;
    assert_eq!(
        (checked["status"].clone(), found(&checked)),
        (json!("pending"), vec![json!(true), json!(false), json!(false)])
    );

    // A DKIM record with another key does not count.
    let dkim_name = domain["records"][1]["name"].as_str().unwrap();
    server.txt(dkim_name, "v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong").await;
    assert_eq!(verify(&app, &keys, &domain).await["status"], json!("pending"));
    server.remove(dkim_name, hickory_resolver::proto::rr::RecordType::TXT).await;

    publish(&server, &domain).await;
    let checked = verify(&app, &keys, &domain).await;
    assert_eq!(checked["status"], json!("verified"), "{checked}");
    assert_eq!(found(&checked), [json!(true), json!(true), json!(true)]);
    assert!(checked["verifiedAt"].is_string());
    let (_, listed) = app.get(&format!("/domains/project/{}", keys.id), &keys.secret_key).await;
    assert_eq!(listed[0]["status"], json!("verified"));
}

#[rocket::async_test]
async fn the_periodic_check_unverifies_a_domain_whose_records_disappear() {
    let server = DnsServer::start(&["test"]).await;
    let nameserver = server.nameserver();
    let app = TestApp::with(|c| {
        c.dns.nameservers = vec![nameserver];
        c.dns.domain_check_interval_secs = 1;
    })
    .await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let domain = add_domain(&app, &keys, "example.test").await;
    publish(&server, &domain).await;
    assert_eq!(verify(&app, &keys, &domain).await["status"], json!("verified"));

    for record in domain["records"].as_array().unwrap() {
        server.remove(record["name"].as_str().unwrap(), hickory_resolver::proto::rr::RecordType::TXT).await;
    }
    let path = format!("/domains/project/{}", keys.id);
    let mut status = json!("verified");
    app.run_jobs_until("the periodic check", async || {
        status = app.get(&path, &keys.secret_key).await.1[0]["status"].clone();
        status == json!("pending")
    })
    .await;
    let (_, listed) = app.get(&path, &keys.secret_key).await;
    assert_eq!(listed[0]["verifiedAt"], Value::Null);
    assert_eq!(found(&listed[0]), [json!(false), json!(false), json!(false)]);
}

#[rocket::async_test]
async fn a_dns_timeout_leaves_the_status_alone_and_says_so() {
    let (app, keys, server) = app_with_dns(&["test"]).await;
    let domain = add_domain(&app, &keys, "example.test").await;
    publish(&server, &domain).await;
    assert_eq!(verify(&app, &keys, &domain).await["status"], json!("verified"));

    // The same database, reached by a server whose resolver gets no answers.
    let silent = silent_server();
    let mut config = (*app.state.config).clone();
    config.dns.nameservers = vec![silent];
    config.dns.timeout_ms = 200;
    let blind = TestApp::on_state(tidings::AppState::open(config).unwrap(), app.dir.clone()).await;
    let started = Instant::now();
    let checked = verify(&blind, &keys, &domain).await;
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(checked["status"], json!("verified"), "a timeout does not unverify");
    assert_eq!(checked["records"][0]["found"], json!(false));
    assert_eq!(checked["records"][0]["error"], json!("timeout"));
}

#[rocket::async_test]
async fn bad_names_duplicates_and_other_projects() {
    let (app, keys, _server) = app_with_dns(&["test"]).await;
    for bad in [
        json!({ "domain": "https://example.test/x" }),
        json!({ "domain": "localhost" }),
        json!({ "domain": "a@b.test" }),
        json!({}),
        json!({ "domain": 5 }),
    ] {
        let (status, body) = app.post("/domains", &keys.secret_key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {body}");
        assert_eq!(body["error"]["errors"][0]["field"], json!("domain"));
    }
    let idn = add_domain(&app, &keys, "Bücher.test").await;
    assert_eq!(idn["domain"], json!("xn--bcher-kva.test"));
    let (status, _) = app.post("/domains", &keys.secret_key, json!({ "domain": "xn--bcher-kva.test" })).await;
    assert_eq!(status, Status::Conflict);

    let (_, other) = app.user_with_project("other@example.com").await;
    add_domain(&app, &other, "xn--bcher-kva.test").await;
    assert_eq!(
        app.get(&format!("/domains/project/{}", other.id), &keys.secret_key).await.0,
        Status::NotFound
    );
    let (_, mine) = app.get(&format!("/domains/project/{}", keys.id), &keys.secret_key).await;
    assert_eq!(mine.as_array().unwrap().len(), 1);
    let id = idn["id"].as_str().unwrap();
    assert_eq!(app.get(&format!("/domains/{id}/verify"), &other.secret_key).await.0, Status::NotFound);
    assert_eq!(
        app.call(Method::Delete, &format!("/domains/{id}"), &other.secret_key, None).await.0,
        Status::NotFound
    );
    assert_eq!(
        app.call(Method::Delete, &format!("/domains/{id}"), &keys.secret_key, None).await.0,
        Status::NoContent
    );
    let (_, mine) = app.get(&format!("/domains/project/{}", keys.id), &keys.secret_key).await;
    assert_eq!(mine, json!([]));
}

#[rocket::async_test]
async fn the_sender_rule() {
    let (app, keys, server) = app_with_dns(&["test"]).await;
    let (_, other) = app.user_with_project("other@example.com").await;
    let domain = add_domain(&app, &keys, "example.test").await;
    publish(&server, &domain).await;
    assert_eq!(verify(&app, &keys, &domain).await["status"], json!("verified"));
    add_domain(&app, &keys, "pending.test").await;

    let conn = app.state.db.conn().unwrap();
    require_verified_sender(&conn, &keys.id, "hello@example.test").unwrap();
    require_verified_sender(&conn, &keys.id, "news@mail.eu.example.test").unwrap();
    for (project, from) in
        [(&keys.id, "a@pending.test"), (&keys.id, "a@notexample.test"), (&other.id, "hello@example.test")]
    {
        // Core names the rule; the API answers it as appliance.md section 11 says.
        let e = tidings::error::ApiError::from(require_verified_sender(&conn, project, from).unwrap_err());
        assert_eq!((e.status, e.code), (403, "INTERNAL_SERVER_ERROR"), "{from}");
        let domain = from.split('@').nth(1).unwrap();
        assert!(e.message.contains(domain), "{}", e.message);
        assert_eq!(e.details, Some(json!({ "domain": domain, "reason": "DOMAIN_NOT_VERIFIED" })));
        assert!(e.suggestion.as_deref().unwrap_or("").contains("/domains"));
    }
}

#[rocket::async_test]
async fn a_project_has_at_most_its_domain_allowance() {
    // Each domain costs an RSA key generation: the cap keeps one key holder from spending the
    // server's CPU on thousands of them.
    let app = TestApp::with(|c| c.limits.domains_per_project = 2).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    add_domain(&app, &keys, "one.example").await;
    add_domain(&app, &keys, "two.example").await;
    let (status, error) = app.post("/domains", &keys.secret_key, json!({ "domain": "three.example" })).await;
    assert_eq!(status, Status::Forbidden, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("2 sender domains"), "{error}");
    let (_, list) = app.get(&format!("/domains/project/{}", keys.id), &keys.secret_key).await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    // Another project has its own allowance.
    let (_, other) = app.user_with_project("other@example.com").await;
    add_domain(&app, &other, "three.example").await;
}
