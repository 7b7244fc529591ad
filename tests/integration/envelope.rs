//! Every failure answers in the error envelope of api.md, with a request id.

use std::time::Duration;

use governor::clock::FakeRelativeClock;
use rocket::http::{ContentType, Status};
use serde_json::json;

use crate::common::store::not;
use crate::common::{TestApp, assert_envelope};

#[rocket::async_test]
async fn bad_request_400_for_malformed_json() {
    let app = TestApp::new().await;
    for bad in ["{", "not json", "", "{\"email\": \"a@example.com\"} trailing"] {
        let res = app.client.post("/auth/signup").header(ContentType::JSON).body(bad).dispatch().await;
        let error = assert_envelope(res, 400, "BAD_REQUEST").await;
        assert!(error["message"].as_str().unwrap().contains("JSON"), "{bad:?}: {error}");
    }
}

#[rocket::async_test]
async fn unauthorized_401_without_credentials() {
    let app = TestApp::new().await;
    assert_envelope(app.client.get("/test-probe/secret").dispatch().await, 401, "MISSING_AUTH").await;
    assert_envelope(app.client.get("/users/@me").dispatch().await, 401, "MISSING_AUTH").await;
}

#[rocket::async_test]
async fn not_found_404_for_unknown_routes() {
    let app = TestApp::new().await;
    assert_envelope(app.client.post("/no/such/route").dispatch().await, 404, "NOT_FOUND").await;
    assert_envelope(app.client.get("/v1/no-such-endpoint").dispatch().await, 404, "NOT_FOUND").await;
    assert_envelope(app.client.get("/contacts/x/y").dispatch().await, 404, "NOT_FOUND").await;
    assert_envelope(app.client.delete("/users/@me").dispatch().await, 404, "NOT_FOUND").await;
    let error = assert_envelope(app.client.get("/missing.js").dispatch().await, 404, "NOT_FOUND").await;
    assert!(error["message"].as_str().unwrap().contains("/missing.js"));
    // Endpoints Tidings does not have (Plunk's landing pages and public form paths, the /api
    // prefix) are JSON 404s for an API client, never the dashboard's page.
    for path in ["/forms/public/x", "/landing-pages/x", "/api/webhooks/x", "/unknown", "/app.json"] {
        let error = assert_envelope(app.client.get(path).dispatch().await, 404, "NOT_FOUND").await;
        assert!(error["message"].as_str().unwrap().contains(path), "{error}");
    }
}

#[rocket::async_test]
async fn the_dashboard_answers_its_own_pages_and_files() {
    let app = TestApp::new().await;
    for page in [
        "/",
        "/login",
        "/signup",
        "/forgot-password",
        "/reset-password?token=x",
        "/verify-email?token=x",
        "/invitation?token=x",
        "/app",
        "/app/projects",
        "/app/p/some-project/contacts",
        "/app/no/such/page",
    ] {
        let res = app.client.get(page).dispatch().await;
        assert_eq!((res.status(), res.content_type()), (Status::Ok, Some(ContentType::HTML)), "{page}");
    }
    for file in ["/app.js", "/style.css", "/js/router.js", "/favicon.svg"] {
        assert_eq!(app.client.get(file).dispatch().await.status(), Status::Ok, "{file}");
    }
}

#[rocket::async_test]
async fn payload_too_large_413_past_the_body_limit() {
    let app = TestApp::with(|c| {
        c.limits.message_bytes = 2048;
        c.limits.attachment_bytes = 1024;
    })
    .await;
    let big = json!({ "to": "a@example.com", "subject": "s", "body": "x".repeat(4096) }).to_string();
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let res = app
        .keyed(app.client.post("/v1/send"), &keys.secret_key)
        .header(ContentType::JSON)
        .body(big)
        .dispatch()
        .await;
    let error = assert_envelope(res, 413, "PAYLOAD_TOO_LARGE").await;
    assert_eq!(error["details"]["limitBytes"], json!(2048));
    let count = app.store().count("emails", &[("project_id", not("system"))]);
    assert_eq!(count, 0, "nothing stored (but the owner's address verification mail)");
}

/// The cap is exact: a body of the cap's length is read, one byte more is 413, with or
/// without a declared length, and whatever length a client declares.
#[rocket::async_test]
async fn a_body_of_the_caps_length_is_read_and_one_byte_more_is_not() {
    let app = TestApp::new().await;
    let sized = |bytes: usize| {
        let shell = json!({ "email": "a@example.com", "password": "" }).to_string();
        json!({ "email": "a@example.com", "password": "x".repeat(bytes - shell.len()) }).to_string()
    };
    let cap = 16 * 1024;
    for (length, declared) in
        [(cap, None), (cap + 1, None), (cap, Some(1)), (cap + 1, Some(cap)), (100, Some(cap * 64))]
    {
        let mut request = app.client.post("/auth/login").header(ContentType::JSON).body(sized(length));
        if let Some(declared) = declared {
            request = request.header(rocket::http::Header::new("Content-Length", declared.to_string()));
        }
        let res = request.dispatch().await;
        if length > cap {
            assert_envelope(res, 413, "PAYLOAD_TOO_LARGE").await;
        } else {
            assert_eq!(res.status().code, 401, "{length} bytes, declared {declared:?}");
        }
    }
}

/// Each route reads at most its own cap (appliance.md §13), whatever the message limit is.
#[rocket::async_test]
async fn every_route_has_its_own_body_cap() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let padded =
        |bytes: usize| json!({ "email": "a@example.com", "password": "x".repeat(bytes) }).to_string();
    // Unauthenticated sign-in and sign-up: 16 KiB.
    for path in ["/auth/login", "/auth/signup"] {
        let res = app.client.post(path).header(ContentType::JSON).body(padded(17 * 1024)).dispatch().await;
        let error = assert_envelope(res, 413, "PAYLOAD_TOO_LARGE").await;
        assert_eq!(error["details"]["limitBytes"], json!(16384), "{path}");
    }
    // Projects (session): 16 KiB.
    let res = app
        .client
        .post("/users/@me/projects")
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(json!({ "name": "x".repeat(17 * 1024) }).to_string())
        .dispatch()
        .await;
    assert_envelope(res, 413, "PAYLOAD_TOO_LARGE").await;
    // /v1/track with the public key, and contacts: 256 KiB.
    let huge_data =
        json!({ "event": "e", "email": "a@example.com", "data": { "list": vec!["x".repeat(100); 3000] } });
    let res = app
        .keyed(app.client.post("/v1/track"), &keys.public_key)
        .header(ContentType::JSON)
        .body(huge_data.to_string())
        .dispatch()
        .await;
    let error = assert_envelope(res, 413, "PAYLOAD_TOO_LARGE").await;
    assert_eq!(error["details"]["limitBytes"], json!(262144));
    let contact = json!({ "email": "a@example.com", "data": { "bio": "x".repeat(300 * 1024) } });
    let (status, _) = app.post("/contacts", &keys.secret_key, contact).await;
    assert_eq!(status.code, 413);
    // Under the cap the same routes work, and /v1/send still takes large messages.
    let emails: Vec<String> =
        (0..500).map(|i| format!("someone-with-a-long-address-{i:04}@example.com")).collect();
    let (status, _) = app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": emails })).await;
    assert_eq!(status.code, 200, "500 addresses (about 25 KB) fit the 256 KiB cap");
    let (status, body) = app.post("/v1/send", &keys.secret_key, json!({ "to": "b@example.com", "from": "s@example.org", "subject": "s", "body": "x".repeat(1024 * 1024) })).await;
    assert_ne!(status.code, 413, "{body}");
    assert_eq!(
        app.store().count("events", &[("name", "e".into())]),
        0,
        "nothing stored by the refused track"
    );
}

#[rocket::async_test]
async fn validation_422_names_the_field() {
    let app = TestApp::new().await;
    let res = app.post_json("/auth/signup", &json!({ "email": 5, "password": "password123" })).await;
    let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
    assert_eq!(error["errors"][0]["field"], json!("email"));
    assert_eq!(error["errors"][0]["code"], json!("invalid_type"));

    let res = app.post_json("/auth/signup", &json!({ "email": "not-an-email", "password": "short" })).await;
    let error = assert_envelope(res, 422, "VALIDATION_ERROR").await;
    let items = error["errors"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(
        (items[0]["field"].as_str(), items[0]["code"].as_str()),
        (Some("email"), Some("invalid_string"))
    );
    assert_eq!(items[1]["field"], json!("password"));
}

#[rocket::async_test]
async fn too_many_requests_429_with_retry_after() {
    let clock = FakeRelativeClock::default();
    let app =
        TestApp::with_limiter(tidings::core::limits::ratelimit::limiter_with_clock(2, clock.clone())).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    for _ in 0..2 {
        let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
        assert_eq!(res.status(), Status::Ok);
    }
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.headers().get_one("Retry-After"), Some("30"));
    let error = assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;
    assert_eq!(error["details"]["retryAfter"], json!(30));
    clock.advance(Duration::from_secs(30));
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}

#[rocket::async_test]
async fn internal_error_500_carries_the_request_id() {
    let app = TestApp::new().await;
    for path in ["/test-probe/panic", "/test-probe/internal"] {
        let res = app.client.get(path).dispatch().await;
        let error = assert_envelope(res, 500, "INTERNAL_SERVER_ERROR").await;
        assert!(error["message"].as_str().unwrap().contains("requestId"), "{error}");
        assert!(!error["message"].as_str().unwrap().contains("probe"), "the cause stays in the log: {error}");
    }
}

#[rocket::async_test]
async fn every_response_has_a_distinct_request_id() {
    let app = TestApp::new().await;
    let mut seen = std::collections::HashSet::new();
    for path in ["/health", "/config", "/", "/some/client/route", "/nope.css", "/users/@me"] {
        let res = app.client.get(path).dispatch().await;
        let id = res
            .headers()
            .get_one("X-Request-Id")
            .unwrap_or_else(|| panic!("{path} has no X-Request-Id"))
            .to_string();
        assert!(id.len() >= 16, "{id}");
        assert!(seen.insert(id), "request ids repeat");
    }
}
