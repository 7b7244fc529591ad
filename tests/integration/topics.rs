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

    // More entries than a project may have topics: refused before any is looked up.
    let many: serde_json::Map<String, Value> =
        (0..51).map(|i| (format!("01a21b9d-c440-71d0-805d-18a5004{i:05}"), json!(true))).collect();
    let (status, refused) = app.call(Method::Patch, &path, key, Some(json!({ "topics": many }))).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(
        refused["error"]["errors"].as_array().unwrap().len(),
        1,
        "one error, not one per id: {refused}"
    );
    assert_eq!(refused["error"]["errors"][0]["field"], "topics");

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

/// A MARKETING campaign to a topic reaches exactly the contacts subscribed to the topic (their
/// choice, else its default) and to marketing, counted at the SMTP sink; a contact that leaves
/// the topic after the audience was taken gets nothing; a segment and a topic in use by one
/// read the same rule, and the topic cannot be deleted under it.
#[rocket::async_test]
async fn a_campaign_to_a_topic_reaches_exactly_its_subscribers() {
    use crate::common::smtp_sink::Reply;
    use crate::send::Mailroom;
    let room = Mailroom::with(|c| c.scheduler.retry_base_secs = 1).await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let news = topic(app, &key, json!({ "name": "News" })).await;
    let digest = topic(app, &key, json!({ "name": "Digest", "defaultOptIn": true })).await;
    let mut ids = std::collections::HashMap::new();
    for (email, subscribed, topics) in [
        ("a@example.org", true, json!({ news.clone(): true })),
        ("b@example.org", true, json!({})),
        ("c@example.org", false, json!({ news.clone(): true })),
        ("d@example.org", true, json!({ news.clone(): false, digest.clone(): false })),
        ("e@example.org", true, json!({})),
    ] {
        let (_, made) =
            app.post("/contacts", &key, json!({ "email": email, "subscribed": subscribed })).await;
        let id = made["id"].as_str().unwrap().to_string();
        let (status, _) = app
            .call(Method::Patch, &format!("/contacts/{id}"), &key, Some(json!({ "topics": topics })))
            .await;
        assert_eq!(status, Status::Ok);
        ids.insert(email, id);
    }
    // A segment on the topic counts what the campaign will reach.
    let condition = json!({ "groups": [{ "filters": [{ "field": format!("topic.{digest}"), "operator": "equals", "value": true }] }] });
    let (status, segment) =
        app.post("/segments", &key, json!({ "name": "Digest readers", "condition": condition })).await;
    assert_eq!(status, Status::Ok, "{segment}");
    let (_, members) =
        app.get(&format!("/segments/{}/contacts", segment["id"].as_str().unwrap()), &key).await;
    let mut emails: Vec<&str> =
        members["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap()).collect();
    emails.sort();
    assert_eq!(emails, ["a@example.org", "b@example.org", "c@example.org", "e@example.org"], "{members}");
    let (status, refused) = app.call(Method::Delete, &format!("/topics/{digest}"), &key, None).await;
    assert_eq!(status, Status::Conflict, "a segment uses it: {refused}");

    let send = async |topic: &str| {
        let body = json!({ "name": "Topic mail", "subject": "Hi", "body": "<p>Hi</p>", "from": "news@example.test",
            "audienceType": "ALL", "topicId": topic });
        let (status, made) = app.post("/campaigns", &key, body).await;
        assert_eq!(status, Status::Ok, "{made}");
        let id = made["data"]["id"].as_str().unwrap().to_string();
        assert_eq!(made["data"]["topicId"], json!(topic));
        let (status, sent) = app.post(&format!("/campaigns/{id}/send"), &key, json!({})).await;
        assert_eq!(status, Status::Ok, "{sent}");
        id
    };

    // News: only a (c chose it but left marketing; d left it; b and e have its default, out).
    let news_campaign = send(&news).await;
    let got = room.deliver(1).await;
    assert_eq!(got.iter().map(|m| m.to[0].as_str()).collect::<Vec<_>>(), ["a@example.org"]);

    // Its unsubscribe page offers the topic or everything; a link scanner's GET changes nothing;
    // the one-click POST (RFC 8058) leaves the topic only, and the campaign counts it.
    let link = crate::send::parse(&got[0].data)
        .header_raw("List-Unsubscribe")
        .unwrap()
        .trim()
        .trim_matches(['<', '>'])
        .to_string();
    let path = link.strip_prefix(crate::send::LINKS).unwrap().to_string();
    let shown = app.client.get(path.clone()).dispatch().await.into_string().await.unwrap();
    assert!(
        shown.contains("Unsubscribe from News") && shown.contains("Unsubscribe from everything"),
        "{shown}"
    );
    let a = ids["a@example.org"].clone();
    let (_, read) = app.get(&format!("/contacts/{a}"), &key).await;
    assert_eq!(
        (read["subscribed"].clone(), read["topics"][&news].clone()),
        (json!(true), json!(true)),
        "a GET changes nothing"
    );
    let one_click = app
        .client
        .post(path.clone())
        .header(rocket::http::ContentType::Form)
        .body("List-Unsubscribe=One-Click")
        .dispatch()
        .await;
    assert_eq!(one_click.status(), Status::Ok);
    let (_, read) = app.get(&format!("/contacts/{a}"), &key).await;
    assert_eq!(
        (read["subscribed"].clone(), read["topics"][&news].clone()),
        (json!(true), json!(false)),
        "{read}"
    );
    let (_, stats) = app.get(&format!("/campaigns/{news_campaign}/stats"), &key).await;
    assert_eq!(stats["unsubscribed"], 1, "{stats}");

    // Digest: a, b and e; b leaves the topic after the audience was taken, while the relay
    // is turning the first tries away, and is not sent to.
    room.sink.script(&[Reply::Temporary, Reply::Temporary, Reply::Temporary]);
    let campaign = send(&digest).await;
    let store = app.store();
    app.run_jobs_until("three refused tries", async || room.sink.refused() >= 3).await;
    assert_eq!(store.count("emails", &[("campaign_id", campaign.clone().into())]), 3);
    let b = &ids["b@example.org"];
    let body = json!({ "topics": { digest.clone(): false } });
    assert_eq!(app.call(Method::Patch, &format!("/contacts/{b}"), &key, Some(body)).await.0, Status::Ok);
    let got = room.deliver(3).await;
    let mut to: Vec<&str> = got[1..].iter().map(|m| m.to[0].as_str()).collect();
    to.sort();
    assert_eq!(to, ["a@example.org", "e@example.org"]);
    let (_, theirs) = app.get(&format!("/contacts/{b}/emails"), &key).await;
    let failed = &theirs["data"][0];
    assert_eq!(failed["status"], "FAILED", "{theirs}");
    assert!(failed["error"].as_str().unwrap().contains("not subscribed to the topic \"Digest\""), "{theirs}");

    // The page's other button leaves everything.
    let everything = app
        .client
        .post(path)
        .header(rocket::http::ContentType::Form)
        .body("action=unsubscribe")
        .dispatch()
        .await;
    assert_eq!(everything.status(), Status::Ok);
    assert_eq!(app.get(&format!("/contacts/{a}"), &key).await.1["subscribed"], false);

    // A TRANSACTIONAL campaign has no topic; an unknown topic is named.
    let body = json!({ "name": "x", "subject": "x", "body": "x", "from": "news@example.test", "audienceType": "ALL",
        "type": "TRANSACTIONAL", "topicId": news });
    let (status, refused) = app.post("/campaigns", &key, body).await;
    assert_eq!(
        (status, refused["error"]["errors"][0]["field"].clone()),
        (Status::UnprocessableEntity, json!("topicId")),
        "{refused}"
    );
    let body = json!({ "name": "x", "subject": "x", "body": "x", "from": "news@example.test", "audienceType": "ALL",
        "topicId": "01a21b9d-c440-71d0-805d-18a50047944f" });
    let (status, refused) = app.post("/campaigns", &key, body).await;
    assert_eq!(
        (status, refused["error"]["errors"][0]["code"].clone()),
        (Status::UnprocessableEntity, json!("not_found")),
        "{refused}"
    );
}
