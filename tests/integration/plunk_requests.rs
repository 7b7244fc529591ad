//! Requests as a client written against Plunk v2's own API sends them (issue 28;
//! `../shared/reference/plunk-v2-requests.md`): for every alias, the exact body or parameters
//! Plunk's controllers read, taken with the meaning Plunk gives them. Unknown fields stay 422,
//! and an alias given beside the field it stands for with another value is refused.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::account_mail::{mailed_link, room as mail_room};
use crate::common::TestApp;

#[rocket::async_test]
async fn reset_password_takes_new_password() {
    let room = mail_room().await;
    let app = &room.app;
    app.signup("ada@example.com").await;
    let reset = |body: Value| async move {
        app.as_user(Method::Post, "/auth/reset-password", None, Some(body)).await
    };
    let ask = json!({ "email": "ada@example.com" });
    assert_eq!(
        app.as_user(Method::Post, "/auth/request-password-reset", None, Some(ask)).await.0,
        Status::Ok
    );
    let (_, token) = mailed_link(&room, "ada@example.com", "Reset your password", "reset-password").await;

    // Both names at once with different values: refused, and the token still works.
    let (status, both, _) =
        reset(json!({ "token": token, "password": "one password", "newPassword": "another one" })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{both}");
    assert_eq!(both["error"]["errors"][0]["field"], "newPassword");
    // Plunk's body: {token, newPassword}.
    let (status, user, cookie) = reset(json!({ "token": token, "newPassword": "a new password" })).await;
    assert_eq!(status, Status::Ok, "{user}");
    assert!(cookie.is_some());
    let login = json!({ "email": "ada@example.com", "password": "a new password" });
    assert_eq!(app.as_user(Method::Post, "/auth/login", None, Some(login)).await.0, Status::Ok);
}

#[rocket::async_test]
async fn image_uploads_take_the_part_image() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let png = crate::uploads::PNG;
    let (status, image) = app.upload_parts("/uploads/image", &keys.secret_key, &[("image", png)]).await;
    assert_eq!(status, Status::Ok, "{image}");
    assert_eq!(image["contentType"], "image/png");
    let (status, both) =
        app.upload_parts("/uploads/image", &keys.secret_key, &[("file", png), ("image", png)]).await;
    assert_eq!(status, Status::UnprocessableEntity, "{both}");
    // A CSV import still names its part `file`.
    let (status, csv) =
        app.upload_parts("/contacts/import", &keys.secret_key, &[("image", b"email\na@x.test\n")]).await;
    assert_eq!(status, Status::UnprocessableEntity, "{csv}");
    assert_eq!(csv["error"]["errors"][0]["field"], "file");
}

#[rocket::async_test]
async fn segments_take_event_filters_and_an_unchanged_type() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    for (email, event) in [("ada@example.com", "upgrade"), ("bob@example.com", "login")] {
        let track = json!({ "email": email, "event": event });
        assert_eq!(app.post("/v1/track", &keys.public_key, track).await.0, Status::Ok);
    }
    // SegmentSchemas.create, with a filter on `event.<name>` (SegmentService.buildEventCondition).
    let body = json!({ "name": "Upgraded", "description": "triggered upgrade", "type": "DYNAMIC",
        "condition": { "logic": "AND", "groups": [{ "filters": [
            { "field": "event.upgrade", "operator": "triggered" }] }] },
        "trackMembership": false });
    let (status, segment) = app.post("/segments", key, body).await;
    assert_eq!(status, Status::Ok, "{segment}");
    assert_eq!(segment["memberCount"], 1, "{segment}");
    assert_eq!(segment["condition"]["groups"][0]["filters"][0]["field"], "upgrade", "stored in our form");
    let id = segment["id"].as_str().unwrap();
    let (_, members) = app.get(&format!("/segments/{id}/contacts"), key).await;
    assert_eq!(members["data"][0]["email"], "ada@example.com");

    // SegmentSchemas.update: the fetched segment sent back with its own type.
    let patch = json!({ "name": "Upgraders", "type": "DYNAMIC", "condition": { "logic": "OR", "groups": [
        { "filters": [{ "field": "event.login", "operator": "triggered" }] },
        { "filters": [{ "field": "contact.email", "operator": "contains", "value": "ada" }] }] } });
    let (status, changed) = app.call(Method::Patch, &format!("/segments/{id}"), key, Some(patch)).await;
    assert_eq!(status, Status::Ok, "{changed}");
    assert_eq!(changed["memberCount"], 2, "{changed}");
    let (status, refused) =
        app.call(Method::Patch, &format!("/segments/{id}"), key, Some(json!({ "type": "STATIC" }))).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["field"], "type");
    let (_, unchanged) = app.get(&format!("/segments/{id}"), key).await;
    assert_eq!(
        (unchanged["type"].clone(), unchanged["name"].clone()),
        (json!("DYNAMIC"), json!("Upgraders"))
    );
}

#[rocket::async_test]
async fn campaign_updates_change_only_what_they_name() {
    let room = crate::send::Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (_, segment) = room
        .app
        .post(
            "/segments",
            key,
            json!({ "name": "Everyone", "condition": { "logic": "AND", "groups": [{ "filters": [
            { "field": "email", "operator": "contains", "value": "@" }] }] } }),
        )
        .await;
    // CampaignSchemas.create.
    let create = json!({ "name": "November", "description": "monthly", "subject": "News", "body": "<p>News</p>",
        "from": "news@example.test", "fromName": "Acme", "replyTo": "help@example.test", "type": "MARKETING",
        "audienceType": "SEGMENT", "segmentId": segment["id"] });
    let (status, created) = room.app.post("/campaigns", key, create).await;
    assert_eq!(status, Status::Ok, "{created}");
    let id = created["data"]["id"].as_str().unwrap();
    let (app, path) = (&room.app, format!("/campaigns/{id}"));
    let put = |body: Value| app.call(Method::Put, &path, key, Some(body));

    // CampaignSchemas.update: every field optional; what is left out stays.
    let (status, changed) = put(json!({ "subject": "News for {{ firstName ?? \"you\" }}" })).await;
    assert_eq!(status, Status::Ok, "{changed}");
    for (field, value) in [
        ("subject", json!("News for {{ firstName ?? \"you\" }}")),
        ("name", json!("November")),
        ("description", json!("monthly")),
        ("body", json!("<p>News</p>")),
        ("from", json!("news@example.test")),
        ("fromName", json!("Acme")),
        ("replyTo", json!("help@example.test")),
        ("audienceType", json!("SEGMENT")),
        ("segmentId", segment["id"].clone()),
    ] {
        assert_eq!(changed[field], value, "{field}: {changed}");
    }
    // null clears a nullable field (fromName, replyTo are nullish in Plunk's schema); the
    // audience can move on its own.
    let (status, changed) = put(json!({ "fromName": null, "replyTo": null, "audienceType": "ALL" })).await;
    assert_eq!(status, Status::Ok, "{changed}");
    assert_eq!((changed["fromName"].clone(), changed["replyTo"].clone()), (Value::Null, Value::Null));
    assert_eq!((changed["audienceType"].clone(), changed["segmentId"].clone()), (json!("ALL"), Value::Null));
    assert_eq!(changed["subject"], "News for {{ firstName ?? \"you\" }}");

    // The whole is still checked: a FILTERED audience needs its condition; a bad field and an
    // unknown one are refused; nothing changes.
    for (body, field) in [
        (json!({ "audienceType": "FILTERED" }), "audienceCondition"),
        (json!({ "from": "not an address" }), "from"),
        (json!({ "subject": "x", "createdAt": "2026-01-01" }), "createdAt"),
    ] {
        let (status, refused) = put(body.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    let (_, now) = room.app.get(&format!("/campaigns/{id}"), key).await;
    assert_eq!(
        (now["audienceType"].clone(), now["from"].clone()),
        (json!("ALL"), json!("news@example.test"))
    );
}
