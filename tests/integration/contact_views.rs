//! What the contact pages read (issue 33, item 4): the contact list searched across fields,
//! filtered by segment or topic and paged by number; and one contact's timeline of emails,
//! events and subscription changes, newest first, paged without loss or repeat.

use std::collections::HashSet;

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::TestApp;

async fn add(app: &TestApp, key: &str, body: Value) -> String {
    let (status, contact) = app.post("/contacts", key, body.clone()).await;
    assert_eq!(status, Status::Ok, "{body}: {contact}");
    contact["id"].as_str().unwrap().to_string()
}

/// `text` as a query value: every byte but letters and digits percent-encoded.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

fn emails(page: &Value) -> Vec<String> {
    let mut out: Vec<String> =
        page["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()).collect();
    out.sort();
    out
}

#[rocket::async_test]
async fn the_list_searches_fields_and_filters_by_segment_and_topic() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    add(&app, key, json!({ "email": "ana@example.com", "data": { "plan": "pro", "city": "Lisbon" } })).await;
    let bo = add(
        &app,
        key,
        json!({ "email": "bo@example.com", "data": { "plan": "free", "tags": ["VIP", "beta"] } }),
    )
    .await;
    add(
        &app,
        key,
        json!({ "email": "cy@lisbon.example", "data": { "plan": "pro", "nested": { "deep": "Porto" } } }),
    )
    .await;
    add(
        &app,
        key,
        json!({ "email": "di@example.com", "subscribed": false, "data": { "city": "ŁÓDŹ", "seats": 4711 } }),
    )
    .await;
    let before = app.store().count("contacts", &[]);

    for (q, expected) in [
        ("lisbon", vec!["ana@example.com", "cy@lisbon.example"]),
        ("vip", vec!["bo@example.com"]),
        ("PORTO", vec!["cy@lisbon.example"]),
        ("di@", vec!["di@example.com"]),
        ("łódź", vec!["di@example.com"]),
        ("ŁódŹ", vec!["di@example.com"]),
        ("471", vec!["di@example.com"]),
        ("city", vec![]),
        ("*", vec![]),
    ] {
        let (status, page) = app.get(&format!("/contacts?q={}", encoded(q)), key).await;
        assert_eq!(status, Status::Ok, "{q}: {page}");
        assert_eq!(emails(&page), expected, "{q}: a value, in any case, nested or not; never a key");
        assert_eq!(page["total"], json!(expected.len()), "{q}");
    }

    // A dynamic segment as its condition holds now, a static one by its members.
    let condition = json!({ "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] });
    let (_, pro) = app.post("/segments", key, json!({ "name": "Pro", "condition": condition })).await;
    let pro = pro["id"].as_str().unwrap();
    let (_, page) = app.get(&format!("/contacts?segmentId={pro}"), key).await;
    assert_eq!(emails(&page), ["ana@example.com", "cy@lisbon.example"], "{page}");
    let (_, page) =
        app.get(&format!("/contacts?segmentId={pro}&q=lisbon&subscribed=true&search=cy"), key).await;
    assert_eq!(emails(&page), ["cy@lisbon.example"], "the filters hold together: {page}");
    let (_, list) = app.post("/segments", key, json!({ "name": "List", "type": "STATIC" })).await;
    let list = list["id"].as_str().unwrap();
    let (status, _) =
        app.post(&format!("/segments/{list}/members"), key, json!({ "emails": ["bo@example.com"] })).await;
    assert_eq!(status, Status::Ok);
    let (_, page) = app.get(&format!("/contacts?segmentId={list}"), key).await;
    assert_eq!((emails(&page), page["total"].clone()), (vec!["bo@example.com".to_string()], json!(1)));

    // A topic: by the contact's choice, or by the topic's default.
    let (_, opt_in) = app.post("/topics", key, json!({ "name": "News", "defaultOptIn": true })).await;
    let opt_in = opt_in["id"].as_str().unwrap().to_string();
    let (_, opt_out) = app.post("/topics", key, json!({ "name": "Offers" })).await;
    let opt_out = opt_out["id"].as_str().unwrap().to_string();
    let topics = json!({ "topics": { opt_in.clone(): false, opt_out.clone(): true } });
    assert_eq!(app.call(Method::Patch, &format!("/contacts/{bo}"), key, Some(topics)).await.0, Status::Ok);
    let (_, page) = app.get(&format!("/contacts?topicId={opt_in}"), key).await;
    assert_eq!(emails(&page), ["ana@example.com", "cy@lisbon.example", "di@example.com"]);
    let (_, page) = app.get(&format!("/contacts?topicId={opt_out}"), key).await;
    assert_eq!(emails(&page), ["bo@example.com"]);

    // Another project's segment or topic, or none: 404, as for the thing itself.
    let (_, other) = app.user_with_project("other@example.com").await;
    for query in [
        format!("segmentId={pro}"),
        format!("topicId={opt_in}"),
        "segmentId=not-an-id".into(),
        "topicId=00000000-0000-0000-0000-000000000000".into(),
    ] {
        let (status, body) = app.get(&format!("/contacts?{query}"), &other.secret_key).await;
        assert_eq!(status, Status::NotFound, "{query}: {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert_eq!(app.store().count("contacts", &[]), before, "reading changes nothing");
}

#[rocket::async_test]
async fn numbered_pages_count_on_every_page() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    for n in 0..7 {
        add(&app, key, json!({ "email": format!("u{n}@example.com"), "data": { "n": n } })).await;
    }
    let mut seen = Vec::new();
    for page in 1..=3 {
        let (status, body) = app.get(&format!("/contacts?page={page}&limit=3&sort=email&dir=asc"), key).await;
        assert_eq!(status, Status::Ok, "{body}");
        assert_eq!(body["total"], json!(7), "page {page}: {body}");
        seen.extend(
            body["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()),
        );
    }
    let expected: Vec<String> = (0..7).map(|n| format!("u{n}@example.com")).collect();
    assert_eq!(seen, expected, "three pages, in order, nothing twice");
    let (_, past) = app.get("/contacts?page=99&limit=3", key).await;
    assert_eq!((past["data"].clone(), past["total"].clone()), (json!([]), json!(7)));
    let (_, first) = app.get("/contacts?limit=3", key).await;
    let cursor = first["cursor"].as_str().unwrap();
    for query in ["page=0".to_string(), "page=two".into(), format!("page=2&cursor={cursor}")] {
        let (status, body) = app.get(&format!("/contacts?{query}"), key).await;
        assert_eq!(status, Status::BadRequest, "{query}: {body}");
        assert_eq!(body["error"]["code"], json!("BAD_REQUEST"));
    }
}

#[rocket::async_test]
async fn a_contacts_timeline_is_its_emails_events_and_subscription_changes() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let id = add(&app, key, json!({ "email": "ana@example.com" })).await;
    let (status, _) = app
        .post(
            "/v1/track",
            &keys.public_key,
            json!({ "event": "signed-up", "email": "ana@example.com", "data": { "plan": "pro" } }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    let (_, sandbox) = app.get("/domains/sandbox", key).await;
    let from = format!("hello@{}", sandbox["domain"].as_str().unwrap());
    let (status, sent) = app
        .post(
            "/v1/send",
            key,
            json!({ "to": "ana@example.com", "from": from, "subject": "Welcome", "body": "<p>Hi</p>" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{sent}");
    // Entries of the same millisecond go in a fixed order of their kinds, not the order they
    // came in: this test's are a millisecond apart.
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    let path = format!("/contacts/{id}");
    app.call(Method::Patch, &path, key, Some(json!({ "subscribed": false }))).await;
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    let (_, topic) = app.post("/topics", key, json!({ "name": "News" })).await;
    let topic_id = topic["id"].as_str().unwrap().to_string();
    app.call(Method::Patch, &path, key, Some(json!({ "topics": { topic_id.clone(): true } }))).await;
    // The email's own events are its status, not entries of their own.
    app.store().insert(
        "events",
        &[
            ("id", "ev-opened".into()),
            ("project_id", keys.id.as_str().into()),
            ("contact_id", id.as_str().into()),
            ("name", "email.opened".into()),
            ("data", "{}".into()),
            ("created_at", tidings::clock::now_ms().into()),
        ],
    );

    let (status, whole) = app.get(&format!("/contacts/{id}/timeline?limit=100"), key).await;
    assert_eq!(status, Status::Ok, "{whole}");
    let entries = whole["data"].as_array().unwrap();
    assert_eq!(whole["total"], json!(4), "counted on the first page, email.* events folded in: {whole}");
    let kinds: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["name"].as_str().or(e["subject"].as_str()).unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("subscription", "contact.topic_subscribed"),
            ("subscription", "contact.unsubscribed"),
            ("email", "Welcome"),
            ("event", "signed-up"),
        ],
        "newest first: {whole}"
    );
    assert_eq!(
        (entries[0]["topic"].clone(), entries[0]["topicId"].clone()),
        (json!("News"), json!(topic_id))
    );
    assert_eq!(
        (entries[1]["subscribed"].clone(), entries[1]["source"].clone()),
        (json!(false), json!("api"))
    );
    assert_eq!(entries[2]["status"], json!("QUEUED"));
    assert!(entries[2].get("body").is_none(), "never the body");
    assert_eq!(entries[3]["data"], json!({ "plan": "pro" }));

    // Page by page, each entry once and in the same order, even at one millisecond.
    let mut paged = Vec::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = app.get(&format!("/contacts/{id}/timeline?limit=1&cursor={cursor}"), key).await;
        assert_eq!(status, Status::Ok, "{page}");
        paged.extend(page["data"].as_array().unwrap().iter().map(|e| e["id"].clone()));
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => break,
        }
        assert!(paged.len() <= entries.len(), "no end: {paged:?}");
    }
    let ids: Vec<Value> = entries.iter().map(|e| e["id"].clone()).collect();
    assert_eq!(paged, ids);
    assert_eq!(paged.iter().collect::<HashSet<_>>().len(), ids.len());

    // Another project's key sees no such contact; a bad cursor is a 400.
    let (_, other) = app.user_with_project("other@example.com").await;
    assert_eq!(app.get(&format!("/contacts/{id}/timeline"), &other.secret_key).await.0, Status::NotFound);
    let (status, body) = app.get(&format!("/contacts/{id}/timeline?cursor=nonsense"), key).await;
    assert_eq!((status, body["error"]["code"].clone()), (Status::BadRequest, json!("BAD_REQUEST")));
}

#[rocket::async_test]
async fn a_bulk_job_takes_every_filter_of_the_list() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let mut ids = Vec::new();
    for (email, plan, city) in [
        ("ana@example.com", "pro", "Lisbon"),
        ("bo@example.com", "pro", "Oslo"),
        ("cy@example.com", "free", "Lisbon"),
        ("di@example.com", "pro", "Lisbon"),
    ] {
        ids.push(add(&app, key, json!({ "email": email, "data": { "plan": plan, "city": city } })).await);
    }
    let condition = json!({ "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] });
    let (_, pro) = app.post("/segments", key, json!({ "name": "Pro", "condition": condition })).await;
    let (_, news) = app.post("/topics", key, json!({ "name": "News", "defaultOptIn": true })).await;
    let body = json!({ "topics": { news["id"].as_str().unwrap(): false } });
    app.call(Method::Patch, &format!("/contacts/{}", ids[3]), key, Some(body)).await;

    // The pro members in Lisbon who take the news: Ana only (Bo is in Oslo, Cy is free, Di
    // left the topic).
    let filter = json!({ "q": "LISBON", "segmentId": pro["id"], "topicId": news["id"] });
    let listed = app
        .get(
            &format!(
                "/contacts?q=LISBON&segmentId={}&topicId={}",
                pro["id"].as_str().unwrap(),
                news["id"].as_str().unwrap()
            ),
            key,
        )
        .await
        .1;
    assert_eq!(emails(&listed), ["ana@example.com"], "{listed}");
    let (status, queued) =
        app.post("/contacts/bulk-unsubscribe", key, json!({ "mode": "query", "filter": filter })).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let path = format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap());
    assert_eq!(app.get(&path, key).await.1["total"], json!(1), "the total is what the list counts");
    let done = app.finish_job(&path, key).await;
    assert_eq!(done["result"]["updated"], json!(1), "{done}");
    let (_, unsubscribed) = app.get("/contacts?subscribed=false", key).await;
    assert_eq!(emails(&unsubscribed), ["ana@example.com"]);

    // A filter naming what the project lacks, or a search too long: refused, nothing queued.
    let jobs = app.store().count("contact_jobs", &[]);
    for bad in [
        json!({ "segmentId": "00000000-0000-0000-0000-000000000000" }),
        json!({ "topicId": "nope" }),
        json!({ "q": "x".repeat(256) }),
        json!({ "segment": pro["id"] }),
    ] {
        let (status, refused) =
            app.post("/contacts/bulk-delete", key, json!({ "mode": "query", "filter": bad.clone() })).await;
        assert!(
            status == Status::NotFound || status == Status::UnprocessableEntity,
            "{bad}: {status} {refused}"
        );
        assert!(refused["error"]["message"].is_string(), "{refused}");
    }
    assert_eq!(app.store().count("contact_jobs", &[]), jobs);
    assert_eq!(app.store().count("contacts", &[]), 4);
}
