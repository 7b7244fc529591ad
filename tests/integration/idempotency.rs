//! `Idempotency-Key`: a reused key is refused with the first request's details and does nothing.

use std::time::Duration;

use rocket::http::{ContentType, Header, Status};
use serde_json::json;
use tidings::{clock, scheduler};

use crate::common::{TestApp, assert_envelope, body};

async fn send(app: &TestApp, secret: &str, key: Option<&str>, payload: &str) -> (Status, serde_json::Value) {
    let mut req =
        app.keyed(app.client.post("/test-probe/idempotent"), secret).header(ContentType::JSON).body(payload);
    if let Some(key) = key {
        req = req.header(Header::new("Idempotency-Key", key.to_string()));
    }
    let res = req.dispatch().await;
    let status = res.status();
    (status, body(res).await)
}

fn effects(app: &TestApp) -> i64 {
    app.store().count("jobs", &[("kind", "test.effect".into())])
}

#[rocket::async_test]
async fn a_reused_key_is_refused_and_nothing_is_performed() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let before = clock::now_ms();

    let (status, _) = send(&app, &keys.secret_key, Some("order-42"), r#"{"n":1}"#).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(effects(&app), 1);

    let res = app
        .keyed(app.client.post("/test-probe/idempotent"), &keys.secret_key)
        .header(Header::new("Idempotency-Key", "order-42"))
        .body(r#"{"n":2}"#)
        .dispatch()
        .await;
    let error = assert_envelope(res, 409, "IDEMPOTENCY_KEY_REUSED").await;
    let details = &error["details"];
    assert_eq!(details["key"], json!("order-42"));
    assert_eq!(details["originalRequest"], json!("POST /test-probe/idempotent"));
    assert_eq!(details["originalStatusCode"], json!(200));
    let at = details["originalRequestAt"].as_str().unwrap();
    assert!(at.ends_with('Z') && at >= clock::iso(before - 1000).as_str(), "{at}");
    assert!(error["suggestion"].is_string());
    assert_eq!(effects(&app), 1, "the second request did nothing");
}

#[rocket::async_test]
async fn keys_are_scoped_to_the_project() {
    let app = TestApp::new().await;
    let (_, a) = app.user_with_project("a@example.com").await;
    let (_, b) = app.user_with_project("b@example.com").await;
    assert_eq!(send(&app, &a.secret_key, Some("same"), "{}").await.0, Status::Ok);
    assert_eq!(send(&app, &b.secret_key, Some("same"), "{}").await.0, Status::Ok);
    assert_eq!(send(&app, &a.secret_key, Some("same"), "{}").await.0, Status::Conflict);
    assert_eq!(effects(&app), 2);
}

#[rocket::async_test]
async fn without_a_key_every_request_is_performed() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    assert_eq!(send(&app, &keys.secret_key, None, "{}").await.0, Status::Ok);
    assert_eq!(send(&app, &keys.secret_key, None, "{}").await.0, Status::Ok);
    assert_eq!(effects(&app), 2);
}

#[rocket::async_test]
async fn malformed_keys_are_422_and_perform_nothing() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let too_long = "k".repeat(256);
    for bad in [too_long.as_str(), "", "tab\tinside", "naïve"] {
        let res = app
            .keyed(app.client.post("/test-probe/idempotent"), &keys.secret_key)
            .header(Header::new("Idempotency-Key", bad.to_string()))
            .body("{}")
            .dispatch()
            .await;
        let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
        assert_eq!(error["errors"][0]["field"], json!("Idempotency-Key"), "{bad:?}");
    }
    assert_eq!(effects(&app), 0);
    let longest = "k".repeat(255);
    assert_eq!(send(&app, &keys.secret_key, Some(&longest), "{}").await.0, Status::Ok);
}

#[rocket::async_test]
async fn a_failed_request_does_not_use_up_the_key() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    assert_eq!(send_raw(&app, &keys.secret_key, "retry-me", "{broken").await, Status::BadRequest);
    assert_eq!(send(&app, &keys.secret_key, Some("retry-me"), "{}").await.0, Status::Ok);
    assert_eq!(effects(&app), 1);
}

async fn send_raw(app: &TestApp, secret: &str, key: &str, payload: &str) -> Status {
    app.keyed(app.client.post("/test-probe/idempotent"), secret)
        .header(Header::new("Idempotency-Key", key.to_string()))
        .body(payload)
        .dispatch()
        .await
        .status()
}

#[rocket::async_test]
async fn expired_keys_may_be_used_again_and_are_swept() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    assert_eq!(send(&app, &keys.secret_key, Some("old"), "{}").await.0, Status::Ok);
    assert_eq!(send(&app, &keys.secret_key, Some("stale"), "{}").await.0, Status::Ok);
    let expire = |key: &str| {
        app.store().set(
            "idempotency_keys",
            &[("expires_at", (clock::now_ms() - 1).into())],
            &[("key", key.into())],
        );
    };
    expire("old");
    expire("stale");
    assert_eq!(
        send(&app, &keys.secret_key, Some("old"), "{}").await.0,
        Status::Ok,
        "an expired key is free again"
    );
    assert_eq!(effects(&app), 3);

    // The scheduler's sweep removes the expired record that nobody reused.
    let handle = scheduler::start(app.state.clone(), scheduler::registry(&app.state.config));
    let count = |key: &str| app.store().count("idempotency_keys", &[("key", key.into())]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while count("stale") > 0 {
        assert!(std::time::Instant::now() < deadline, "the sweep did not run");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.shutdown().await;
    assert_eq!(count("old"), 1, "a live record is kept");
}

#[rocket::async_test]
async fn keys_are_scoped_to_the_endpoint() {
    // A key claimed on /v1/track (public key, from a browser) must not block /v1/send.
    let app = TestApp::with(|c| c.smtp.host = None).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let track = app
        .keyed(app.client.post("/v1/track"), &keys.public_key)
        .header(ContentType::JSON)
        .header(Header::new("Idempotency-Key", "signup-7"))
        .body(json!({ "event": "signup", "email": "ada@example.com" }).to_string())
        .dispatch()
        .await;
    assert_eq!(track.status(), Status::Ok);
    // No verified domain: /v1/send answers 403, which claims no key; what matters is that it
    // is not 409.
    let send = app
        .keyed(app.client.post("/v1/send"), &keys.secret_key)
        .header(ContentType::JSON)
        .header(Header::new("Idempotency-Key", "signup-7"))
        .body(
            json!({ "to": "ada@example.com", "from": "a@example.org", "subject": "s", "body": "b" })
                .to_string(),
        )
        .dispatch()
        .await;
    assert_ne!(send.status(), Status::Conflict);
    // The same endpoint still refuses the reuse.
    let again = app
        .keyed(app.client.post("/v1/track"), &keys.public_key)
        .header(ContentType::JSON)
        .header(Header::new("Idempotency-Key", "signup-7"))
        .body(json!({ "event": "signup", "email": "ada@example.com" }).to_string())
        .dispatch()
        .await;
    assert_envelope(again, 409, "IDEMPOTENCY_KEY_REUSED").await;
}
