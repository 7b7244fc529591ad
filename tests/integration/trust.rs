//! Issue 29: what one signed-up user (or one project's public key) could do to the server or to
//! another tenant, each reproduced as it was found, with the structural defence it now meets.

use rocket::http::Status;
use serde_json::{Value, json};

use crate::common::TestApp;

/// A project's secret key on a fresh server.
async fn project() -> (TestApp, String) {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("attacker@example.com").await;
    (app, keys.secret_key)
}

/// Item 13: an event pattern that is not ASCII was cut on a byte inside a character (500).
#[rocket::async_test]
async fn webhook_patterns_are_text_not_bytes() {
    let (app, key) = project().await;
    let body = json!({ "url": "https://hooks.example.test/x", "events": ["é", "naïve.*"] });
    let (status, created) = app.post("/webhooks", &key, body).await;
    assert_eq!(status, Status::Ok, "{created}");
    assert_eq!(created["events"], json!(["é", "naïve.*"]));
    let (status, refused) =
        app.post("/webhooks", &key, json!({ "url": "https://h.example.test", "events": ["é*é"] })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
}

/// A template whose tags hold text that is not ASCII was scanned byte by byte and cut inside a
/// character (found by the never-panic property test beside the checkers).
#[rocket::async_test]
async fn templates_with_any_text_in_their_tags_are_checked_not_crashed_on() {
    let (app, key) = project().await;
    for body in ["{{ \"ü }} {% if 'é %}", "{{ ܵA }}", "{% assign x = \"ﬀ\" %}{{ x }}"] {
        let (status, answer) =
            app.post("/templates/preview", &key, json!({ "subject": "s", "body": body })).await;
        assert!(status == Status::Ok || status == Status::UnprocessableEntity, "{body:?}: {status} {answer}");
    }
}

/// Item 14: a condition of 1,000 groups reached SQLite as an expression 1,000 deep (500).
#[rocket::async_test]
async fn a_condition_of_a_thousand_groups_is_refused_by_name() {
    let (app, key) = project().await;
    let groups: Vec<Value> = (0..1000)
        .map(|n| json!({ "filters": [{ "field": "data.n", "operator": "equals", "value": n }] }))
        .collect();
    let body = json!({ "name": "wide", "condition": { "logic": "OR", "groups": groups } });
    let (status, refused) = app.post("/segments", &key, body).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["code"], "too_big");
    // Within the caps, the widest tree is counted (its SQL is balanced, not a chain).
    let groups: Vec<Value> = (0..100)
        .map(|n| json!({ "filters": [{ "field": "data.n", "operator": "equals", "value": n }] }))
        .collect();
    let (status, counted) = app
        .post(
            "/segments",
            &key,
            json!({ "name": "hundred", "condition": { "logic": "OR", "groups": groups } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{counted}");
}
