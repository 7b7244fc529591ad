//! `POST /v1/verify` with its DNS answered by a real server on loopback.

use std::net::Ipv4Addr;

use rocket::http::Status;
use serde_json::{Value, json};

use crate::common::dns_server::{DnsServer, silent_server};
use crate::common::{Keys, TestApp};

const IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);

/// A DNS world for the checks: zones `test` and `com`.
async fn world() -> DnsServer {
    let server = DnsServer::start(&["test", "com"]).await;
    server.mx("good.test", 10, "mx.good.test").await;
    server.a("implicit.test", IP).await;
    server.null_mx("nullmx.test").await;
    server.a("nullmx.test", IP).await;
    server.mx("wwwonly.test", 10, "mx.wwwonly.test").await;
    server.a("www.wwwonly.test", IP).await;
    server.mx("site.test", 10, "mx.site.test").await;
    server.a("site.test", IP).await;
    for provider in ["gmail.com", "mailinator.com", "duck.com", "gmial.com"] {
        server.mx(provider, 5, &format!("mx.{provider}")).await;
    }
    server
}

async fn setup() -> (TestApp, Keys, DnsServer) {
    let server = world().await;
    let nameserver = server.nameserver();
    let app = TestApp::with(|c| c.dns.nameservers = vec![nameserver]).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    (app, keys, server)
}

async fn check(app: &TestApp, keys: &Keys, email: &str) -> Value {
    let (status, body) = app.post("/v1/verify", &keys.secret_key, json!({ "email": email })).await;
    assert_eq!(status, Status::Ok, "{email}: {body}");
    assert_eq!(body["success"], json!(true));
    body["data"].clone()
}

fn flags(result: &Value, names: &[&str]) -> Vec<bool> {
    names.iter().map(|n| result[*n].as_bool().unwrap_or_else(|| panic!("{n} in {result}"))).collect()
}

#[rocket::async_test]
async fn the_result_has_every_field() {
    let (app, keys, _server) = setup().await;
    let result = check(&app, &keys, "Ada@Good.test").await;
    let mut fields: Vec<&str> = result.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        [
            "domainExists",
            "email",
            "hasMxRecords",
            "hasWebsite",
            "isAlias",
            "isDisposable",
            "isPersonalEmail",
            "isPlusAddressed",
            "isTypo",
            "reasons",
            "valid"
        ]
    );
    assert_eq!(result["email"], json!("ada@good.test"));
    assert!(!result["reasons"].as_array().unwrap().is_empty());
}

#[rocket::async_test]
async fn dns_facts_set_the_domain_flags() {
    let (app, keys, _server) = setup().await;
    let names = ["valid", "domainExists", "hasMxRecords", "hasWebsite"];
    for (email, expected) in [
        ("a@good.test", [true, true, true, false]),
        ("a@implicit.test", [true, true, false, true]),
        ("a@nullmx.test", [false, true, false, true]),
        ("a@missing.test", [false, false, false, false]),
        ("a@wwwonly.test", [true, true, true, true]),
        ("a@site.test", [true, true, true, true]),
    ] {
        let result = check(&app, &keys, email).await;
        assert_eq!(flags(&result, &names), expected, "{email}: {result}");
    }
    let missing = check(&app, &keys, "a@missing.test").await;
    assert!(missing["reasons"][0].as_str().unwrap().contains("does not exist"), "{missing}");
    let null = check(&app, &keys, "a@nullmx.test").await;
    assert!(null["reasons"][0].as_str().unwrap().contains("null MX"), "{null}");
}

#[rocket::async_test]
async fn lists_and_the_address_set_the_other_flags() {
    let (app, keys, _server) = setup().await;
    let names = ["isDisposable", "isPersonalEmail", "isAlias", "isPlusAddressed", "isTypo", "valid"];
    for (email, expected) in [
        ("someone@good.test", [false, false, false, false, false, true]),
        ("someone@mailinator.com", [true, false, false, false, false, false]),
        ("someone@gmail.com", [false, true, false, false, false, true]),
        ("someone@duck.com", [false, true, true, false, false, true]),
        ("someone+news@good.test", [false, false, false, true, false, true]),
        ("someone@gmial.com", [true, false, false, false, true, false]),
    ] {
        let result = check(&app, &keys, email).await;
        assert_eq!(flags(&result, &names), expected, "{email}: {result}");
    }
    let typo = check(&app, &keys, "someone@gmial.com").await;
    let reasons = typo["reasons"].to_string();
    assert!(reasons.contains("typo of gmail.com"), "{reasons}");
    let disposable = check(&app, &keys, "someone@mailinator.com").await;
    assert!(disposable["reasons"].to_string().contains("disposable"));
}

#[rocket::async_test]
async fn bad_input_and_wrong_keys() {
    let (app, keys, _server) = setup().await;
    for bad in
        [json!({ "email": "not-an-email" }), json!({ "email": "a@b" }), json!({ "email": "two@@x.test" })]
    {
        let (status, body) = app.post("/v1/verify", &keys.secret_key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}");
        assert_eq!(body["error"]["errors"][0]["code"], json!("invalid_string"), "{bad}");
    }
    let (status, body) = app.post("/v1/verify", &keys.secret_key, json!({})).await;
    assert_eq!(
        (status, body["error"]["errors"][0]["field"].clone()),
        (Status::UnprocessableEntity, json!("email"))
    );
    let (status, body) = app.post("/v1/verify", &keys.public_key, json!({ "email": "a@good.test" })).await;
    assert_eq!((status, body["error"]["code"].clone()), (Status::Unauthorized, json!("INVALID_API_KEY")));
}

#[rocket::async_test]
async fn a_burst_for_one_domain_makes_one_lookup_per_record_type() {
    let (app, keys, server) = setup().await;
    check(&app, &keys, "first@site.test").await;
    let after_first = server.queries();
    for n in 0..25 {
        check(&app, &keys, &format!("user{n}@site.test")).await;
    }
    assert_eq!(server.queries(), after_first, "answers came from the cache");
}

#[rocket::async_test]
async fn a_dns_timeout_is_a_result_with_a_reason() {
    let silent = silent_server();
    let app = TestApp::with(|c| {
        c.dns.nameservers = vec![silent];
        c.dns.timeout_ms = 200;
    })
    .await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let result = check(&app, &keys, "a@good.test").await;
    assert_eq!(flags(&result, &["valid", "domainExists", "hasMxRecords"]), [false, false, false]);
    let reasons = result["reasons"].to_string();
    assert!(reasons.contains("timed out"), "{reasons}");
}
