//! Single sign-on against an OpenID Connect provider on loopback: discovery, a JWKS with an RSA
//! key, and a token endpoint answering with an ID token signed by it (the test plays the user
//! at the provider, reading the authorization request the server sent it to).

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rocket::http::{Method, Status};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tidings::config::OidcProvider;

use crate::common::TestApp;
use crate::common::http_receiver::HttpReceiver;

/// The provider's RSA-2048 signing key (PKCS#1 DER), made for these tests only.
pub const KEY: &[u8] = include_bytes!("../support/oidc-test-key.der");
const MODULUS: &str = include_str!("../support/oidc-test-key.n");

/// The provider: its discovery document and keys, at `receiver`; returns its issuer.
pub fn provider(receiver: &HttpReceiver) -> String {
    let issuer = receiver.url("");
    let discovery = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    });
    receiver.respond("/.well-known/openid-configuration", &discovery.to_string());
    let jwks = json!({ "keys": [{ "kty": "RSA", "use": "sig", "alg": "RS256", "kid": "k1", "n": MODULUS.trim(), "e": "AQAB" }] });
    receiver.respond("/jwks", &jwks.to_string());
    issuer
}

pub async fn app_with(issuer: &str, signups: bool) -> TestApp {
    let issuer = issuer.to_string();
    TestApp::with(move |c| {
        c.auth.disable_signups = Some(!signups);
        c.auth.oidc = vec![OidcProvider {
            id: "acme".into(),
            name: "Acme SSO".into(),
            issuer,
            client_id: "tidings".into(),
            client_secret: Some("client-secret".into()),
            scopes: vec!["openid".into(), "email".into()],
        }];
    })
    .await
}

/// Starts a sign-in; returns the authorization request's query.
pub async fn authorize(app: &TestApp) -> HashMap<String, String> {
    let (endpoint, query) = start_sign_in(app, "acme").await;
    assert!(endpoint.ends_with("/authorize"), "{endpoint}");
    query
}

/// Starts a sign-in at provider `id`; returns where the browser is sent and the query it takes.
pub async fn start_sign_in(app: &TestApp, id: &str) -> (String, HashMap<String, String>) {
    let res = app.client.get(format!("/auth/oauth/{id}")).dispatch().await;
    assert_eq!(res.status(), Status::SeeOther);
    let location = res.headers().get_one("Location").unwrap().to_string();
    let (endpoint, query) = location.split_once('?').unwrap_or((&location, ""));
    (endpoint.to_string(), form(query))
}

/// A form's (or query's) fields.
pub fn form(encoded: &str) -> HashMap<String, String> {
    openidconnect::url::form_urlencoded::parse(encoded.as_bytes()).into_owned().collect()
}

/// An ID token for client `tidings` from `issuer` with `claims` added, signed by `key`.
fn id_token(issuer: &str, claims: Value, key: &EncodingKey) -> String {
    let now = tidings::clock::now_ms() / 1000;
    let mut all = json!({ "iss": issuer, "aud": "tidings", "iat": now, "exp": now + 300 });
    all.as_object_mut().unwrap().extend(claims.as_object().unwrap().clone());
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".into());
    jsonwebtoken::encode(&header, &all, key).unwrap()
}

/// The provider's token answer, with an ID token signed by its key.
pub fn token_answer(issuer: &str, claims: Value) -> String {
    let id_token = id_token(issuer, claims, &EncodingKey::from_rsa_der(KEY));
    json!({ "access_token": "at", "token_type": "Bearer", "expires_in": 3600, "id_token": id_token })
        .to_string()
}

/// The provider's token answer for this sign-in, with an ID token signed by `key`.
pub fn answer_token(receiver: &HttpReceiver, issuer: &str, claims: Value, key: &EncodingKey) {
    let id_token = id_token(issuer, claims, key);
    let body =
        json!({ "access_token": "at", "token_type": "Bearer", "expires_in": 3600, "id_token": id_token });
    receiver.respond("/token", &body.to_string());
}

/// Comes back from the provider; returns where the browser goes and the session cookie, if any.
async fn come_back(app: &TestApp, query: &str) -> (String, Option<rocket::http::Cookie<'static>>) {
    come_back_to(app, "acme", query).await
}

/// Comes back from provider `id` to the browser that started the sign-in (it holds the cookie
/// binding it, with the state the query names); returns where the browser goes and the session
/// cookie, if any.
pub async fn come_back_to(
    app: &TestApp,
    id: &str,
    query: &str,
) -> (String, Option<rocket::http::Cookie<'static>>) {
    let state = form(query).remove("state").unwrap_or_default();
    come_back_with(app, id, query, Some(rocket::http::Cookie::new("tidings_oauth", state))).await
}

/// Comes back from provider `id` with `binding` as the browser's sign-in cookie.
pub async fn come_back_with(
    app: &TestApp,
    id: &str,
    query: &str,
    binding: Option<rocket::http::Cookie<'static>>,
) -> (String, Option<rocket::http::Cookie<'static>>) {
    let mut request = app.client.get(format!("/auth/oauth/{id}/callback?{query}"));
    if let Some(binding) = binding {
        request = request.cookie(binding);
    }
    let res = request.dispatch().await;
    assert_eq!(res.status(), Status::SeeOther);
    let cookie = res.cookies().get("tidings_session").map(|c| c.clone().into_owned());
    (res.headers().get_one("Location").unwrap().to_string(), cookie)
}

#[rocket::async_test]
async fn a_provider_signs_users_in_with_pkce_and_links_by_verified_email() {
    let receiver = HttpReceiver::start();
    let issuer = provider(&receiver);
    let app = app_with(&issuer, true).await;
    let key = EncodingKey::from_rsa_der(KEY);

    let (_, config, _) = app.as_user(Method::Get, "/auth/oauth-config", None, None).await;
    assert_eq!(
        config,
        json!({ "providers": [{ "id": "acme", "name": "Acme SSO", "url": "/auth/oauth/acme" }] })
    );
    let (_, features, _) = app.as_user(Method::Get, "/config", None, None).await;
    assert_eq!(features["features"]["oauth"], json!(true));

    // A new user: PKCE S256, the nonce in the token, the code exchanged with the verifier.
    let asked = authorize(&app).await;
    assert_eq!((asked["response_type"].as_str(), asked["client_id"].as_str()), ("code", "tidings"));
    assert_eq!(asked["code_challenge_method"], "S256");
    assert!(asked["scope"].contains("openid") && asked["scope"].contains("email"), "{asked:?}");
    assert!(asked["redirect_uri"].ends_with("/auth/oauth/acme/callback"), "{asked:?}");
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "u-1", "email": "New@Example.com", "email_verified": true, "nonce": asked["nonce"] }),
        &key,
    );
    let (to, cookie) = come_back(&app, &format!("code=c1&state={}", asked["state"])).await;
    assert_eq!(to, "/app");
    let (status, me, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(
        (status, me["email"].clone(), me["emailVerified"].clone()),
        (Status::Ok, json!("new@example.com"), json!(true))
    );
    let exchange = receiver.requests().into_iter().rfind(|r| r.path == "/token").unwrap();
    let form = form(&exchange.body);
    assert_eq!((form["grant_type"].as_str(), form["code"].as_str()), ("authorization_code", "c1"));
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(form["code_verifier"].as_bytes()));
    assert_eq!(challenge, asked["code_challenge"], "the verifier answers the challenge");

    // The state is single-use.
    let (to, cookie) = come_back(&app, &format!("code=c1&state={}", asked["state"])).await;
    assert!(to.starts_with("/login?error=") && cookie.is_none(), "{to}");

    // The same subject again signs in as the same user.
    let asked = authorize(&app).await;
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "u-1", "email": "changed@example.com", "email_verified": true, "nonce": asked["nonce"] }),
        &key,
    );
    let (_, cookie) = come_back(&app, &format!("code=c2&state={}", asked["state"])).await;
    let (_, again, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(again["id"], me["id"]);

    // An existing account is linked by its verified address; an unverified one is not.
    let existing = app.signup("ada@example.com").await;
    let (_, ada, _) = app.as_user(Method::Get, "/users/@me", Some(&existing), None).await;
    let asked = authorize(&app).await;
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "u-2", "email": "ada@example.com", "email_verified": false, "nonce": asked["nonce"] }),
        &key,
    );
    let (to, cookie) = come_back(&app, &format!("code=c3&state={}", asked["state"])).await;
    assert!(to.starts_with("/login?error=") && cookie.is_none(), "an unverified address links nothing: {to}");
    let asked = authorize(&app).await;
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "u-2", "email": "ada@example.com", "email_verified": true, "nonce": asked["nonce"] }),
        &key,
    );
    let (_, cookie) = come_back(&app, &format!("code=c4&state={}", asked["state"])).await;
    let (_, linked, _) = app.as_user(Method::Get, "/users/@me", cookie.as_ref(), None).await;
    assert_eq!(linked["id"], ada["id"]);

    // Five sign-ins, one discovery: anyone may start one, and none makes the server call the
    // provider again while what it found is fresh.
    let discoveries = receiver.requests().iter().filter(|r| r.path.starts_with("/.well-known/")).count();
    assert_eq!(discoveries, 1);
}

#[rocket::async_test]
async fn forged_tokens_wrong_nonces_and_closed_signups_sign_nobody_in() {
    let receiver = HttpReceiver::start();
    let issuer = provider(&receiver);
    let app = app_with(&issuer, false).await;
    let key = EncodingKey::from_rsa_der(KEY);
    let users = || app.store().count("users", &[]);
    let before = users();

    // HS256 under the client secret (the algorithm-confusion forgery): only RS256 is taken.
    let other = EncodingKey::from_secret(b"client-secret");
    let asked = authorize(&app).await;
    let now = tidings::clock::now_ms() / 1000;
    let forged = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({ "iss": issuer, "aud": "tidings", "iat": now, "exp": now + 300, "sub": "x", "email": "x@example.com", "email_verified": true, "nonce": asked["nonce"] }),
        &other,
    )
    .unwrap();
    receiver.respond(
        "/token",
        &json!({ "access_token": "at", "token_type": "Bearer", "id_token": forged }).to_string(),
    );
    let (to, cookie) = come_back(&app, &format!("code=f1&state={}", asked["state"])).await;
    assert!(to.starts_with("/login?error=") && cookie.is_none(), "{to}");

    // Another sign-in's nonce.
    let asked = authorize(&app).await;
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "x", "email": "x@example.com", "email_verified": true, "nonce": "replayed" }),
        &key,
    );
    let (to, cookie) = come_back(&app, &format!("code=f2&state={}", asked["state"])).await;
    assert!(to.starts_with("/login?error=") && cookie.is_none(), "{to}");

    // A state nobody issued, and a provider's refusal.
    let (to, _) = come_back(&app, "code=f3&state=made-up").await;
    assert_eq!(to, "/login?error=expired");
    let (to, _) = come_back(&app, "error=Call+555+to+unlock+your+account").await;
    assert_eq!(to, "/login?error=refused", "the provider's words are not put on the sign-in page");

    // A valid token for an address with no account, while sign-ups are closed.
    let asked = authorize(&app).await;
    answer_token(
        &receiver,
        &issuer,
        json!({ "sub": "x", "email": "x@example.com", "email_verified": true, "nonce": asked["nonce"] }),
        &key,
    );
    let (to, cookie) = come_back(&app, &format!("code=f4&state={}", asked["state"])).await;
    assert!(to == "/login?error=closed" && cookie.is_none(), "{to}");
    assert_eq!(users(), before, "nobody was created");
    assert_eq!(app.client.get("/auth/oauth/nope").dispatch().await.status(), Status::NotFound);

    // Starting a sign-in needs no account: what anonymous requests can keep is bounded.
    let now = tidings::clock::now_ms();
    tidings::db::write_tx(&mut app.state.db.conn().unwrap(), |tx| {
        for i in 0..tidings::core::sso::MAX_PENDING {
            let (provider, nonce, verifier) = ("acme".into(), "n".into(), "v".into());
            let pending = tidings::db::sso::Pending { state: format!("s{i}"), provider, nonce, verifier };
            tidings::db::sso::keep_state(tx, &pending, now)?;
        }
        Ok::<_, tidings::db::DbError>(())
    })
    .unwrap();
    let res = app.client.get("/auth/oauth/acme").dispatch().await;
    let location = res.headers().get_one("Location").unwrap().to_string();
    assert_eq!(location, "/login?error=busy");
}
