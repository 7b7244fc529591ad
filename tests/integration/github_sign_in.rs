//! Sign-in with GitHub against a stand-in on loopback: its OAuth pages (`/login/oauth/...`) and
//! the two REST calls the server makes (`/user`, `/user/emails`), which answer only the access
//! token the token endpoint handed out.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rocket::http::{Method, Status};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tidings::config::GithubProvider;

use crate::common::TestApp;
use crate::common::http_receiver::{HttpReceiver, Request};
use crate::sso::{come_back_to, form, start_sign_in};

const TOKEN: &str = "gho_loopback";

/// The GitHub account the stand-in says signed in: its id and its addresses.
pub type Account = Arc<Mutex<(u64, Value)>>;

/// GitHub on `receiver`. Its authorization page sends the browser straight back with a code;
/// the token endpoint refuses the code `refused` as GitHub does (200 with an `error`); the API
/// answers `account` to the token it handed out, and 401 to anything else.
pub fn github(receiver: &HttpReceiver, account: Account) {
    receiver.handle("/login/oauth/authorize", |request, _| {
        let asked = form(request.path.split_once('?').map(|(_, q)| q).unwrap_or_default());
        let back = format!("{}?code=browser-code&state={}", asked["redirect_uri"], asked["state"]);
        (302, vec![("Location".into(), back)], String::new())
    });
    receiver.handle("/login/oauth/access_token", |request, _| {
        let body = if form(&request.body).get("code").map(String::as_str) == Some("refused") {
            json!({ "error": "bad_verification_code", "error_description": "The code passed is incorrect or expired." })
        } else {
            json!({ "access_token": TOKEN, "token_type": "bearer", "scope": "user:email" })
        };
        (200, vec![("Content-Type".into(), "application/json".into())], body.to_string())
    });
    let authorized = |request: &Request| {
        request.headers.get("authorization").map(String::as_str) == Some(&format!("Bearer {TOKEN}"))
    };
    let user = account.clone();
    receiver.handle("/user", move |request, _| match authorized(request) {
        true => (200, Vec::new(), json!({ "id": user.lock().unwrap().0, "login": "octo" }).to_string()),
        false => (401, Vec::new(), json!({ "message": "Requires authentication" }).to_string()),
    });
    receiver.handle("/user/emails", move |request, _| match authorized(request) {
        true => (200, Vec::new(), account.lock().unwrap().1.to_string()),
        false => (401, Vec::new(), json!({ "message": "Requires authentication" }).to_string()),
    });
}

/// `[auth.github]` for a stand-in at `receiver`.
pub fn config(receiver: &HttpReceiver) -> GithubProvider {
    GithubProvider {
        client_id: "Iv1.loopback".into(),
        client_secret: "github-secret".into(),
        name: "GitHub".into(),
        web_base: receiver.url("/"),
        api_base: receiver.url(""),
    }
}

fn emails(primary: &str, verified: bool) -> Value {
    json!([
        { "email": primary, "primary": true, "verified": verified, "visibility": "private" },
        { "email": "octo@users.noreply.github.com", "primary": false, "verified": true, "visibility": null },
    ])
}

/// Signs in through GitHub with `code`; returns where the browser lands and its session.
async fn sign_in(app: &TestApp, code: &str) -> (String, Option<rocket::http::Cookie<'static>>) {
    let (_, asked) = start_sign_in(app, "github").await;
    come_back_to(app, "github", &format!("code={code}&state={}", asked["state"])).await
}

#[rocket::async_test]
async fn github_signs_users_in_by_account_and_verified_primary_address() {
    let receiver = HttpReceiver::start();
    let account: Account = Arc::new(Mutex::new((1001, emails("Octo@Example.com", true))));
    github(&receiver, account.clone());
    let app = TestApp::with({
        let github = config(&receiver);
        move |c| c.auth.github = Some(github)
    })
    .await;

    let (_, listed, _) = app.as_user(Method::Get, "/auth/oauth-config", None, None).await;
    assert_eq!(
        listed,
        json!({ "providers": [{ "id": "github", "name": "GitHub", "url": "/auth/oauth/github" }] })
    );

    // The OAuth app flow with PKCE S256, asking only for the addresses.
    let (endpoint, asked) = start_sign_in(&app, "github").await;
    assert_eq!(endpoint, receiver.url("/login/oauth/authorize"), "a trailing / in web_base is not doubled");
    assert_eq!((asked["client_id"].as_str(), asked["scope"].as_str()), ("Iv1.loopback", "user:email"));
    assert_eq!(asked["code_challenge_method"], "S256");
    assert!(asked["redirect_uri"].ends_with("/auth/oauth/github/callback"), "{asked:?}");
    assert!(!asked.contains_key("nonce"));

    // A new user, made with GitHub's verified primary address.
    let (to, cookie) = come_back_to(&app, "github", &format!("code=c1&state={}", asked["state"])).await;
    assert_eq!(to, "/app");
    let (status, me, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(
        (status, me["email"].clone(), me["emailVerified"].clone()),
        (Status::Ok, json!("octo@example.com"), json!(true))
    );
    let requests = receiver.requests();
    let exchange = requests.iter().find(|r| r.path == "/login/oauth/access_token").unwrap();
    let sent = form(&exchange.body);
    assert_eq!(
        (sent["client_id"].as_str(), sent["client_secret"].as_str(), sent["code"].as_str()),
        ("Iv1.loopback", "github-secret", "c1")
    );
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(sent["code_verifier"].as_bytes()));
    assert_eq!(challenge, asked["code_challenge"], "the verifier answers the challenge");
    let user = requests.iter().find(|r| r.path == "/user").unwrap();
    assert!(user.headers["user-agent"].starts_with("tidings/"), "GitHub refuses calls without one");

    // The same account, its address since changed, is the same user.
    account.lock().unwrap().1 = emails("renamed@example.com", true);
    let (_, cookie) = sign_in(&app, "c2").await;
    let (_, again, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(again["id"], me["id"]);

    // Another account whose primary address GitHub has not verified: nothing to link or make
    // (a verified secondary address is not taken instead).
    let existing = app.signup("ada@example.com").await;
    let (_, ada, _) = app.as_user(Method::Get, "/users/@me", Some(&existing), None).await;
    *account.lock().unwrap() = (2002, emails("ada@example.com", false));
    let users = || app.store().count("users", &[]);
    let before = users();
    let (to, cookie) = sign_in(&app, "c3").await;
    assert!(to == "/login?error=unverified" && cookie.is_none(), "{to}");
    assert_eq!(users(), before);

    // Once verified, it links the existing account.
    account.lock().unwrap().1 = emails("ada@example.com", true);
    let (_, cookie) = sign_in(&app, "c4").await;
    let (_, linked, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(linked["id"], ada["id"]);
    let links = app.store().count("user_identities", &[("provider", "github".into())]);
    assert_eq!(links, 2);
}

#[rocket::async_test]
async fn refused_codes_and_tokens_github_does_not_know_sign_nobody_in() {
    let receiver = HttpReceiver::start();
    let account: Account = Arc::new(Mutex::new((3003, emails("eve@example.com", true))));
    github(&receiver, account);
    let app = TestApp::with({
        let github = config(&receiver);
        move |c| c.auth.github = Some(github)
    })
    .await;
    let users = || app.store().count("users", &[]);
    let before = users();

    // GitHub's refusal comes as 200 with an `error` field.
    let (to, cookie) = sign_in(&app, "refused").await;
    assert!(to == "/login?error=failed" && cookie.is_none(), "{to}");

    // A token the API does not take (another's, or revoked meanwhile).
    receiver.handle("/login/oauth/access_token", |_, _| {
        (200, Vec::new(), json!({ "access_token": "gho_other", "token_type": "bearer" }).to_string())
    });
    let (to, cookie) = sign_in(&app, "c1").await;
    assert!(to == "/login?error=failed" && cookie.is_none(), "{to}");
    assert_eq!(users(), before, "nobody was created");
}
