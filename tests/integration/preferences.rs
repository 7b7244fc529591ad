//! The preference centre and the pause of marketing mail (issue 32): the manage page lists the
//! public topics with their state and changes each, pauses marketing mail for 30, 60 or 90 days
//! and resumes it, each change an event; a GET changes nothing; every sender honours the pause
//! (a campaign's audience, `/v1/send`, the delivery check), counted at the SMTP sink.

use rocket::http::{ContentType, Method, Status};
use serde_json::{Value, json};
use tidings::core::links::{self, Link};

use crate::send::Mailroom;

async fn post_form(room: &Mailroom, path: &str, body: &str) -> String {
    let res = room.app.client.post(path.to_string()).header(ContentType::Form).body(body).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    res.into_string().await.unwrap()
}

fn names(events: &Value) -> Vec<String> {
    events["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

#[rocket::async_test]
async fn the_manage_page_changes_topics_and_pauses_marketing_mail_and_each_change_is_an_event() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, news) = app
        .post("/topics", &key, json!({ "name": "News", "defaultOptIn": true, "description": "Monthly" }))
        .await;
    let (_, hidden) = app.post("/topics", &key, json!({ "name": "Internal", "public": false })).await;
    let (_, contact) = app.post("/contacts", &key, json!({ "email": "ada@example.org" })).await;
    let id = contact["id"].as_str().unwrap().to_string();
    let manage =
        format!("/manage/{}", links::token(&app.state.secrets.link, &Link::Manage { contact: id.clone() }));

    let page = app.client.get(manage.clone()).dispatch().await.into_string().await.unwrap();
    assert!(page.contains("Unsubscribe from News") && page.contains("Monthly"), "{page}");
    assert!(!page.contains("Internal"), "a hidden topic is not listed: {page}");
    assert!(page.contains("Pause for 30 days") && page.contains("Pause for 90 days"), "{page}");

    let news_id = news["id"].as_str().unwrap();
    let page = post_form(&room, &manage, &format!("action=topic-off:{news_id}")).await;
    assert!(page.contains("Subscribe to News"), "{page}");
    // Joining again is kept as proof of consent, made on this page.
    post_form(&room, &manage, &format!("action=topic-on:{news_id}")).await;
    let (_, record) = app.get(&format!("/contacts/{id}/consents"), &key).await;
    assert_eq!(record["records"][0]["method"], "preference_centre", "{record}");
    assert_eq!(record["records"][0]["topicId"], news_id);
    post_form(&room, &manage, &format!("action=topic-off:{news_id}")).await;
    let hidden_id = hidden["id"].as_str().unwrap();
    let page = post_form(&room, &manage, &format!("action=topic-on:{hidden_id}")).await;
    assert!(page.contains("Choose one of the buttons"), "a hidden topic cannot be changed here: {page}");
    let page = post_form(&room, &manage, "action=snooze:7").await;
    assert!(page.contains("Choose one of the buttons"), "only the offered pauses: {page}");

    let before = tidings::clock::now_ms();
    let page = post_form(&room, &manage, "action=snooze:30").await;
    assert!(page.contains("paused until") && page.contains("Resume now"), "{page}");
    let (_, read) = app.get(&format!("/contacts/{id}"), &key).await;
    let until = tidings::clock::parse_date(read["snoozedUntil"].as_str().unwrap()).unwrap().0;
    assert!((until - before - 30 * 86_400_000).abs() < 60_000, "{read}");
    assert_eq!(
        (read["topics"][news_id].clone(), read["topics"][hidden_id].clone()),
        (json!(false), json!(false))
    );
    post_form(&room, &manage, "action=resume").await;
    let (_, read) = app.get(&format!("/contacts/{id}"), &key).await;
    assert_eq!(read["snoozedUntil"], Value::Null);

    let (_, events) = app.get(&format!("/events/contact/{id}"), &key).await;
    let names = names(&events);
    for (name, times) in [
        ("contact.topic_unsubscribed", 2),
        ("contact.topic_subscribed", 1),
        ("contact.snoozed", 1),
        ("contact.unsnoozed", 1),
    ] {
        assert_eq!(names.iter().filter(|n| *n == name).count(), times, "{name}: {names:?}");
    }
    let snoozed = events["data"].as_array().unwrap().iter().find(|e| e["name"] == "contact.snoozed").unwrap();
    assert_eq!(snoozed["data"]["source"], "link");

    // A link scanner's GET changes nothing.
    for _ in 0..2 {
        assert_eq!(app.client.get(manage.clone()).dispatch().await.status(), Status::Ok);
    }
    assert_eq!(
        app.get(&format!("/events/contact/{id}"), &key).await.1["data"].as_array().unwrap().len(),
        events["data"].as_array().unwrap().len()
    );
}

#[rocket::async_test]
async fn a_paused_contact_gets_no_marketing_mail_from_any_sender_and_still_gets_transactional_mail() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let mut ids = Vec::new();
    for email in ["paused@example.org", "reader@example.org"] {
        let (_, made) = app.post("/contacts", &key, json!({ "email": email })).await;
        ids.push(made["id"].as_str().unwrap().to_string());
    }
    let until = tidings::clock::iso(tidings::clock::now_ms() + 30 * 86_400_000);
    let path = format!("/contacts/{}", ids[0]);
    let (status, paused) = app.call(Method::Patch, &path, &key, Some(json!({ "snoozedUntil": until }))).await;
    assert_eq!(status, Status::Ok, "{paused}");
    assert_eq!(paused["snoozedUntil"], json!(until));
    for bad in [
        json!({ "snoozedUntil": "soon" }),
        json!({ "snoozedUntil": tidings::clock::iso(tidings::clock::now_ms() + 400 * 86_400_000) }),
    ] {
        let (status, refused) = app.call(Method::Patch, &path, &key, Some(bad.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], "snoozedUntil");
    }
    assert_eq!(
        app.get(&path, &key).await.1["snoozedUntil"],
        json!(until),
        "a refused change keeps the pause"
    );

    // A campaign's audience leaves the paused contact out.
    let (_, counted) = app.post("/campaigns/count", &key, json!({ "audienceType": "ALL" })).await;
    assert_eq!(counted["count"], 1, "{counted}");
    let body = json!({ "name": "News", "subject": "News", "body": "<p>News</p>", "from": "news@example.test", "audienceType": "ALL" });
    let (_, made) = app.post("/campaigns", &key, body).await;
    app.post(&format!("/campaigns/{}/send", made["data"]["id"].as_str().unwrap()), &key, json!({})).await;
    let got = room.deliver(1).await;
    assert_eq!(got[0].to, ["reader@example.org"]);

    // /v1/send: marketing is not sent to it, transactional is.
    let offer = json!({ "name": "Offer", "subject": "Offer", "type": "MARKETING", "body": "<p>x</p>", "from": "news@example.test" });
    let (_, template) = app.post("/templates", &key, offer).await;
    let sent = room.send_ok(json!({ "to": "paused@example.org", "template": template["id"] })).await;
    let email = room.email(&sent[0]);
    assert_eq!(email.status, "FAILED");
    assert!(email.last_error.unwrap().contains("paused marketing email until"), "the reason");
    room.send_ok(json!({ "to": "paused@example.org", "subject": "Receipt", "body": "<p>x</p>", "from": "shop@example.test" })).await;
    let got = room.deliver(2).await;
    assert_eq!(got[1].to, ["paused@example.org"]);
    assert!(crate::send::parse(&got[1].data).subject() == Some("Receipt"));
}
