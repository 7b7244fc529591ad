//! Retention (issue 35, item 1): what outlives its period goes, what analytics read stays, each
//! project by its own periods, and the space returns to the file system.

use rocket::http::Status;
use serde_json::{Value as Json, json};
use tidings::scheduler::retention::prune;

use crate::common::TestApp;
use crate::common::store::{Set, Store};

const DAY: i64 = 86_400_000;

async fn track(app: &TestApp, key: &str, email: &str, event: &str, data: Json) {
    let body = json!({ "event": event, "email": email, "data": data });
    let (status, answer) = app.post("/v1/track", key, body).await;
    assert_eq!(status, Status::Ok, "{answer}");
}

/// Moves every row of `table` of `project` `days` into the past (its `column`).
fn age(store: &Store, table: &str, column: &str, project: &str, days: i64) {
    store.set(table, &[(column, Set::Less(days * DAY))], &[("project_id", project.into())]);
}

fn hourly_total(store: &Store, project: &str) -> i64 {
    store.values::<i64>("event_hours", "events", &[("project_id", project.into())]).iter().sum()
}

fn email(store: &Store, project: &str, id: &str, status: &str, days_ago: i64) {
    let now = tidings::clock::now_ms();
    store.insert(
        "emails",
        &[
            ("id", id.into()),
            ("project_id", project.into()),
            ("to_email", "ada@example.org".into()),
            ("from_email", "news@example.test".into()),
            ("subject", "Your receipt".into()),
            ("body", "<p>Card ending 4242</p>".into()),
            ("variables", r#"{"card":"4242"}"#.into()),
            ("headers", r#"{"X-Order":"77"}"#.into()),
            ("type", "TRANSACTIONAL".into()),
            ("source_type", "TRANSACTIONAL".into()),
            ("status", status.into()),
            ("message_id", format!("<{id}@example.test>").as_str().into()),
            ("next_attempt_at", now.into()),
            ("created_at", (now - days_ago * DAY).into()),
            ("updated_at", now.into()),
        ],
    );
}

fn delivery(store: &Store, project: &str, endpoint: &str, id: &str, status: &str, days_ago: i64) {
    store.insert(
        "webhook_deliveries",
        &[
            ("id", id.into()),
            ("endpoint_id", endpoint.into()),
            ("project_id", project.into()),
            ("event_type", "signed-up".into()),
            ("payload", "{}".into()),
            ("status", status.into()),
            ("created_at", (tidings::clock::now_ms() - days_ago * DAY).into()),
        ],
    );
}

#[rocket::async_test]
async fn data_past_its_period_goes_and_the_rollups_stay() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let other = app.project(&session, "Other").await;
    for (k, project) in [&keys, &other].into_iter().enumerate() {
        for i in 0..3 {
            track(&app, &project.public_key, &format!("p{k}c{i}@example.org"), "signed-up", json!({})).await;
        }
    }
    let store = app.store();
    // Every event is 400 days old; the other project keeps its events for 1,000 days.
    age(&store, "events", "created_at", &keys.id, 400);
    age(&store, "events", "created_at", &other.id, 400);
    track(&app, &keys.public_key, "new@example.org", "signed-up", json!({})).await;
    let (status, answer) = app
        .call(
            rocket::http::Method::Patch,
            "/retention",
            &other.secret_key,
            Some(json!({ "eventsDays": 1000 })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{answer}");
    assert_eq!(answer["eventsDays"], 1000);
    assert_eq!(answer["custom"], json!(["eventsDays"]));

    email(&store, &keys.id, "old-sent", "SENT", 31);
    email(&store, &keys.id, "old-queued", "QUEUED", 31);
    email(&store, &keys.id, "recent", "SENT", 29);
    let (_, endpoint) = app
        .post(
            "/webhooks",
            &keys.secret_key,
            json!({ "url": "https://hooks.example.org/in", "events": ["*"] }),
        )
        .await;
    let endpoint = endpoint["id"].as_str().expect("an endpoint").to_string();
    delivery(&store, &keys.id, &endpoint, "msg_old", "succeeded", 31);
    delivery(&store, &keys.id, &endpoint, "msg_pending", "pending", 31);
    delivery(&store, &keys.id, &endpoint, "msg_new", "failed", 1);
    let rollups = (hourly_total(&store, &keys.id), hourly_total(&store, &other.id));

    let pruned = prune(&app.state, |_| {}).await.unwrap();
    assert!(pruned.rows >= 5, "{pruned:?}");

    let events = |project: &str| store.count("events", &[("project_id", project.into())]);
    assert_eq!(events(&keys.id), 1, "the events of 400 days ago go; today's stays");
    assert_eq!(events(&other.id), 3, "a project keeps what its own period covers");
    assert_eq!(
        (hourly_total(&store, &keys.id), hourly_total(&store, &other.id)),
        rollups,
        "what analytics read stays"
    );

    let body = |id: &str| store.value::<String>("emails", "body", &[("id", id.into())]);
    let variables = |id: &str| store.value::<String>("emails", "variables", &[("id", id.into())]);
    assert_eq!((body("old-sent"), variables("old-sent")), (String::new(), "{}".to_string()));
    assert_eq!(store.value::<String>("emails", "headers", &[("id", "old-sent".into())]), "{}");
    assert_eq!(store.value::<String>("emails", "status", &[("id", "old-sent".into())]), "SENT");
    assert_eq!(store.value::<String>("emails", "subject", &[("id", "old-sent".into())]), "Your receipt");
    assert_eq!(body("old-queued"), "<p>Card ending 4242</p>", "mail still to go keeps what it says");
    assert_eq!(body("recent"), "<p>Card ending 4242</p>");

    let deliveries: Vec<String> =
        store.values("webhook_deliveries", "id", &[("project_id", keys.id.as_str().into())]);
    assert_eq!(deliveries.len(), 2, "{deliveries:?}");
    assert!(!deliveries.contains(&"msg_old".to_string()), "{deliveries:?}");

    // Nothing is left to prune: a second run changes nothing.
    assert_eq!(prune(&app.state, |_| {}).await.unwrap().rows, 0);
    assert_eq!(store.integrity(), "ok");
}

#[rocket::async_test]
async fn periods_are_checked_and_null_goes_back_to_the_default() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let patch =
        |body: Json| app.call(rocket::http::Method::Patch, "/retention", &keys.secret_key, Some(body));
    let (status, answer) = app.get("/retention", &keys.secret_key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(
        answer,
        json!({ "emailContentDays": 30, "eventsDays": 365, "inboundDays": 30, "webhookDeliveriesDays": 30,
                "defaults": { "emailContentDays": 30, "eventsDays": 365, "inboundDays": 30, "webhookDeliveriesDays": 30 },
                "custom": [] })
    );
    let (status, answer) = patch(json!({ "emailContentDays": 7, "inboundDays": 90 })).await;
    assert_eq!(status, Status::Ok, "{answer}");
    for bad in [json!({ "eventsDays": 0 }), json!({ "eventsDays": 36_501 }), json!({ "eventsDays": -1 })] {
        let (status, answer) = patch(bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad} -> {answer}");
        assert_eq!(answer["error"]["code"], "VALIDATION_ERROR", "{answer}");
        assert_eq!(answer["error"]["errors"][0]["field"], "eventsDays", "{answer}");
    }
    let (status, answer) = patch(json!({ "whenever": 3 })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{answer}");
    let (_, answer) = app.get("/retention", &keys.secret_key).await;
    assert_eq!((answer["emailContentDays"].clone(), answer["eventsDays"].clone()), (json!(7), json!(365)));
    let (_, answer) = patch(json!({ "emailContentDays": null })).await;
    assert_eq!(
        (answer["emailContentDays"].clone(), answer["custom"].clone()),
        (json!(30), json!(["inboundDays"]))
    );
}

/// A new database gives the pages the pruning frees back to the file system.
#[rocket::async_test]
async fn the_space_returns_to_the_file_system() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let filler = "x".repeat(16 * 1024);
    for i in 0..600 {
        track(&app, &keys.public_key, "ada@example.org", "page", json!({ "n": i, "page": filler })).await;
    }
    let store = app.store();
    age(&store, "events", "created_at", &keys.id, 400);
    store.checkpoint();
    let path = app.state.db.path().to_path_buf();
    let before = std::fs::metadata(&path).unwrap().len();
    assert!(before > 9 * 1024 * 1024, "{before} bytes");

    let pruned = prune(&app.state, |_| {}).await.unwrap();
    assert_eq!(pruned.rows, 600);
    assert!(pruned.pages_returned > 2_000, "{pruned:?}");
    store.checkpoint();
    let after = std::fs::metadata(&path).unwrap().len();
    assert!(after < before / 4, "the file went from {before} to {after} bytes");
    assert_eq!(store.integrity(), "ok");
}
