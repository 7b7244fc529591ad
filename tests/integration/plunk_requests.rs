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

#[rocket::async_test]
async fn bulk_jobs_take_query_mode_and_answer_with_state_progress_and_result() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let mut ids = std::collections::HashMap::new();
    for (email, subscribed) in
        [("ada@acme.test", true), ("bob@acme.test", true), ("cy@acme.test", false), ("dee@other.test", true)]
    {
        let (_, c) = app.post("/contacts", key, json!({ "email": email, "subscribed": subscribed })).await;
        ids.insert(email, c["id"].as_str().unwrap().to_string());
    }
    let (_, theirs) = app.user_with_project("other@example.com").await;
    let (_, stranger) = app.post("/contacts", &theirs.secret_key, json!({ "email": "eve@acme.test" })).await;
    let subscribed =
        async |email: &str| app.get(&format!("/contacts/{}", ids[email]), key).await.1["subscribed"].clone();

    // ContactSchemas.bulkAction, query mode: the subscribed contacts at acme.test but Bob.
    let body = json!({ "mode": "query", "filter": { "search": "ACME.test", "subscribed": true }, "excludeIds": [ids["bob@acme.test"]] });
    let (status, queued) = app.post("/contacts/bulk-unsubscribe", key, body).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let path = format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap());
    let (_, waiting) = app.get(&path, key).await;
    assert_eq!(
        (waiting["state"].clone(), waiting["progress"].clone(), waiting["result"].clone()),
        (json!("waiting"), json!(0), Value::Null)
    );
    assert_eq!(
        (waiting["id"].clone(), waiting["total"].clone()),
        (queued["jobId"].clone(), json!(2)),
        "{waiting}"
    );
    let done = app.finish_job(&path, key).await;
    assert_eq!((done["state"].clone(), done["progress"].clone()), (json!("completed"), json!(100)), "{done}");
    assert_eq!(
        done["result"],
        json!({ "total": 2, "processed": 2, "imported": 0, "updated": 1, "skipped": 1, "errorCount": 0 })
    );
    assert_eq!(done["failedReason"], Value::Null);
    assert_eq!(subscribed("ada@acme.test").await, json!(false));
    assert_eq!(subscribed("bob@acme.test").await, json!(true), "excluded");
    assert_eq!(subscribed("dee@other.test").await, json!(true), "not matched");
    let (_, eve) =
        app.get(&format!("/contacts/{}", stranger["id"].as_str().unwrap()), &theirs.secret_key).await;
    assert_eq!(eve["subscribed"], json!(true), "another project's contact is never touched");

    // Query mode with no filter: every contact; and ids mode named as Plunk names it.
    let (status, queued) = app.post("/contacts/bulk-subscribe", key, json!({ "mode": "query" })).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let done = app.finish_job(&format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap()), key).await;
    assert_eq!(done["result"]["total"], 4, "{done}");
    for email in ["ada@acme.test", "cy@acme.test"] {
        assert_eq!(subscribed(email).await, json!(true), "{email}");
    }
    let body = json!({ "mode": "ids", "contactIds": [ids["dee@other.test"]] });
    let (status, queued) = app.post("/contacts/bulk-delete", key, body).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let done = app.finish_job(&format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap()), key).await;
    assert_eq!(done["result"]["updated"], 1);
    assert_eq!(app.get(&format!("/contacts/{}", ids["dee@other.test"]), key).await.0, Status::NotFound);

    // Refused, and nothing queued: a mode we do not know, ids with query, query's fields without it,
    // too many exclusions, a search too long.
    let too_many: Vec<String> = (0..5001).map(|n| format!("{n:036}")).collect();
    for bad in [
        json!({ "mode": "all" }),
        json!({ "mode": "query", "contactIds": [ids["ada@acme.test"]] }),
        json!({ "contactIds": [ids["ada@acme.test"]], "excludeIds": [] }),
        json!({ "mode": "query", "excludeIds": too_many }),
        json!({ "mode": "query", "filter": { "search": "x".repeat(256) } }),
        json!({ "mode": "query", "filter": { "plan": "pro" } }),
    ] {
        let (status, refused) = app.post("/contacts/bulk-delete", key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    }
    let (_, left) = app.get("/contacts", key).await;
    assert_eq!(left["total"], 3);
}

#[rocket::async_test]
async fn a_query_mode_job_stopped_between_batches_resumes_and_does_nothing_twice() {
    use tidings::core::bulk;
    use tidings::db::contact_jobs;
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    for n in 0..7 {
        app.post("/contacts", key, json!({ "email": format!("c{n}@acme.test") })).await;
    }
    let (_, queued) = app.post("/contacts/bulk-unsubscribe", key, json!({ "mode": "query" })).await;
    let id = queued["jobId"].as_str().unwrap().to_string();
    let exclude = std::collections::HashSet::new();
    // Batches of three rows, each in its own transaction, the job read afresh each time as a
    // restarted worker reads it: the first batch, a "crash", then the rest.
    let batch = |id: String, exclude: std::collections::HashSet<String>| {
        app.state.db.write(move |tx| {
            let job = contact_jobs::by_id(tx, &id)?.unwrap();
            let narrowing = tidings::core::contact_filters::Narrowing::default();
            let filters = bulk::QueryFilters {
                search: None,
                subscribed: None,
                narrowing: &narrowing,
                exclude: &exclude,
            };
            bulk::run_query_batch(tx, &job, &filters, 3, tidings::clock::now_ms())
        })
    };
    assert!(!batch(id.clone(), exclude.clone()).await.unwrap());
    let (_, midway) = app.get(&format!("/contacts/bulk/{id}"), key).await;
    assert_eq!(
        (midway["state"].clone(), midway["processed"].clone()),
        (json!("active"), json!(3)),
        "{midway}"
    );
    while !batch(id.clone(), exclude.clone()).await.unwrap() {}
    let (_, done) = app.get(&format!("/contacts/bulk/{id}"), key).await;
    assert_eq!(done["result"]["processed"], 7, "{done}");
    assert_eq!(done["result"]["updated"], 7);
    let unsubscribed = app.store().count("events", &[("name", "contact.unsubscribed".into())]);
    assert_eq!(unsubscribed, 7, "one event per contact, none twice");
}

#[rocket::async_test]
async fn sends_take_inline_images_with_their_content_id() {
    use base64::Engine;
    use mail_parser::MimeHeaders;
    let room = crate::send::Mailroom::new().await;
    let png = base64::engine::general_purpose::STANDARD.encode(crate::uploads::PNG);
    // ActionSchemas.send, with an inline image and an ordinary attachment.
    let body = json!({ "to": "ada@example.com", "from": "hello@example.test", "subject": "Your logo",
        "body": "<p>Here it is:</p><img src=\"cid:logo@acme\" alt=\"Acme\">",
        "attachments": [
            { "filename": "logo.png", "content": png, "contentType": "image/png", "contentId": "logo@acme", "disposition": "inline" },
            { "filename": "terms.txt", "content": "VGVybXM=", "contentType": "text/plain", "disposition": "attachment" },
        ] });
    let (status, sent) = room.send(body).await;
    assert_eq!(status, Status::Ok, "{sent}");
    let raw = room.deliver(1).await.remove(0).data;
    let message = mail_parser::MessageParser::default().parse(&raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("multipart/mixed") && text.contains("multipart/related"), "{text}");
    assert!(room.dkim_passes(&raw).await);
    let parts: Vec<_> = message.attachments().collect();
    assert_eq!(parts.len(), 2);
    let logo = parts.iter().find(|p| p.attachment_name() == Some("logo.png")).unwrap();
    assert_eq!(logo.content_id(), Some("logo@acme"));
    assert!(logo.content_disposition().is_some_and(|d| d.ctype() == "inline"));
    assert_eq!(logo.contents(), crate::uploads::PNG);
    let terms = parts.iter().find(|p| p.attachment_name() == Some("terms.txt")).unwrap();
    assert!(terms.content_disposition().is_some_and(|d| d.ctype() == "attachment"));
    assert_eq!(terms.contents(), b"Terms");
    // Plunk's rule: an inline part needs its contentId.
    let missing = json!({ "to": "ada@example.com", "from": "hello@example.test", "subject": "x", "body": "<p>x</p>",
        "attachments": [{ "filename": "logo.png", "content": png, "contentType": "image/png", "disposition": "inline" }] });
    let (status, refused) = room.send(missing).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["field"], "attachments[0].contentId");
}

#[rocket::async_test]
async fn event_and_activity_lists_take_plunks_parameters() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    for (email, event) in
        [("ada@example.com", "signup"), ("ada@example.com", "upgrade"), ("bob@example.com", "signup")]
    {
        assert_eq!(
            app.post("/v1/track", &keys.public_key, json!({ "email": email, "event": event })).await.0,
            Status::Ok
        );
    }
    let (_, ada) = app.post("/contacts/lookup", key, json!({ "emails": ["ada@example.com"] })).await;
    let ada = ada["data"][0]["id"].as_str().unwrap().to_string();
    let today = &tidings::clock::iso(tidings::clock::now_ms())[..10];
    let names = |page: &Value| -> Vec<String> {
        page["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
    };
    // Events.ts: ?eventName, startDate, endDate.
    let (status, page) =
        app.get(&format!("/events?eventName=signup&startDate={today}&endDate={today}"), key).await;
    assert_eq!(status, Status::Ok, "{page}");
    assert_eq!((names(&page), page["total"].clone()), (vec!["signup".to_string(); 2], json!(2)));
    let (_, none) = app.get("/events?eventName=signup&endDate=2020-01-01", key).await;
    assert_eq!(none["total"], 0);
    // Activity: ?contactId, startDate, endDate.
    let (status, page) =
        app.get(&format!("/activity?contactId={ada}&startDate={today}&endDate={today}"), key).await;
    assert_eq!(status, Status::Ok, "{page}");
    assert_eq!(names(&page), ["upgrade", "signup"]);
    assert_eq!(page["total"], 2);
}
