//! Account flows an attacker could abuse (issue 29, items 7 to 9): guessing a password with
//! many attempts at once, taking over an account by signing up first with the victim's address,
//! and signing a victim's browser into the attacker's account through a callback it started.

use rocket::http::Status;
use serde_json::json;

use crate::common::TestApp;

/// Forty wrong passwords for one account sent at once: the limit is ten failures, and ten are
/// compared; the rest are refused before bcrypt runs, as the eleventh sent alone is.
#[rocket::async_test]
async fn concurrent_guesses_are_counted_before_the_next_is_compared() {
    let app = TestApp::new().await;
    app.signup("ada@example.com").await;
    let app = &app;
    let guesses = (0..40).map(|n| async move {
        let body = json!({ "email": "ada@example.com", "password": format!("guess {n}") });
        app.post_json("/auth/login", &body).await.status()
    });
    let statuses = rocket::futures::future::join_all(guesses).await;
    let compared = statuses.iter().filter(|s| **s == Status::Unauthorized).count();
    let refused = statuses.iter().filter(|s| **s == Status::TooManyRequests).count();
    assert_eq!((compared, refused), (10, 30), "{statuses:?}");
}

/// Signs in with password `password` as `email`: the status.
async fn login(app: &TestApp, email: &str, password: &str) -> Status {
    app.post_json("/auth/login", &json!({ "email": email, "password": password })).await.status()
}

/// Pre-hijacking: an attacker signs up with the victim's address (never verified) and keeps the
/// session; the victim later signs in with a provider that vouches for the address. The victim
/// gets the account, and is told; the attacker's password and session stop working.
#[rocket::async_test]
async fn a_sign_up_that_never_proved_its_address_is_not_handed_the_owners_sign_in() {
    use crate::sso::{KEY, answer_token, app_with, authorize, come_back_to, provider};
    let receiver = crate::common::http_receiver::HttpReceiver::start();
    let issuer = provider(&receiver);
    let app = app_with(&issuer, true).await;
    let attacker = app.signup("victim@example.com").await;
    let victim = json!({ "sub": "v-1", "email": "victim@example.com", "email_verified": true });

    let asked = authorize(&app).await;
    let mut claims = victim.clone();
    claims["nonce"] = json!(asked["nonce"]);
    answer_token(&receiver, &issuer, claims, &jsonwebtoken::EncodingKey::from_rsa_der(KEY));
    let (to, session) = come_back_to(&app, "acme", &format!("code=c1&state={}", asked["state"])).await;
    assert_eq!(to, "/app/projects?notice=reclaimed", "the owner is told on arrival");
    let (status, me, _) = app.as_user(rocket::http::Method::Get, "/users/@me", session.as_ref(), None).await;
    assert_eq!((status, me["emailVerified"].clone()), (Status::Ok, json!(true)), "{me}");

    let (status, _, _) = app.as_user(rocket::http::Method::Get, "/users/@me", Some(&attacker), None).await;
    assert_eq!(status, Status::Unauthorized, "the attacker's session ended");
    assert_eq!(
        login(&app, "victim@example.com", "password123").await,
        Status::Unauthorized,
        "and its password"
    );
    let mail: String =
        app.store().last("emails", "subject", &[("to_email", "victim@example.com".into())]).unwrap();
    assert_eq!(mail, "Your account was secured", "and by mail");

    // Linked now: the next sign-in is a plain one.
    let asked = authorize(&app).await;
    let mut claims = victim;
    claims["nonce"] = json!(asked["nonce"]);
    answer_token(&receiver, &issuer, claims, &jsonwebtoken::EncodingKey::from_rsa_der(KEY));
    let (to, _) = come_back_to(&app, "acme", &format!("code=c2&state={}", asked["state"])).await;
    assert_eq!(to, "/app");
}

/// Login CSRF: the attacker starts a sign-in in their own browser and sends the victim the
/// provider's return (their code, their state). The victim's browser lacks the cookie that
/// binds the sign-in to the browser that started it, so nobody is signed in there.
#[rocket::async_test]
async fn a_sign_in_returns_only_to_the_browser_that_started_it() {
    use crate::sso::{KEY, answer_token, app_with, come_back_with, provider, start_sign_in};
    let receiver = crate::common::http_receiver::HttpReceiver::start();
    let issuer = provider(&receiver);
    let app = app_with(&issuer, true).await;
    // The start sets the binding: the state, for the callback's path only, unreadable by scripts.
    let res = app.client.get("/auth/oauth/acme").dispatch().await;
    let binding = res.cookies().get("tidings_oauth").expect("a binding cookie").clone().into_owned();
    let location = res.headers().get_one("Location").unwrap().to_string();
    let asked = crate::sso::form(location.split_once('?').unwrap().1);
    assert_eq!(binding.value(), asked["state"]);
    assert_eq!((binding.path(), binding.http_only()), (Some("/auth/oauth"), Some(true)));
    assert_eq!(binding.same_site(), Some(rocket::http::SameSite::Lax));

    let claims = json!({ "sub": "attacker", "email": "attacker@example.com", "email_verified": true, "nonce": asked["nonce"] });
    answer_token(&receiver, &issuer, claims, &jsonwebtoken::EncodingKey::from_rsa_der(KEY));
    let query = format!("code=c1&state={}", asked["state"]);
    // The victim's browser: no binding, or the binding of a sign-in of its own.
    let (_, own) = start_sign_in(&app, "acme").await;
    let theirs = rocket::http::Cookie::new("tidings_oauth", own["state"].clone());
    for cookie in [None, Some(theirs)] {
        let (to, session) = come_back_with(&app, "acme", &query, cookie).await;
        assert_eq!((to.as_str(), session.is_none()), ("/login?error=browser", true));
    }
    // The attacker's own browser still completes it.
    let (to, session) = come_back_with(&app, "acme", &query, Some(binding)).await;
    assert_eq!((to.as_str(), session.is_some()), ("/app", true));
}

/// Sign-ups are closed by default once the first account exists (issue 29): the first person
/// to sign up owns the instance; after that, only an invitation makes an account, unless
/// `disable_signups = false` opens the door. `/config` says which.
#[rocket::async_test]
async fn only_the_first_account_signs_up_unless_the_owner_invites_or_opens_the_door() {
    let room = crate::send::Mailroom::with(|c| {
        c.auth.disable_signups = None;
        c.server.system_from = Some("Tidings <system@example.test>".into());
    })
    .await;
    let app = &room.app;
    // The mail room made its owner through sign-up, the first account.
    let signups = async || app.client.get("/config").dispatch().await.into_json::<serde_json::Value>().await;
    assert_eq!(signups().await.unwrap()["features"]["signups"], json!(false));
    let stranger = json!({ "email": "stranger@example.com", "password": "password123" });
    let res = app.post_json("/auth/signup", &stranger).await;
    assert_eq!(res.status(), Status::Forbidden);
    let refused = res.into_json::<serde_json::Value>().await.unwrap();
    assert_eq!(refused["error"]["code"], "FORBIDDEN", "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("invitation"), "{refused}");
    let count = || app.store().count("users", &[]);
    assert_eq!(count(), 1, "nothing was made");

    // An invitation still makes an account.
    let (status, invited) =
        crate::accounts::add_member(app, &room.session, &room.keys.id, "guest@example.com", "MEMBER").await;
    assert_eq!(status, Status::Accepted, "{invited}");
    let (_, token) =
        crate::account_mail::mailed_link(&room, "guest@example.com", "You are invited", "invitation").await;
    let accept = json!({ "token": token, "password": "password123" });
    assert_eq!(app.post_json("/auth/accept-invitation", &accept).await.status(), Status::Ok);
    assert_eq!(count(), 2);

    // A fresh install lets its first person in; `disable_signups = false` lets everyone in.
    let fresh = TestApp::with(|c| c.auth.disable_signups = None).await;
    let first = json!({ "email": "owner@example.com", "password": "password123" });
    assert_eq!(fresh.post_json("/auth/signup", &first).await.status(), Status::Ok);
    assert_eq!(fresh.post_json("/auth/signup", &stranger).await.status(), Status::Forbidden);
    let open = TestApp::with(|c| c.auth.disable_signups = Some(false)).await;
    assert_eq!(open.post_json("/auth/signup", &first).await.status(), Status::Ok);
    assert_eq!(open.post_json("/auth/signup", &stranger).await.status(), Status::Ok);
}
