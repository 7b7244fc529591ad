//! Templates: the page list, create/read/change/delete, duplicate, usage, and their rules.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

fn template(name: &str) -> Value {
    json!({ "name": name, "subject": "Hello {{ name ?? \"there\" }}", "body": "<p>Hi</p>", "from": "news@example.test" })
}

#[rocket::async_test]
async fn create_read_change_duplicate_delete() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (status, created) = room
        .app
        .post("/templates", key, json!({ "name": "Welcome", "description": "first mail", "subject": "Welcome {{ name }}",
            "body": "<p>Hi</p>", "from": "News@Example.test", "fromName": "News", "replyTo": "help@example.test" }))
        .await;
    assert_eq!(status, Status::Ok, "{created}");
    assert_eq!(created["type"], json!("MARKETING"), "the default type");
    assert_eq!(created["from"], json!("news@example.test"));
    assert_eq!(created["projectId"], json!(room.keys.id));
    for field in
        ["id", "name", "description", "subject", "body", "fromName", "replyTo", "createdAt", "updatedAt"]
    {
        assert!(!created[field].is_null(), "{field}");
    }
    let id = created["id"].as_str().unwrap();
    let (_, read) = room.app.get(&format!("/templates/{id}"), key).await;
    assert_eq!(read, created);

    let (status, changed) = room
        .app
        .call(
            Method::Patch,
            &format!("/templates/{id}"),
            key,
            Some(json!({ "subject": "New subject", "type": "TRANSACTIONAL" })),
        )
        .await;
    assert_eq!(status, Status::Ok);
    assert_eq!(
        (changed["subject"].clone(), changed["type"].clone(), changed["name"].clone()),
        (json!("New subject"), json!("TRANSACTIONAL"), json!("Welcome"))
    );

    let (status, copy) = room.app.post(&format!("/templates/{id}/duplicate"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    assert_ne!(copy["id"], created["id"]);
    assert_eq!(
        (copy["name"].clone(), copy["subject"].clone()),
        (json!("Welcome (copy)"), json!("New subject"))
    );

    let (status, usage) = room.app.get(&format!("/templates/{id}/usage"), key).await;
    assert_eq!((status, usage["campaigns"].clone()), (Status::Ok, json!([])));

    // A domain that templates send from stays.
    let (_, domains) = room.app.get(&format!("/domains/project/{}", room.keys.id), key).await;
    let domain = domains[0]["id"].as_str().unwrap();
    assert_eq!(
        room.app.call(Method::Delete, &format!("/domains/{domain}"), key, None).await.0,
        Status::Conflict
    );

    assert_eq!(
        room.app.call(Method::Delete, &format!("/templates/{id}"), key, None).await.0,
        Status::NoContent
    );
    assert_eq!(room.app.get(&format!("/templates/{id}"), key).await.0, Status::NotFound);
    let (_, other) = room.app.user_with_project("other@example.com").await;
    let copy_id = copy["id"].as_str().unwrap();
    assert_eq!(
        room.app.get(&format!("/templates/{copy_id}"), &other.secret_key).await.0,
        Status::NotFound,
        "another project's template"
    );
}

#[rocket::async_test]
async fn the_rules_of_a_template() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let mut missing_from = template("x");
    missing_from.as_object_mut().unwrap().remove("from");
    let (status, body) = room.app.post("/templates", key, missing_from).await;
    assert_eq!((status, body), (Status::BadRequest, json!({ "error": "from is required" })));

    let mut unverified = template("x");
    unverified["from"] = json!("a@unverified.test");
    let (status, body) = room.app.post("/templates", key, unverified).await;
    assert_eq!(status, Status::Forbidden);
    assert_eq!(body["error"]["details"]["reason"], json!("DOMAIN_NOT_VERIFIED"));

    let mut broken = template("x");
    broken["body"] = json!("<p>line one</p>\n<p>{% if x %}never closed</p>\n");
    let (status, body) = room.app.post("/templates", key, broken).await;
    assert_eq!(status, Status::UnprocessableEntity, "{body}");
    assert_eq!(body["error"]["errors"][0]["field"], json!("body"));
    assert_eq!(body["error"]["errors"][0]["code"], json!("invalid_template"));

    let mut bad_line = template("x");
    bad_line["body"] = json!("ok\nok\n{% nosuchtag %}\n");
    let (_, body) = room.app.post("/templates", key, bad_line).await;
    assert!(body["error"]["errors"][0]["message"].as_str().unwrap().contains("line 3"), "{body}");

    for (patch, field) in [
        (json!({ "type": "NEWSLETTER" }), "type"),
        (json!({ "subject": "two\nlines" }), "subject"),
        (json!({ "replyTo": "nope" }), "replyTo"),
        (json!({ "name": "" }), "name"),
        (json!({ "colour": "red" }), "colour"),
    ] {
        let mut body = template("x");
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (status, response) = room.app.post("/templates", key, body).await;
        assert_eq!(status, Status::UnprocessableEntity, "{patch}");
        assert_eq!(response["error"]["errors"][0]["field"], json!(field), "{patch}: {response}");
    }
    assert_eq!(room.app.store().count("templates", &[]), 0);
}

#[rocket::async_test]
async fn the_page_list() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    for (n, kind) in ["MARKETING", "TRANSACTIONAL", "MARKETING", "HEADLESS", "MARKETING"].iter().enumerate() {
        let mut body = template(&format!("T{n}"));
        body["type"] = json!(kind);
        if n == 2 {
            body["description"] = json!("the spring sale");
        }
        room.app.post("/templates", key, body).await;
    }
    let (_, first) = room.app.get("/templates?pageSize=2", key).await;
    assert_eq!(
        (
            first["total"].clone(),
            first["page"].clone(),
            first["pageSize"].clone(),
            first["totalPages"].clone()
        ),
        (json!(5), json!(1), json!(2), json!(3))
    );
    assert_eq!(first["data"][0]["name"], json!("T4"), "newest first");
    let (_, last) = room.app.get("/templates?pageSize=2&page=3", key).await;
    assert_eq!(last["data"].as_array().unwrap().len(), 1);
    let (_, by_name) = room.app.get("/templates?sort=name&dir=asc", key).await;
    assert_eq!(by_name["data"][0]["name"], json!("T0"));
    let (_, marketing) = room.app.get("/templates?type=MARKETING", key).await;
    assert_eq!(marketing["total"], json!(3));
    let (_, found) = room.app.get("/templates?search=SPRING", key).await;
    assert_eq!((found["total"].clone(), found["data"][0]["name"].clone()), (json!(1), json!("T2")));
    for bad in ["page=0", "pageSize=0", "page=x", "type=NEWSLETTER"] {
        assert_eq!(room.app.get(&format!("/templates?{bad}"), key).await.0, Status::BadRequest, "{bad}");
    }
}

/// Found by Schemathesis: `page=9223372036854775807` overflowed the offset (a 500). Any page is
/// a fair question; one far past the end is empty.
#[rocket::async_test]
async fn a_page_far_past_the_end_is_empty_not_an_error() {
    let app = crate::common::TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let far = "page=9223372036854775807&pageSize=100";
    for list in ["/templates", "/campaigns", "/workflows"] {
        let (status, body) = app.get(&format!("{list}?{far}"), &keys.secret_key).await;
        assert_eq!(status, rocket::http::Status::Ok, "{list}: {body}");
        assert_eq!(body["data"], serde_json::json!([]), "{list}");
        assert_eq!(body["page"], serde_json::json!(i64::MAX), "{list}");
    }
}
