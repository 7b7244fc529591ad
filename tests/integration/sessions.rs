//! Dashboard sessions held to what an attacker would try: revocation, CSRF from another site,
//! password guessing, and one user flooding the API.

use governor::clock::FakeRelativeClock;
use rocket::http::{ContentType, Cookie, Header, Status};
use serde_json::{Value, json};
use tidings::core::limits::ratelimit::limiter_with_clock;

use crate::common::binary::run;
use crate::common::{TestApp, assert_envelope, body};

async fn me(app: &TestApp, cookie: &Cookie<'static>) -> Status {
    app.client.get("/users/@me").cookie(cookie.clone()).dispatch().await.status()
}

/// Signs in from the client address `from`; returns the status.
async fn login_from(app: &TestApp, from: std::net::SocketAddr, email: &str, password: &str) -> Status {
    app.client
        .post("/auth/login")
        .remote(from)
        .header(ContentType::JSON)
        .body(json!({ "email": email, "password": password }).to_string())
        .dispatch()
        .await
        .status()
}

async fn login(app: &TestApp, email: &str, password: &str) -> (Status, Option<Cookie<'static>>) {
    let res = app.post_json("/auth/login", &json!({ "email": email, "password": password })).await;
    let cookie = res.cookies().get("tidings_session").map(|c| c.clone().into_owned());
    (res.status(), cookie)
}

#[rocket::async_test]
async fn logout_ends_the_session_on_the_server() {
    let app = TestApp::new().await;
    let first = app.signup("ada@example.com").await;
    let (_, second) = login(&app, "ada@example.com", "password123").await;
    let second = second.unwrap();
    let copied = first.clone();
    let res = app.client.get("/auth/logout").cookie(first).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    // A copy of the cookie no longer works; the other browser's session does.
    assert_eq!(me(&app, &copied).await, Status::Unauthorized);
    assert_eq!(me(&app, &second).await, Status::Ok);
}

#[rocket::async_test]
async fn a_password_change_ends_every_session() {
    let app = TestApp::new().await;
    let first = app.signup("ada@example.com").await;
    let (_, second) = login(&app, "ada@example.com", "password123").await;
    let data_dir = app.dir.path().to_string_lossy().to_string();
    let out = run(
        app.dir.path(),
        &["user", "password", "--email", "ada@example.com", "--password", "a new password"],
        &[("TIDINGS_SERVER__DATA_DIR", &data_dir)],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["sessionsEnded"], json!(2));
    assert_eq!(me(&app, &first).await, Status::Unauthorized);
    assert_eq!(me(&app, &second.unwrap()).await, Status::Unauthorized);
    assert_eq!(login(&app, "ada@example.com", "password123").await.0, Status::Unauthorized);
    assert_eq!(login(&app, "ada@example.com", "a new password").await.0, Status::Ok);
}

/// Adds a member as the cookie's user; returns the response status.
async fn add_member(
    app: &TestApp,
    cookie: &Cookie<'static>,
    project: &str,
    extra: &[Header<'static>],
) -> Status {
    let mut req = app
        .client
        .post(format!("/projects/{project}/members"))
        .cookie(cookie.clone())
        .body(json!({ "email": "eve@example.com", "role": "ADMIN" }).to_string());
    for header in extra {
        req = req.header(header.clone());
    }
    req.dispatch().await.status()
}

async fn members(app: &TestApp, cookie: &Cookie<'static>, project: &str) -> usize {
    let res = app.client.get(format!("/projects/{project}/members")).cookie(cookie.clone()).dispatch().await;
    body(res).await.as_array().map_or(0, Vec::len)
}

#[rocket::async_test]
async fn cookie_requests_from_another_site_are_refused() {
    let app = TestApp::with(|c| c.server.public_url = Some("https://mail.example.com".into())).await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    app.signup("eve@example.com").await;
    let json = Header::new("Content-Type", "application/json");
    // A cross-site form can send text/plain with a JSON-looking body: refused, nothing added.
    let form = add_member(&app, &owner, &keys.id, &[Header::new("Content-Type", "text/plain")]).await;
    assert_eq!(form, Status::UnsupportedMediaType);
    let none = add_member(&app, &owner, &keys.id, &[]).await;
    assert_eq!(none, Status::UnsupportedMediaType);
    // A page of a sibling origin sending JSON: refused.
    for origin in
        ["https://evil.example", "https://mail.example.com.evil.example", "http://mail.example.com", "null"]
    {
        let status = add_member(&app, &owner, &keys.id, &[json.clone(), Header::new("Origin", origin)]).await;
        assert_eq!(status, Status::Forbidden, "{origin}");
    }
    assert_eq!(members(&app, &owner, &keys.id).await, 1, "nothing changed");
    // Signing in from another site is refused too (login CSRF).
    let res = app
        .client
        .post("/auth/login")
        .header(ContentType::JSON)
        .header(Header::new("Origin", "https://evil.example"))
        .body(json!({ "email": "owner@example.com", "password": "password123" }).to_string())
        .dispatch()
        .await;
    assert_envelope(res, 403, "FORBIDDEN").await;
    // The server's own origin, by public_url or by the host the browser used, is accepted.
    let ours = add_member(
        &app,
        &owner,
        &keys.id,
        &[json.clone(), Header::new("Origin", "https://mail.example.com")],
    )
    .await;
    assert_eq!(ours, Status::Ok);
    let res = app
        .client
        .delete(format!("/projects/{}/members/{}", keys.id, "nobody"))
        .cookie(owner.clone())
        .header(json.clone())
        .header(Header::new("Host", "localhost:8080"))
        .header(Header::new("Origin", "http://localhost:8080"))
        .dispatch()
        .await;
    assert_ne!(res.status(), Status::Forbidden, "same host is our own origin");
    // API keys are not cookies: no such rules for them.
    let (status, _) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(status, Status::Ok);
}

#[rocket::async_test]
async fn password_guessing_is_throttled_per_account_and_per_address() {
    let app = TestApp::new().await;
    app.signup("ada@example.com").await;
    app.signup("bob@example.com").await;
    // Successful sign-ins never count.
    for _ in 0..12 {
        assert_eq!(login(&app, "ada@example.com", "password123").await.0, Status::Ok);
    }
    for n in 0..10 {
        assert_eq!(login(&app, "ada@example.com", "wrong password").await.0, Status::Unauthorized, "try {n}");
    }
    // The eleventh attempt is refused before the password is looked at, even the right one.
    let res =
        app.post_json("/auth/login", &json!({ "email": "Ada@Example.com", "password": "password123" })).await;
    let retry: u64 = res.headers().get_one("Retry-After").expect("Retry-After").parse().unwrap();
    assert!((1..=90).contains(&retry), "{retry}");
    assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;
    assert_eq!(
        login(&app, "bob@example.com", "password123").await.0,
        Status::Ok,
        "other accounts are not locked"
    );

    // One address guessing across many accounts: 100 failures, then 429 for everyone there.
    let from = |n: u8| std::net::SocketAddr::from(([198, 51, 100, n], 40000));
    for n in 0..100 {
        let status = login_from(&app, from(1), &format!("user{n}@example.com"), "guess").await;
        assert_eq!(status, Status::Unauthorized, "attempt {n}");
    }
    assert_eq!(login_from(&app, from(1), "bob@example.com", "password123").await, Status::TooManyRequests);
    let other = login_from(&app, from(2), "bob@example.com", "password123").await;
    assert_eq!(other, Status::Ok, "another address is not affected");

    // Behind a reverse proxy on the same machine (trusted by default), clients are told apart
    // by X-Forwarded-For: one guesser there does not lock out everyone else.
    let proxy = std::net::SocketAddr::from(([127, 0, 0, 1], 40000));
    let through_proxy = |client: &'static str, email: String, password: &'static str| {
        app.client
            .post("/auth/login")
            .remote(proxy)
            .header(ContentType::JSON)
            .header(Header::new("X-Forwarded-For", client))
            .body(json!({ "email": email, "password": password }).to_string())
            .dispatch()
    };
    for n in 0..100 {
        let res = through_proxy("198.51.100.77", format!("guess{n}@example.com"), "guess").await;
        assert_eq!(res.status(), Status::Unauthorized);
    }
    let res = through_proxy("198.51.100.77", "bob@example.com".into(), "password123").await;
    assert_eq!(res.status(), Status::TooManyRequests);
    let res = through_proxy("198.51.100.78", "bob@example.com".into(), "password123").await;
    assert_eq!(res.status(), Status::Ok, "another client behind the same proxy signs in");

    // Failed sign-ups count too (probing which emails have accounts).
    for _ in 0..10 {
        let res = app
            .post_json("/auth/signup", &json!({ "email": "bob@example.com", "password": "password123" }))
            .await;
        assert_eq!(res.status(), Status::Conflict);
    }
    let res = app
        .post_json("/auth/signup", &json!({ "email": "bob@example.com", "password": "password123" }))
        .await;
    assert_eq!(res.status(), Status::TooManyRequests);
}

#[rocket::async_test]
async fn each_dashboard_user_has_the_request_limit() {
    let clock = FakeRelativeClock::default();
    let app = TestApp::with_limiter(limiter_with_clock(5, clock)).await;
    let cookie = app.signup("ada@example.com").await;
    for n in 0..5 {
        assert_eq!(me(&app, &cookie).await, Status::Ok, "request {n}");
    }
    let res = app.client.get("/users/@me").cookie(cookie.clone()).dispatch().await;
    assert!(res.headers().get_one("Retry-After").is_some());
    assert_envelope(res, 429, "RATE_LIMIT_EXCEEDED").await;
    let other = app.signup("bob@example.com").await;
    assert_eq!(me(&app, &other).await, Status::Ok, "another user has their own allowance");
}
