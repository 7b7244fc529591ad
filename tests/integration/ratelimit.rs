//! The per-project rate limit: 1000 requests a minute by default.

use governor::clock::FakeRelativeClock;
use rocket::http::Status;
use tidings::core::limits::ratelimit::limiter_with_clock;

use crate::common::{TestApp, assert_envelope};

#[rocket::async_test]
async fn the_1001st_request_in_a_minute_is_429() {
    // The clock is held still, so all 1001 requests fall within one minute however slow the
    // machine is; the limit is the configured default.
    let clock = FakeRelativeClock::default();
    let limit = tidings::config::Config::defaults().limits.requests_per_minute;
    assert_eq!(limit, 1000);
    let app = TestApp::with_limiter(limiter_with_clock(limit, clock.clone())).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let (_, other) = app.user_with_project("other@example.com").await;

    for n in 1..=1000u32 {
        let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
        assert_eq!(res.status(), Status::Ok, "request {n}");
        assert_eq!(res.headers().get_one("X-RateLimit-Limit"), Some("1000"));
        let remaining = (1000 - n).to_string();
        assert_eq!(res.headers().get_one("X-RateLimit-Remaining"), Some(remaining.as_str()), "request {n}");
    }
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.headers().get_one("Retry-After"), Some("1"));
    assert_eq!(res.headers().get_one("X-RateLimit-Remaining"), Some("0"));
    assert_eq!(res.headers().get_one("X-RateLimit-Limit"), Some("1000"));
    assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;

    // Another project has its own allowance.
    let res = app.keyed(app.client.get("/test-probe/secret"), &other.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);

    // One request's worth comes back after 60 ms.
    clock.advance(std::time::Duration::from_millis(60));
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}

#[rocket::async_test]
async fn keyed_responses_carry_the_headers_and_others_do_not() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.headers().get_one("X-RateLimit-Limit"), Some("1000"));
    assert_eq!(res.headers().get_one("X-RateLimit-Remaining"), Some("999"));
    // Errors under a resolved key carry them too.
    let res = app
        .keyed(app.client.post("/test-probe/idempotent"), &keys.secret_key)
        .header(rocket::http::Header::new("Idempotency-Key", ""))
        .body("{}")
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::UnprocessableEntity);
    assert_eq!(res.headers().get_one("X-RateLimit-Remaining"), Some("998"));
    let res = app.client.get("/health").dispatch().await;
    assert_eq!(res.headers().get_one("X-RateLimit-Limit"), None);
}

#[rocket::async_test]
async fn public_key_traffic_cannot_starve_the_secret_key() {
    let clock = FakeRelativeClock::default();
    let app = TestApp::with_limiter(limiter_with_clock(10, clock.clone())).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    // A browser flood takes the public share (80 %) ...
    for n in 1..=8u32 {
        let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
        assert_eq!(res.status(), Status::Ok, "public request {n}");
        assert_eq!(res.headers().get_one("X-RateLimit-Limit"), Some("8"));
    }
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert!(res.headers().get_one("Retry-After").is_some());
    assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;
    // ... and the server-side calls still have the rest of the one project limit.
    for _ in 0..2 {
        let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
        assert_eq!(res.status(), Status::Ok);
        assert_eq!(res.headers().get_one("X-RateLimit-Limit"), Some("10"));
    }
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;
}
