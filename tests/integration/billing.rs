//! Monthly caps: the limits API, consumption, and refusals that are exact however many requests
//! race (the triggers count in the transaction that queues or records).

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::accounts::add_member;
use crate::common::TestApp;
use crate::send::Mailroom;

fn count(app: &TestApp, sql: &str, project: &str) -> i64 {
    app.state.db.conn().unwrap().query_row(sql, [project], |r| r.get(0)).unwrap()
}

async fn set_limits(room: &Mailroom, body: Value) -> (Status, Value) {
    let path = format!("/users/@me/projects/{}/billing-limits", room.keys.id);
    let (status, answer, _) = room.app.as_user(Method::Put, &path, Some(&room.session), Some(body)).await;
    (status, answer)
}

async fn consumption(room: &Mailroom) -> Value {
    let path = format!("/users/@me/projects/{}/billing-consumption", room.keys.id);
    room.app.as_user(Method::Get, &path, Some(&room.session), None).await.1
}

#[rocket::async_test]
async fn limits_are_read_by_members_and_set_by_admins() {
    let room = Mailroom::new().await;
    let app = &room.app;
    let path = format!("/users/@me/projects/{}/billing-limits", room.keys.id);
    let member = app.signup("member@example.com").await;
    add_member(app, &room.session, &room.keys.id, "member@example.com", "MEMBER").await;

    let none = json!({ "transactional": null, "marketing": null, "workflow": null, "events": null });
    let (status, limits, _) = app.as_user(Method::Get, &path, Some(&member), None).await;
    assert_eq!((status, limits), (Status::Ok, none.clone()));
    let (status, _, _) = app.as_user(Method::Put, &path, Some(&member), Some(json!({ "events": 1 }))).await;
    assert_eq!(status, Status::Forbidden, "members do not change limits");

    let (status, saved) = set_limits(&room, json!({ "transactional": 3, "events": 0 })).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(saved, json!({ "transactional": 3, "marketing": null, "workflow": null, "events": 0 }));
    for bad in [json!({ "sms": 1 }), json!({ "marketing": -1 }), json!({ "marketing": "5" }), json!([])] {
        let (status, error) = set_limits(&room, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad} -> {error}");
    }
    let (_, limits, _) = app.as_user(Method::Get, &path, Some(&member), None).await;
    assert_eq!(limits["transactional"], json!(3), "refused changes leave the limits as they were");

    let used = consumption(&room).await;
    assert_eq!(used["usage"]["transactional"], json!({ "used": 0, "limit": 3, "remaining": 3 }));
    assert!(used["period"]["start"].as_str().unwrap().ends_with("-01T00:00:00.000Z"), "{used}");
    let (status, _, _) = app
        .as_user(
            Method::Get,
            &format!("/users/@me/projects/{}/billing-consumption", room.keys.id),
            None,
            None,
        )
        .await;
    assert_eq!(status, Status::Unauthorized);
}

#[rocket::async_test]
async fn concurrent_sends_never_go_one_over_the_cap() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    set_limits(&room, json!({ "transactional": 5 })).await;
    let answers = rocket::futures::future::join_all((0..24).map(|n| {
        let body = json!({ "to": format!("r{n}@example.org"), "from": "hi@example.test", "subject": "Hi", "body": "<p>Hi</p>" });
        let key = key.clone();
        async move { app.post("/v1/send", &key, body).await }
    }))
    .await;
    let ok = answers.iter().filter(|(status, _)| *status == Status::Ok).count();
    assert_eq!(ok, 5, "exactly the cap is queued");
    for (status, error) in answers.iter().filter(|(status, _)| *status != Status::Ok) {
        assert_eq!(*status, Status::PaymentRequired, "{error}");
        assert_eq!(error["error"]["code"], json!("BILLING_LIMIT_EXCEEDED"), "{error}");
        assert_eq!(error["error"]["details"]["category"], json!("transactional"));
    }
    let queued = "SELECT count(*) FROM emails WHERE project_id = ?1 AND source_type = 'TRANSACTIONAL'";
    assert_eq!(count(app, queued, &room.keys.id), 5);
    let contacts = "SELECT count(*) FROM contacts WHERE project_id = ?1";
    assert_eq!(count(app, contacts, &room.keys.id), 5, "a refused send makes no contact either");
    assert_eq!(
        consumption(&room).await["usage"]["transactional"],
        json!({ "used": 5, "limit": 5, "remaining": 0 })
    );

    // A send to several recipients that would cross the cap is refused whole.
    set_limits(&room, json!({ "transactional": 7 })).await;
    let three = json!({ "to": ["a@example.org", "b@example.org", "c@example.org"], "from": "hi@example.test", "subject": "Hi", "body": "x" });
    let (status, _) = room.send(three).await;
    assert_eq!(status, Status::PaymentRequired);
    assert_eq!(count(app, queued, &room.keys.id), 5, "nothing of it was queued");
    // Raising the cap lets sending go on.
    set_limits(&room, json!({ "transactional": 8 })).await;
    let three = json!({ "to": ["a@example.org", "b@example.org", "c@example.org"], "from": "hi@example.test", "subject": "Hi", "body": "x" });
    room.send_ok(three).await;
    assert_eq!(count(app, queued, &room.keys.id), 8);
}

#[rocket::async_test]
async fn tracked_events_are_capped_and_service_events_are_not_counted() {
    let room = Mailroom::new().await;
    let (app, keys) = (&room.app, &room.keys);
    set_limits(&room, json!({ "events": 2 })).await;
    for n in 0..2 {
        let (status, _) = app
            .post(
                "/v1/track",
                &keys.public_key,
                json!({ "event": "signed-up", "email": format!("t{n}@example.org") }),
            )
            .await;
        assert_eq!(status, Status::Ok);
    }
    let (status, error) = app
        .post("/v1/track", &keys.public_key, json!({ "event": "signed-up", "email": "late@example.org" }))
        .await;
    assert_eq!(
        (status, error["error"]["details"]["category"].clone()),
        (Status::PaymentRequired, json!("events"))
    );
    let late = "SELECT count(*) FROM contacts WHERE project_id = ?1 AND email = 'late@example.org'";
    assert_eq!(count(app, late, &keys.id), 0, "nothing of the refused event was kept");

    // Mail still goes out and records its email.sent events, which are the service's own.
    room.send_ok(json!({ "to": "t0@example.org", "from": "hi@example.test", "subject": "Hi", "body": "x" }))
        .await;
    room.deliver(1).await;
    let sent = "SELECT count(*) FROM events WHERE project_id = ?1 AND name = 'email.sent'";
    assert_eq!(count(app, sent, &keys.id), 1);
    assert_eq!(consumption(&room).await["usage"]["events"]["used"], json!(2));
}

#[rocket::async_test]
async fn a_campaign_stops_at_the_marketing_cap() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, &room.keys.secret_key);
    for n in 0..5 {
        app.post("/contacts", key, json!({ "email": format!("c{n}@example.org"), "subscribed": true })).await;
    }
    set_limits(&room, json!({ "marketing": 2 })).await;
    let campaign = json!({ "name": "News", "subject": "News", "body": "<p>n</p>", "from": "news@example.test", "audienceType": "ALL" });
    let (_, created) = app.post("/campaigns", key, campaign).await;
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    room.deliver(2).await;
    let (_, stats) = app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!(stats["totalRecipients"], json!(2), "{stats}");
    assert!(stats["stoppedReason"].as_str().unwrap().contains("monthly limit of campaign emails"), "{stats}");
    assert_eq!(consumption(&room).await["usage"]["marketing"]["used"], json!(2));
}
