//! `/topics` and a contact's topics (issue 32): a topic is made, changed, listed and deleted;
//! a contact's state per topic is its own choice, else the topic's `defaultOptIn`; a choice
//! that changes the state emits its event; what is refused changes nothing, and another
//! project's topics are not found.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::TestApp;

async fn topic(app: &TestApp, key: &str, body: Value) -> String {
    let (status, made) = app.post("/topics", key, body).await;
    assert_eq!(status, Status::Ok, "{made}");
    made["id"].as_str().unwrap().to_string()
}

#[rocket::async_test]
async fn topics_are_made_changed_listed_and_deleted_and_refused_field_by_field() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let (status, made) = app
        .post(
            "/topics",
            key,
            json!({ "name": " Product news ", "description": "Monthly", "defaultOptIn": true }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{made}");
    assert_eq!(
        (
            made["name"].clone(),
            made["description"].clone(),
            made["defaultOptIn"].clone(),
            made["public"].clone()
        ),
        (json!("Product news"), json!("Monthly"), json!(true), json!(true))
    );
    let id = made["id"].as_str().unwrap();
    let path = format!("/topics/{id}");
    let (status, changed) =
        app.call(Method::Patch, &path, key, Some(json!({ "description": "", "public": false }))).await;
    assert_eq!(status, Status::Ok, "{changed}");
    assert_eq!((changed["description"].clone(), changed["public"].clone()), (json!(null), json!(false)));
    assert_eq!(changed["name"], "Product news", "kept");

    for (body, status, field) in [
        (json!({}), Status::UnprocessableEntity, Some("name")),
        (json!({ "name": "" }), Status::UnprocessableEntity, Some("name")),
        (
            json!({ "name": "x", "description": "d".repeat(501) }),
            Status::UnprocessableEntity,
            Some("description"),
        ),
        (json!({ "name": "x", "defaultOptIn": "yes" }), Status::UnprocessableEntity, None),
        (json!({ "name": "x", "colour": "red" }), Status::UnprocessableEntity, None),
        (json!({ "name": "PRODUCT NEWS" }), Status::Conflict, None),
    ] {
        let (got, error) = app.post("/topics", key, body.clone()).await;
        assert_eq!(got, status, "{body}: {error}");
        if let Some(field) = field {
            assert_eq!(error["error"]["errors"][0]["field"], json!(field), "{body}: {error}");
        }
    }
    let (_, listed) = app.get("/topics", key).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "nothing refused was made: {listed}");

    // Another project finds none of it; a public key may not manage topics.
    let (_, other) = app.user_with_project("other@example.com").await;
    assert_eq!(app.get("/topics", &other.secret_key).await.1, json!([]));
    assert_eq!(
        app.call(Method::Patch, &path, &other.secret_key, Some(json!({ "name": "x" }))).await.0,
        Status::NotFound
    );
    assert_eq!(app.call(Method::Delete, &path, &other.secret_key, None).await.0, Status::NotFound);
    assert_eq!(app.get("/topics", &keys.public_key).await.0, Status::Unauthorized);

    assert_eq!(app.call(Method::Delete, &path, key, None).await.0, Status::NoContent);
    assert_eq!(app.get("/topics", key).await.1, json!([]));
    assert_eq!(app.call(Method::Delete, &path, key, None).await.0, Status::NotFound);
}

#[rocket::async_test]
async fn a_contacts_topics_are_its_choices_over_the_defaults_and_each_change_is_an_event() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let news = topic(&app, key, json!({ "name": "News", "defaultOptIn": true })).await;
    let offers = topic(&app, key, json!({ "name": "Offers" })).await;
    let (_, contact) = app.post("/contacts", key, json!({ "email": "ada@example.com" })).await;
    let id = contact["id"].as_str().unwrap().to_string();
    let path = format!("/contacts/{id}");

    let (_, read) = app.get(&path, key).await;
    assert_eq!(read["topics"], json!({ news.clone(): true, offers.clone(): false }), "the defaults: {read}");

    let body = json!({ "topics": { news.clone(): false, offers.clone(): true } });
    let (status, changed) = app.call(Method::Patch, &path, key, Some(body)).await;
    assert_eq!(status, Status::Ok, "{changed}");
    assert_eq!(changed["topics"], json!({ news.clone(): false, offers.clone(): true }));
    assert_eq!(changed["subscribed"], true, "marketing stays as it was");
    // The same choice again changes nothing and emits nothing.
    let body = json!({ "topics": { offers.clone(): true } });
    assert_eq!(app.call(Method::Patch, &path, key, Some(body)).await.0, Status::Ok);
    let (_, events) = app.get(&format!("/events/contact/{id}"), key).await;
    let names: Vec<&str> =
        events["data"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "contact.topic_unsubscribed").count(), 1, "{events}");
    assert_eq!(names.iter().filter(|n| **n == "contact.topic_subscribed").count(), 1, "{events}");
    let unsubscribed = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "contact.topic_unsubscribed")
        .unwrap();
    assert_eq!(unsubscribed["data"], json!({ "topicId": news, "topic": "News", "source": "api" }));

    // A topic of no project of this key: 422 naming it, and nothing of the request is kept.
    let (_, other) = app.user_with_project("other@example.com").await;
    let theirs = topic(&app, &other.secret_key, json!({ "name": "Theirs" })).await;
    let body = json!({ "subscribed": false, "topics": { theirs.clone(): true, news.clone(): true } });
    let (status, refused) = app.call(Method::Patch, &path, key, Some(body)).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["field"], json!(format!("topics.{theirs}")), "{refused}");
    let (_, read) = app.get(&path, key).await;
    assert_eq!(
        (read["subscribed"].clone(), read["topics"][&news].clone()),
        (json!(true), json!(false)),
        "{read}"
    );
    for bad in [json!({ "topics": [news.clone()] }), json!({ "topics": { news.clone(): "yes" } })] {
        assert_eq!(
            app.call(Method::Patch, &path, key, Some(bad.clone())).await.0,
            Status::UnprocessableEntity,
            "{bad}"
        );
    }

    // Deleting a topic drops the choices made of it.
    assert_eq!(app.call(Method::Delete, &format!("/topics/{offers}"), key, None).await.0, Status::NoContent);
    assert_eq!(app.get(&path, key).await.1["topics"], json!({ news: false }));
    assert_eq!(app.store().count("contact_topics", &[("topic_id", offers.into())]), 0);
}

#[rocket::async_test]
async fn a_topic_event_cannot_be_tracked_by_a_client() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let body = json!({ "email": "ada@example.com", "event": "contact.topic_subscribed" });
    let (status, error) = app.post("/v1/track", &keys.public_key, body).await;
    assert_eq!(status, Status::UnprocessableEntity, "the service's own event: {error}");
}
