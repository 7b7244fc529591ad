//! The mail the server sends itself (issue 15): address verification, password reset and
//! invitations, received at a real SMTP sink through the normal delivery path, each link
//! working once; and a signed-in password change.

use rocket::http::{Cookie, Method, Status};
use serde_json::{Value, json};

use crate::accounts::add_member as invite;
use crate::common::TestApp;
use crate::send::Mailroom;

const SYSTEM_FROM: &str = "system@example.test";

/// A mail room whose system mail comes from its verified domain (so it is DKIM-signed).
pub async fn room() -> Mailroom {
    Mailroom::with(|c| c.server.system_from = Some(format!("Tidings <{SYSTEM_FROM}>"))).await
}

/// Delivers queued mail until a new system message to `to` whose subject contains `subject`
/// is at the sink; returns its raw bytes and the token of its link to `page`.
pub async fn mailed_link(room: &Mailroom, to: &str, subject: &str, page: &str) -> (Vec<u8>, String) {
    let matching = || {
        room.sink
            .messages()
            .into_iter()
            .filter(|m| {
                m.to == [to.to_string()] && m.from == SYSTEM_FROM && {
                    let parsed = mail_parser::MessageParser::default().parse(&m.data).unwrap();
                    parsed.subject().is_some_and(|s| s.contains(subject))
                }
            })
            .collect::<Vec<_>>()
    };
    let before = matching().len();
    room.app.run_jobs_until(&format!("{subject:?} mailed to {to}"), async || matching().len() > before).await;
    let message = matching().pop().unwrap();
    let parsed = mail_parser::MessageParser::default().parse(&message.data).unwrap();
    let text = parsed.body_html(0).unwrap().to_string();
    let prefix = format!("{}/{page}?token=", crate::send::LINKS);
    let at = text.find(&prefix).unwrap_or_else(|| panic!("no link to /{page} in {text}"));
    let token: String = text[at + prefix.len()..].chars().take_while(char::is_ascii_alphanumeric).collect();
    assert_eq!(token.len(), 40, "{text}");
    (message.data, token)
}

async fn me(app: &TestApp, session: &Cookie<'static>) -> (Status, Value) {
    let (status, body, _) = app.as_user(Method::Get, "/users/@me", Some(session), None).await;
    (status, body)
}

async fn signup(app: &TestApp, email: &str) -> Cookie<'static> {
    let body = json!({ "email": email, "password": "password123" });
    let (status, user, cookie) = app.as_user(Method::Post, "/auth/signup", None, Some(body)).await;
    assert_eq!(status, Status::Ok, "{user}");
    assert_eq!(user["emailVerified"], json!(false));
    cookie.unwrap()
}

#[rocket::async_test]
async fn signing_up_mails_a_verification_link_that_works_once() {
    let room = room().await;
    let app = &room.app;
    let session = signup(app, "ada@example.com").await;
    let (raw, token) = mailed_link(&room, "ada@example.com", "Confirm your email", "verify-email").await;
    assert!(room.dkim_passes(&raw).await, "system mail is signed with the verified domain of system_from");
    let text = String::from_utf8_lossy(&raw);
    assert!(!text.contains("/t/o/") && !text.contains("/t/c/"), "no tracking in system mail");

    let verify = |token: String| async move {
        let (status, body, _) =
            app.as_user(Method::Post, "/auth/verify-email", None, Some(json!({ "token": token }))).await;
        (status, body)
    };
    let (status, user) = verify(token.clone()).await;
    assert_eq!((status, &user["emailVerified"]), (Status::Ok, &json!(true)), "{user}");
    assert_eq!(me(app, &session).await.1["emailVerified"], json!(true));
    let (status, again) = verify(token).await;
    assert_eq!((status, &again["error"]["code"]), (Status::BadRequest, &json!("INVALID_TOKEN")), "used once");
    for bad in [json!({}), json!({ "token": "" }), json!({ "token": "x".repeat(500) })] {
        let (status, _, _) = app.as_user(Method::Post, "/auth/verify-email", None, Some(bad.clone())).await;
        assert!(status == Status::BadRequest || status == Status::UnprocessableEntity, "{bad}: {status}");
    }
    let (status, _, _) = app.as_user(Method::Post, "/auth/request-verification", Some(&session), None).await;
    assert_eq!(status, Status::Conflict, "already verified");

    // A new link replaces the old one; the old one no longer works.
    let bob = signup(app, "bob@example.com").await;
    let (_, first) = mailed_link(&room, "bob@example.com", "Confirm your email", "verify-email").await;
    let (status, _, _) = app.as_user(Method::Post, "/auth/request-verification", Some(&bob), None).await;
    assert_eq!(status, Status::Ok);
    let (_, second) = mailed_link(&room, "bob@example.com", "Confirm your email", "verify-email").await;
    assert_ne!(first, second);
    assert_eq!(verify(first).await.0, Status::BadRequest);
    assert_eq!(verify(second).await.0, Status::Ok);
    let (status, _, _) = app.as_user(Method::Post, "/auth/request-verification", None, None).await;
    assert_eq!(status, Status::Unauthorized, "needs a session");
}

#[rocket::async_test]
async fn the_capture_outbox_keeps_system_mail_too() {
    let app = TestApp::new().await;
    app.signup("ada@example.com").await;
    let count = || {
        app.store()
            .count("outbox", &[("project_id", "system".into()), ("envelope_to", "ada@example.com".into())])
    };
    app.run_jobs_until("the verification mail captured", async || count() == 1).await;
}

async fn request_reset(app: &TestApp, email: &str) -> (Status, Value) {
    let (status, body, _) = app
        .as_user(Method::Post, "/auth/request-password-reset", None, Some(json!({ "email": email })))
        .await;
    (status, body)
}

async fn reset(app: &TestApp, token: &str, password: &str) -> (Status, Value, Option<Cookie<'static>>) {
    let body = json!({ "token": token, "password": password });
    app.as_user(Method::Post, "/auth/reset-password", None, Some(body)).await
}

async fn login(app: &TestApp, email: &str, password: &str) -> Status {
    let body = json!({ "email": email, "password": password });
    app.as_user(Method::Post, "/auth/login", None, Some(body)).await.0
}

#[rocket::async_test]
async fn a_password_reset_link_works_once_for_an_hour_and_ends_every_session() {
    let room = room().await;
    let app = &room.app;
    let session = signup(app, "ada@example.com").await;

    // The same answer whether or not the account exists; no mail for an unknown address.
    let (status, known) = request_reset(app, "ada@example.com").await;
    assert_eq!(status, Status::Ok);
    let (status, unknown) = request_reset(app, "nobody@example.com").await;
    assert_eq!((status, &unknown), (Status::Ok, &known));
    let (_, token) = mailed_link(&room, "ada@example.com", "Reset your password", "reset-password").await;
    let to_nobody = app.store().count("emails", &[("to_email", "nobody@example.com".into())]);
    assert_eq!(to_nobody, 0);

    // A weak password is refused and the link still works; a good one signs in afresh.
    let (status, _, _) = reset(app, &token, "short").await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, user, cookie) = reset(app, &token, "a new password").await;
    assert_eq!(status, Status::Ok, "{user}");
    assert_eq!(user["emailVerified"], json!(true), "the link reached the address");
    assert_eq!(me(app, &session).await.0, Status::Unauthorized, "the earlier session ended");
    assert_eq!(me(app, &cookie.unwrap()).await.0, Status::Ok);
    assert_eq!(login(app, "ada@example.com", "password123").await, Status::Unauthorized);
    assert_eq!(login(app, "ada@example.com", "a new password").await, Status::Ok);
    let (status, again, _) = reset(app, &token, "yet another one").await;
    assert_eq!((status, &again["error"]["code"]), (Status::BadRequest, &json!("INVALID_TOKEN")));

    // An hour later the link has expired.
    request_reset(app, "ada@example.com").await;
    let (_, late) = mailed_link(&room, "ada@example.com", "Reset your password", "reset-password").await;
    let expired = tidings::clock::now_ms() - 1;
    app.store().set("account_tokens", &[("expires_at", expired.into())], &[]);
    assert_eq!(reset(app, &late, "a third password").await.0, Status::BadRequest);
    assert_eq!(login(app, "ada@example.com", "a new password").await, Status::Ok);
}

#[rocket::async_test]
async fn reset_requests_are_limited_whether_or_not_the_account_exists() {
    let app = TestApp::new().await;
    app.signup("ada@example.com").await;
    for email in ["ada@example.com", "nobody@example.com"] {
        for _ in 0..tidings::core::limits::attempts::MAIL_PER_ACCOUNT {
            assert_eq!(request_reset(&app, email).await.0, Status::Ok);
        }
        let (status, body) = request_reset(&app, email).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (Status::TooManyRequests, &json!("RATE_LIMIT_EXCEEDED"))
        );
    }
    let (status, _) = request_reset(&app, "not an address").await;
    assert_eq!(status, Status::UnprocessableEntity);
}

#[rocket::async_test]
async fn a_signed_in_password_change_needs_the_current_password() {
    let app = TestApp::new().await;
    let first = signup(&app, "ada@example.com").await;
    let (_, _, second) = app
        .as_user(
            Method::Post,
            "/auth/login",
            None,
            Some(json!({ "email": "ada@example.com", "password": "password123" })),
        )
        .await;
    let change = |current: &str, new: &str| json!({ "currentPassword": current, "newPassword": new });
    let (status, _, _) = app
        .as_user(
            Method::Post,
            "/users/@me/password",
            Some(&first),
            Some(change("wrong one!", "a new password")),
        )
        .await;
    assert_eq!(status, Status::Unauthorized);
    let (status, _, _) = app
        .as_user(Method::Post, "/users/@me/password", Some(&first), Some(change("password123", "short")))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, _, renewed) = app
        .as_user(
            Method::Post,
            "/users/@me/password",
            Some(&first),
            Some(change("password123", "a new password")),
        )
        .await;
    assert_eq!(status, Status::Ok);
    assert_eq!(me(&app, &second.unwrap()).await.0, Status::Unauthorized, "other sessions end");
    assert_eq!(me(&app, &first).await.0, Status::Unauthorized, "so does the old cookie");
    assert_eq!(me(&app, &renewed.unwrap()).await.0, Status::Ok, "this browser stays signed in");
    assert_eq!(login(&app, "ada@example.com", "a new password").await, Status::Ok);
}

#[rocket::async_test]
async fn an_invitation_creates_the_account_and_joins_the_project_once() {
    let room = room().await;
    let app = &room.app;
    let (owner, keys) = app.user_with_project("boss@example.com").await;
    let p = keys.id.as_str();

    let (status, invited) = invite(app, &owner, p, "New@Example.com", "ADMIN").await;
    assert_eq!(status, Status::Accepted, "{invited}");
    assert_eq!(invited["invitation"]["email"], json!("new@example.com"));
    let (_, pending, _) =
        app.as_user(Method::Get, &format!("/projects/{p}/invitations"), Some(&owner), None).await;
    assert_eq!(pending.as_array().unwrap().len(), 1);
    let (_, token) =
        mailed_link(&room, "new@example.com", "You are invited to Test project", "invitation").await;

    let (status, offer, _) =
        app.as_user(Method::Get, &format!("/auth/invitation?token={token}"), None, None).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(offer["project"]["name"], json!("Test project"));
    assert_eq!((&offer["role"], &offer["hasAccount"]), (&json!("ADMIN"), &json!(false)));

    let accept = |password: &str| json!({ "token": token, "password": password });
    let (status, _, _) =
        app.as_user(Method::Post, "/auth/accept-invitation", None, Some(accept("short"))).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, joined, cookie) =
        app.as_user(Method::Post, "/auth/accept-invitation", None, Some(accept("password123"))).await;
    assert_eq!(status, Status::Ok, "{joined}");
    assert_eq!(joined["user"]["emailVerified"], json!(true));
    let session = cookie.unwrap();
    let (status, project, _) =
        app.as_user(Method::Get, &format!("/users/@me/projects/{p}"), Some(&session), None).await;
    assert_eq!((status, &project["role"]), (Status::Ok, &json!("ADMIN")));
    let (status, _, _) =
        app.as_user(Method::Post, "/auth/accept-invitation", None, Some(accept("password123"))).await;
    assert_eq!(status, Status::BadRequest, "used once");
    let (_, pending, _) =
        app.as_user(Method::Get, &format!("/projects/{p}/invitations"), Some(&owner), None).await;
    assert_eq!(pending, json!([]));

    // The new admin may invite members but not owners.
    assert_eq!(invite(app, &session, p, "owner2@example.com", "OWNER").await.0, Status::Forbidden);
    // A revoked invitation's link stops working.
    let (_, revoked) = invite(app, &session, p, "gone@example.com", "MEMBER").await;
    let (_, gone) = mailed_link(&room, "gone@example.com", "You are invited", "invitation").await;
    let path = format!("/projects/{p}/invitations/{}", revoked["invitation"]["id"].as_str().unwrap());
    assert_eq!(app.as_user(Method::Delete, &path, Some(&session), None).await.0, Status::NoContent);
    let (status, _, _) =
        app.as_user(Method::Get, &format!("/auth/invitation?token={gone}"), None, None).await;
    assert_eq!(status, Status::BadRequest);

    // Someone who signed up meanwhile signs in and accepts as themselves.
    invite(app, &owner, p, "late@example.com", "MEMBER").await;
    let (_, late) = mailed_link(&room, "late@example.com", "You are invited", "invitation").await;
    let late_session = signup(app, "late@example.com").await;
    let body = json!({ "token": late, "password": "password123" });
    let (status, _, _) = app.as_user(Method::Post, "/auth/accept-invitation", None, Some(body.clone())).await;
    assert_eq!(status, Status::Conflict, "the address has an account now");
    let (status, _, _) =
        app.as_user(Method::Post, "/auth/accept-invitation", Some(&owner), Some(body.clone())).await;
    assert_eq!(status, Status::Forbidden, "not for the owner's account");
    let (status, _, _) =
        app.as_user(Method::Post, "/auth/accept-invitation", Some(&late_session), Some(body)).await;
    assert_eq!(status, Status::Ok);
    let (_, project, _) =
        app.as_user(Method::Get, &format!("/users/@me/projects/{p}"), Some(&late_session), None).await;
    assert_eq!(project["role"], json!("MEMBER"));

    // No one reaches the system project that sent all this.
    let (status, _, _) = app.as_user(Method::Get, "/users/@me/projects/system", Some(&owner), None).await;
    assert!(status == Status::NotFound || status == Status::Forbidden, "{status}");
}
