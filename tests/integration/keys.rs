//! API keys: which key reaches which endpoint, and which project.

use rocket::http::{ContentType, Header, Status};
use serde_json::json;

use crate::common::{Keys, TestApp, assert_envelope, body};

const SECRET_MESSAGE: &str = "requires a secret key (sk_*), not a public key";

#[rocket::async_test]
async fn key_type_matrix() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;

    // The right key on each kind of endpoint.
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(body(res).await["projectId"], json!(keys.id));
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);

    // A secret key where only a public key is taken (as on /v1/track).
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.secret_key).dispatch().await;
    let error = assert_envelope(res, 401, "INVALID_API_KEY").await;
    assert!(error["message"].as_str().unwrap().contains("requires a public key (pk_*)"), "{error}");

    // A public key anywhere else.
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.public_key).dispatch().await;
    let error = assert_envelope(res, 401, "INVALID_API_KEY").await;
    assert!(error["message"].as_str().unwrap().contains(SECRET_MESSAGE), "{error}");

    // No Authorization header at all.
    let res = app.client.get("/test-probe/secret").dispatch().await;
    assert_envelope(res, 401, "MISSING_AUTH").await;

    // Garbage, a well-formed unknown key, and a header that is not Bearer.
    for header in [
        "Bearer garbage".to_string(),
        format!("Bearer sk_{}", "A".repeat(40)),
        format!("Basic {}", keys.secret_key),
        "Bearer".to_string(),
    ] {
        let res = app
            .client
            .get("/test-probe/secret")
            .header(Header::new("Authorization", header.clone()))
            .dispatch()
            .await;
        let error = assert_envelope(res, 401, "INVALID_API_KEY").await;
        assert!(error["message"].as_str().unwrap().contains(SECRET_MESSAGE), "{header}: {error}");
    }

    // The scheme is case-insensitive, as HTTP says.
    let res = app
        .client
        .get("/test-probe/secret")
        .header(Header::new("Authorization", format!("bearer {}", keys.secret_key)))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
}

#[rocket::async_test]
async fn keys_reach_only_their_own_project() {
    let app = TestApp::new().await;
    let (session_a, a) = app.user_with_project("a@example.com").await;
    let (session_b, b) = app.user_with_project("b@example.com").await;
    assert_ne!(a.id, b.id);

    for (keys, other) in [(&a, &b), (&b, &a)] {
        let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
        let project = body(res).await["projectId"].clone();
        assert_eq!(project, json!(keys.id));
        assert_ne!(project, json!(other.id));
    }

    // A user reaches only the projects they belong to: another tenant's id is a 404, and
    // nothing of it changes.
    let res =
        app.client.get(format!("/projects/{}/members", b.id)).cookie(session_a.clone()).dispatch().await;
    assert_envelope(res, 404, "NOT_FOUND").await;
    let res = app
        .client
        .post(format!("/users/@me/projects/{}/regenerate-keys", b.id))
        .cookie(session_a.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_envelope(res, 404, "NOT_FOUND").await;
    let res = app
        .client
        .patch(format!("/users/@me/projects/{}", b.id))
        .cookie(session_a.clone())
        .header(ContentType::JSON)
        .body(r#"{"name":"stolen"}"#)
        .dispatch()
        .await;
    assert_envelope(res, 404, "NOT_FOUND").await;
    let res = app
        .client
        .delete(format!("/users/@me/projects/{}", b.id))
        .cookie(session_a.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_envelope(res, 404, "NOT_FOUND").await;

    // B's project and keys are untouched.
    let res = app.client.get("/users/@me/projects").cookie(session_b).dispatch().await;
    let projects = body(res).await;
    assert_eq!(projects.as_array().unwrap().len(), 1);
    assert_eq!(projects[0]["name"], json!("Test project"));
    assert_eq!(projects[0]["publicKey"], json!(b.public_key));
    let res = app.keyed(app.client.get("/test-probe/secret"), &b.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}

/// Uses both keys once, so the key guard has them in its cache.
async fn warm(app: &TestApp, keys: &Keys) {
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}

#[rocket::async_test]
async fn a_deleted_projects_keys_stop_working_at_once() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    warm(&app, &keys).await;
    let res = app
        .client
        .delete(format!("/users/@me/projects/{}", keys.id))
        .cookie(session)
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::NoContent);
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
}

#[rocket::async_test]
async fn regenerated_keys_replace_the_old_ones() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    // Both keys in use (and so remembered by the key guard) before they are replaced.
    warm(&app, &keys).await;
    let res = app
        .client
        .post(format!("/users/@me/projects/{}/regenerate-keys", keys.id))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let fresh = body(res).await;
    let (pk, sk) = (fresh["publicKey"].as_str().unwrap(), fresh["secretKey"].as_str().unwrap());
    assert!(pk.starts_with("pk_") && sk.starts_with("sk_"));
    assert_ne!(pk, keys.public_key);
    assert_ne!(sk, keys.secret_key);

    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
    let res = app.keyed(app.client.get("/test-probe/secret"), sk).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let res = app.keyed(app.client.post("/test-probe/public"), pk).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}

#[rocket::async_test]
async fn secret_keys_are_stored_only_as_digests() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let store = app.store();
    let secret = [("kind", "secret".into())];
    let digests: Vec<String> = store.values("api_keys", "digest", &secret);
    let public: Vec<Option<String>> = store.values("api_keys", "public_value", &secret);
    assert_eq!((digests, public), (vec![tidings::core::keys::digest(&keys.secret_key)], vec![None]));
    let mut dump: Vec<String> = store.values("api_keys", "digest", &[]);
    dump.extend(store.values::<Option<String>>("api_keys", "public_value", &[]).into_iter().flatten());
    assert!(dump.iter().all(|stored| !stored.contains(&keys.secret_key)), "{dump:?}");
}

#[rocket::async_test]
async fn a_disabled_project_is_refused_with_403() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    warm(&app, &keys).await;
    let res = app
        .client
        .patch(format!("/users/@me/projects/{}", keys.id))
        .cookie(session.clone())
        .header(ContentType::JSON)
        .body(r#"{"disabled": true}"#)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(body(res).await["disabled"], json!(true));

    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_envelope(res, 403, "PROJECT_DISABLED").await;
    let res = app.keyed(app.client.post("/test-probe/public"), &keys.public_key).dispatch().await;
    assert_envelope(res, 403, "PROJECT_DISABLED").await;

    let res = app
        .client
        .patch(format!("/users/@me/projects/{}", keys.id))
        .cookie(session)
        .header(ContentType::JSON)
        .body(r#"{"disabled": false}"#)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let res = app.keyed(app.client.get("/test-probe/secret"), &keys.secret_key).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
}
