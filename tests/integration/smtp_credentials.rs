//! `/smtp-credentials`: what other apps sign in to the submission listener with. The password is
//! shown once and kept only as its digest; a credential of another project is not found.

use rocket::http::{Method, Status};
use serde_json::json;

use crate::common::TestApp;

#[rocket::async_test]
async fn a_credential_is_made_listed_without_its_password_and_deleted() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let body =
        json!({ "name": "Gitea", "allowedFromDomains": ["Example.com"], "track": ["opens", "clicks"] });
    let (status, made) = app.post("/smtp-credentials", key, body).await;
    assert_eq!(status, Status::Ok, "{made}");
    let (id, password) = (made["id"].as_str().unwrap(), made["password"].as_str().unwrap());
    assert!(made["username"].as_str().unwrap().starts_with("smtp_"), "{made}");
    assert!(password.starts_with("sp_") && password.len() > 40, "{made}");
    assert_eq!(made["allowedFromDomains"], json!(["example.com"]));
    assert_eq!(made["track"], json!(["opens", "clicks"]));
    assert_eq!(made["lastUsedAt"], json!(null));

    let (_, listed) = app.get("/smtp-credentials", key).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["id"], json!(id));
    assert!(listed[0].get("password").is_none(), "the password is shown once: {listed}");
    let stored: String = app.store().value("smtp_credentials", "password_digest", &[("id", id.into())]);
    assert_eq!(stored, tidings::core::keys::digest(password), "only the digest is kept");

    // Another project sees none of it.
    let (_, other) = app.user_with_project("other@example.com").await;
    let (_, theirs) = app.get("/smtp-credentials", &other.secret_key).await;
    assert_eq!(theirs, json!([]));
    let path = format!("/smtp-credentials/{id}");
    assert_eq!(app.call(Method::Delete, &path, &other.secret_key, None).await.0, Status::NotFound);

    assert_eq!(app.call(Method::Delete, &path, key, None).await.0, Status::NoContent);
    assert_eq!(app.get("/smtp-credentials", key).await.1, json!([]));
    assert_eq!(app.call(Method::Delete, &path, key, None).await.0, Status::NotFound);
}

#[rocket::async_test]
async fn bad_settings_are_refused_field_by_field_and_nothing_is_made() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    for (body, field) in [
        (json!({}), "name"),
        (json!({ "name": " " }), "name"),
        (json!({ "name": "x", "allowedFromDomains": "example.com" }), "allowedFromDomains"),
        (json!({ "name": "x", "allowedFromDomains": ["https://example.com"] }), "allowedFromDomains[0]"),
        (json!({ "name": "x", "track": ["everything"] }), "track"),
    ] {
        let (status, error) = app.post("/smtp-credentials", &keys.secret_key, body.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body}: {error}");
        assert_eq!(error["error"]["errors"][0]["field"], json!(field), "{body}: {error}");
    }
    assert_eq!(app.store().count("smtp_credentials", &[]), 0);
    let (status, _) = app.post("/smtp-credentials", &keys.public_key, json!({ "name": "x" })).await;
    assert_eq!(status, Status::Unauthorized, "a public key makes no credential");
}
