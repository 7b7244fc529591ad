//! Endpoints the dashboard needs beyond the resources themselves: the template preview (the
//! real renderer, for a chosen contact), a contact's emails, the import preview and the live
//! count of a condition.

use rocket::http::{ContentType, Status};
use serde_json::json;

use crate::common::{TestApp, assert_envelope};
use crate::send::Mailroom;

#[rocket::async_test]
async fn the_preview_renders_what_delivery_sends_for_the_chosen_contact() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (_, contact) = room
        .app
        .post(
            "/contacts",
            key,
            json!({ "email": "ada@example.test", "data": { "name": "<Ada>", "plan": "pro" } }),
        )
        .await;
    let id = contact["id"].as_str().unwrap();
    let template = json!({
        "subject": "Hi {{ name ?? \"there\" }}",
        "body": "<p>{{ name }} on {{ plan }}{% if plan == \"pro\" %}!{% endif %}</p><a href=\"{{ unsubscribeUrl }}\">u</a>",
    });
    let mut request = template.clone();
    request["contactId"] = json!(id);
    let (status, shown) = room.app.post("/templates/preview", key, request).await;
    assert_eq!(status, Status::Ok, "{shown}");
    assert_eq!(shown["subject"], json!("Hi <Ada>"), "subjects are not escaped");
    let html = shown["html"].as_str().unwrap();
    assert!(html.starts_with("<p>&lt;Ada&gt; on pro!</p>"), "bodies escape variables: {html}");
    assert!(html.contains("/unsubscribe/"), "the contact's signed links: {html}");
    assert!(shown["text"].as_str().unwrap().contains("<Ada> on pro!"));
    assert_eq!(shown["contact"], json!({ "id": id, "email": "ada@example.test" }));

    // The same body sent to the same contact is delivered as previewed.
    let mut send = template.clone();
    send["to"] = json!("ada@example.test");
    send["from"] = json!("news@example.test");
    let emails = room.send_ok(send).await;
    room.deliver(1).await;
    let delivered = room.email(&emails[0]);
    assert_eq!(delivered.subject, "Hi <Ada>");

    // No contact: one-off data only; by address: the contact's fields.
    let mut request = template.clone();
    request["data"] = json!({ "name": "Grace" });
    let (_, shown) = room.app.post("/templates/preview", key, request).await;
    assert_eq!((shown["subject"].clone(), shown["contact"].clone()), (json!("Hi Grace"), json!(null)));
    let mut request = template.clone();
    request["email"] = json!("ADA@example.test");
    let (_, shown) = room.app.post("/templates/preview", key, request).await;
    assert_eq!(shown["contact"]["id"], json!(id));

    // Errors name the field and the line.
    let (status, error) = room
        .app
        .post("/templates/preview", key, json!({ "subject": "s", "body": "<p>\n{% if x %}\n</p>" }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    let item = &error["error"]["errors"][0];
    assert_eq!((item["field"].clone(), item["code"].clone()), (json!("body"), json!("invalid_template")));
    assert!(item["received"]["line"].is_number(), "{error}");
    let (status, error) = room
        .app
        .post("/templates/preview", key, json!({ "subject": "s", "body": "{{ 1 | divided_by: 0 }}" }))
        .await;
    assert_eq!(
        (status, error["error"]["errors"][0]["code"].clone()),
        (Status::UnprocessableEntity, json!("render_failed"))
    );
    let (status, _) = room
        .app
        .post("/templates/preview", key, json!({ "subject": "s", "body": "b", "contactId": "nope" }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
}

#[rocket::async_test]
async fn the_preview_never_reaches_another_projects_contact() {
    let app = TestApp::new().await;
    let (_, mine) = app.user_with_project("me@example.com").await;
    let (_, theirs) = app.user_with_project("them@example.com").await;
    let (_, contact) = app
        .post(
            "/contacts",
            &theirs.secret_key,
            json!({ "email": "x@example.com", "data": { "secret": "s3" } }),
        )
        .await;
    let body = json!({ "subject": "s", "body": "{{ secret }}", "contactId": contact["id"] });
    let (status, _) = app.post("/templates/preview", &mine.secret_key, body).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let body = json!({ "subject": "s", "body": "[{{ secret }}]", "email": "x@example.com" });
    let (status, shown) = app.post("/templates/preview", &mine.secret_key, body).await;
    assert_eq!(
        (status, shown["html"].clone(), shown["contact"].clone()),
        (Status::Ok, json!("[]"), json!(null))
    );
}

#[rocket::async_test]
async fn a_contacts_emails_are_listed_newest_first_in_pages() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    for n in 0..3 {
        room.send_ok(json!({ "to": "ada@example.test", "from": "news@example.test", "subject": format!("Mail {n}"), "body": "<p>b</p>" }))
            .await;
    }
    room.send_ok(json!({ "to": "bob@example.test", "from": "news@example.test", "subject": "Other", "body": "<p>b</p>" }))
        .await;
    room.deliver(4).await;
    let (_, found) = room.app.post("/contacts/lookup", key, json!({ "emails": ["ada@example.test"] })).await;
    let id = found["data"][0]["id"].as_str().unwrap().to_string();
    let (status, page) = room.app.get(&format!("/contacts/{id}/emails?limit=2"), key).await;
    assert_eq!(status, Status::Ok, "{page}");
    assert_eq!((page["total"].clone(), page["hasMore"].clone()), (json!(3), json!(true)));
    let subjects: Vec<_> = page["data"].as_array().unwrap().iter().map(|e| e["subject"].clone()).collect();
    assert_eq!(subjects, [json!("Mail 2"), json!("Mail 1")]);
    assert_eq!(page["data"][0]["status"], json!("SENT"));
    assert!(page["data"][0].get("body").is_none(), "bodies are not listed");
    let cursor = page["cursor"].as_str().unwrap();
    let (_, rest) = room.app.get(&format!("/contacts/{id}/emails?limit=2&cursor={cursor}"), key).await;
    assert_eq!(
        (rest["data"][0]["subject"].clone(), rest["hasMore"].clone()),
        (json!("Mail 0"), json!(false))
    );

    // Another project's key, or a session of someone outside, sees nothing.
    let (outsider, other) = room.app.user_with_project("other@example.com").await;
    let (status, _) = room.app.get(&format!("/contacts/{id}/emails"), &other.secret_key).await;
    assert_eq!(status, Status::NotFound);
    let res = room
        .app
        .client
        .get(format!("/contacts/{id}/emails"))
        .cookie(outsider)
        .header(rocket::http::Header::new("X-Project-Id", room.keys.id.clone()))
        .header(ContentType::JSON)
        .dispatch()
        .await;
    assert_envelope(res, 404, "NOT_FOUND").await;
    let (status, bad) = room.app.get(&format!("/contacts/{id}/emails?cursor=garbage"), key).await;
    assert_eq!(status, Status::BadRequest, "{bad}");
}

#[rocket::async_test]
async fn an_import_preview_shows_the_columns_and_imports_nothing() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("me@example.com").await;
    let csv = b"email,plan,age,subscribed\nada@example.com,pro,36,no\nbob@example.com,free,,\n";
    let (status, shown) = app.upload_csv_to("/contacts/import/preview", &keys.secret_key, csv).await;
    assert_eq!(status, Status::Ok, "{shown}");
    assert_eq!(shown["totalRows"], json!(2));
    assert_eq!(shown["columns"][1], json!({ "name": "plan", "becomes": "data.plan" }));
    assert_eq!(shown["columns"][3], json!({ "name": "subscribed", "becomes": null }));
    assert_eq!(shown["rows"][0], json!(["ada@example.com", "pro", 36, null]));
    let (_, list) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(list["total"], json!(0), "nothing imported");
    let (status, error) =
        app.upload_csv_to("/contacts/import/preview", &keys.secret_key, b"name\nada\n").await;
    assert_eq!(
        (status, error["error"]["errors"][0]["field"].clone()),
        (Status::UnprocessableEntity, json!("file"))
    );
}

#[rocket::async_test]
async fn a_condition_is_counted_without_saving_a_segment() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("me@example.com").await;
    let (_, other) = app.user_with_project("other@example.com").await;
    for (email, plan) in [("a@x.io", "pro"), ("b@x.io", "pro"), ("c@x.io", "free")] {
        app.post("/contacts", &keys.secret_key, json!({ "email": email, "data": { "plan": plan } })).await;
    }
    app.post("/contacts", &other.secret_key, json!({ "email": "d@x.io", "data": { "plan": "pro" } })).await;
    let condition = json!({ "logic": "OR", "groups": [
        { "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] },
        { "filters": [{ "field": "email", "operator": "contains", "value": "c@" }] },
    ] });
    let (status, counted) =
        app.post("/segments/count", &keys.secret_key, json!({ "condition": condition })).await;
    assert_eq!((status, counted), (Status::Ok, json!({ "count": 3 })));
    let (_, segments) = app.get("/segments", &keys.secret_key).await;
    assert_eq!(segments, json!([]), "nothing saved");
    let bad = json!({ "condition": { "groups": [{ "filters": [{ "field": "data.plan", "operator": "resembles", "value": 1 }] }] } });
    let (status, error) = app.post("/segments/count", &keys.secret_key, bad).await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(error["error"]["errors"][0]["field"], json!("condition.groups[0].filters[0].operator"));
}

#[rocket::async_test]
async fn the_dashboard_endpoints_take_no_public_key_and_no_foreign_session() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("me@example.com").await;
    let (_, contact) = app.post("/contacts", &keys.secret_key, json!({ "email": "a@x.io" })).await;
    let emails = format!("/contacts/{}/emails", contact["id"].as_str().unwrap());
    let stranger = app.signup("stranger@example.com").await;
    let calls = [
        (rocket::http::Method::Post, "/templates/preview", Some(json!({ "subject": "s", "body": "b" }))),
        (rocket::http::Method::Post, "/segments/count", Some(json!({ "condition": {} }))),
        (rocket::http::Method::Get, emails.as_str(), None),
    ];
    for (method, path, body) in calls {
        let (status, error) = app.call(method, path, &keys.public_key, body.clone()).await;
        assert_eq!(
            (status, error["error"]["code"].clone()),
            (Status::Unauthorized, json!("INVALID_API_KEY")),
            "{path}"
        );
        let mut req = app
            .client
            .req(method, path.to_string())
            .cookie(stranger.clone())
            .header(rocket::http::Header::new("X-Project-Id", keys.id.clone()))
            .header(ContentType::JSON);
        if let Some(body) = body {
            req = req.body(body.to_string());
        }
        assert_envelope(req.dispatch().await, 404, "NOT_FOUND").await;
    }
    let (status, _) =
        app.upload_csv_to("/contacts/import/preview", &keys.public_key, b"email\na@x.io\n").await;
    assert_eq!(status, Status::Unauthorized);
}
