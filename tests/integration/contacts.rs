//! Contacts: upsert, read, change, delete, list, lookup, and the custom-field rules.

use std::collections::HashSet;

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::{Keys, TestApp};

async fn app_with_project() -> (TestApp, Keys) {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    (app, keys)
}

async fn create(app: &TestApp, keys: &Keys, body: Value) -> Value {
    let (status, contact) = app.post("/contacts", &keys.secret_key, body.clone()).await;
    assert_eq!(status, Status::Ok, "{body}: {contact}");
    contact
}

fn events(app: &TestApp, contact: &str) -> Vec<String> {
    tidings::db::events::names_for_contact(&app.state.db.conn().unwrap(), contact).unwrap()
}

fn contact_rows(app: &TestApp) -> i64 {
    app.store().count("contacts", &[])
}

#[rocket::async_test]
async fn post_upserts_by_email_case_insensitively() {
    let (app, keys) = app_with_project().await;
    let first =
        create(&app, &keys, json!({ "email": " Ada@Example.COM ", "data": { "plan": "free" } })).await;
    assert_eq!(first["email"], json!("ada@example.com"));
    assert_eq!(first["subscribed"], json!(true), "new contacts default to subscribed");
    assert_eq!(first["_meta"], json!({ "isNew": true, "isUpdate": false }));
    for key in ["id", "snoozedUntil", "data", "createdAt", "updatedAt"] {
        assert!(first.get(key).is_some(), "{key} in {first}");
    }

    let second = create(&app, &keys, json!({ "email": "ADA@example.com", "data": { "age": 36 } })).await;
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["_meta"], json!({ "isNew": false, "isUpdate": true }));
    assert_eq!(second["data"], json!({ "plan": "free", "age": 36 }));
    assert_eq!(contact_rows(&app), 1);

    let unsubscribed = create(&app, &keys, json!({ "email": "new@example.com", "subscribed": false })).await;
    assert_eq!(unsubscribed["subscribed"], json!(false));
}

#[rocket::async_test]
async fn post_rejects_bad_input_and_stores_nothing() {
    let (app, keys) = app_with_project().await;
    let (status, body) = app.post("/contacts", &keys.secret_key, json!({ "data": {} })).await;
    assert_eq!((status, body), (Status::BadRequest, json!({ "error": "email is required" })));

    let (status, body) = app.post("/contacts", &keys.secret_key, json!({ "email": "not-an-email" })).await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(body["error"]["errors"][0]["code"], json!("invalid_string"));
    assert_eq!(body["error"]["errors"][0]["field"], json!("email"));

    for (bad, field) in [
        (json!({ "email": "a@example.com", "subscribed": "yes" }), "subscribed"),
        (json!({ "email": "a@example.com", "data": [1, 2] }), "data"),
        (json!({ "email": 42 }), "email"),
    ] {
        let (status, body) = app.post("/contacts", &keys.secret_key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}");
        assert_eq!(body["error"]["errors"][0]["field"], json!(field), "{bad}: {body}");
    }
    let (status, _) = app.call(Method::Post, "/contacts", &keys.secret_key, None).await;
    assert_eq!(status, Status::BadRequest);
    assert_eq!(contact_rows(&app), 0);
}

#[rocket::async_test]
async fn the_custom_field_rules_hold() {
    let (app, keys) = app_with_project().await;
    let contact = create(
        &app,
        &keys,
        json!({ "email": "a@example.com", "data": {
            "plan": "pro", "age": 30, "vip": true, "since": "2024-01-15", "name": "Ada",
            "profile": { "tier": "gold", "address": { "city": "Oslo" } }, "locale": "fr",
            "id": "x", "svc_id": 1, "svc_email": "x", "email": "y@example.com",
            "unsubscribeUrl": "u", "subscribeUrl": "s", "manageUrl": "m",
            "otp": { "value": "123456", "persistent": false }
        } }),
    )
    .await;
    assert_eq!(
        contact["data"],
        json!({ "plan": "pro", "age": 30, "vip": true, "since": "2024-01-15", "name": "Ada",
            "profile": { "tier": "gold", "address": { "city": "Oslo" } }, "locale": "fr" }),
        "reserved keys dropped, non-persistent values not stored, nested objects and locale kept"
    );
    let id = contact["id"].as_str().unwrap();

    // Patch semantics: null deletes, empty string ignored, other keys keep their values.
    let (status, patched) = app
        .call(
            Method::Patch,
            &format!("/contacts/{id}"),
            &keys.secret_key,
            Some(json!({ "data": { "plan": null, "name": "", "age": 31 } })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{patched}");
    assert_eq!(patched["data"]["age"], json!(31));
    assert_eq!(patched["data"]["name"], json!("Ada"));
    assert!(patched["data"].get("plan").is_none());

    // Types come from the first non-null value and never change; later values are not coerced.
    create(
        &app,
        &keys,
        json!({ "email": "b@example.com", "data": { "age": "thirty", "vip": "yes", "since": 5 } }),
    )
    .await;
    let (_, b) = app.get("/contacts?search=b%40example", &keys.secret_key).await;
    assert_eq!(b["data"][0]["data"], json!({ "age": "thirty", "vip": "yes", "since": 5 }));
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let types: Vec<(String, String)> = fields["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["field"].as_str().unwrap().to_string(), f["type"].as_str().unwrap().to_string()))
        .collect();
    for (field, kind) in [
        ("data.age", "number"),
        ("data.vip", "boolean"),
        ("data.since", "date"),
        ("data.profile.tier", "string"),
        ("data.profile.address.city", "string"),
        ("data.locale", "string"),
    ] {
        assert!(types.contains(&(field.to_string(), kind.to_string())), "{field}: {kind} in {types:?}");
    }
    assert!(!types.iter().any(|(f, _)| f == "data.otp" || f == "data.id" || f == "data.email"));
}

#[rocket::async_test]
async fn get_patch_and_delete_a_contact() {
    let (app, keys) = app_with_project().await;
    let a = create(&app, &keys, json!({ "email": "a@example.com" })).await;
    create(&app, &keys, json!({ "email": "b@example.com" })).await;
    let id = a["id"].as_str().unwrap();

    let (status, read) = app.get(&format!("/contacts/{id}"), &keys.secret_key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(read["email"], json!("a@example.com"));
    assert!(read.get("_meta").is_none());

    let path = format!("/contacts/{id}");
    let (status, body) =
        app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "email": "B@example.com" }))).await;
    assert_eq!(status, Status::Conflict, "{body}");
    assert_eq!(body["error"]["code"], json!("CONFLICT"));

    let (status, changed) =
        app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "email": "C@Example.com" }))).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(changed["email"], json!("c@example.com"));
    let (_, found) = app.get("/contacts?search=c%40example.com", &keys.secret_key).await;
    assert_eq!(found["total"], json!(1), "the search index follows email changes");

    let (status, body) =
        app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "subscribe": false }))).await;
    assert_eq!(status, Status::UnprocessableEntity, "unknown fields are refused: {body}");

    let (status, body) = app.call(Method::Delete, &path, &keys.secret_key, None).await;
    assert_eq!((status, body), (Status::NoContent, Value::Null));
    let (status, _) = app.get(&path, &keys.secret_key).await;
    assert_eq!(status, Status::NotFound);
    let (status, _) = app.call(Method::Delete, &path, &keys.secret_key, None).await;
    assert_eq!(status, Status::NotFound);
}

#[rocket::async_test]
async fn subscription_flips_emit_contact_events() {
    let (app, keys) = app_with_project().await;
    let contact = create(&app, &keys, json!({ "email": "a@example.com" })).await;
    let id = contact["id"].as_str().unwrap();
    let path = format!("/contacts/{id}");
    app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "subscribed": false }))).await;
    app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "subscribed": false }))).await;
    app.call(Method::Patch, &path, &keys.secret_key, Some(json!({ "subscribed": true }))).await;
    create(&app, &keys, json!({ "email": "a@example.com", "subscribed": false })).await;
    assert_eq!(events(&app, id), ["contact.unsubscribed", "contact.subscribed", "contact.unsubscribed"]);
}

#[rocket::async_test]
async fn list_pages_with_a_cursor_and_counts_on_the_first_page() {
    let (app, keys) = app_with_project().await;
    for n in 0..25 {
        create(&app, &keys, json!({ "email": format!("user{n:02}@example.com"), "subscribed": n % 5 != 0 }))
            .await;
    }
    let (_, first) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(first["data"].as_array().unwrap().len(), 20, "default limit 20");
    assert_eq!((first["total"].clone(), first["hasMore"].clone()), (json!(25), json!(true)));
    assert_eq!(first["data"][0]["email"], json!("user24@example.com"), "newest first by default");
    let cursor = first["cursor"].as_str().unwrap();
    let (_, second) = app.get(&format!("/contacts?cursor={cursor}"), &keys.secret_key).await;
    assert_eq!(second["data"].as_array().unwrap().len(), 5);
    assert_eq!(
        (second["total"].clone(), second["hasMore"].clone(), second["cursor"].clone()),
        (json!(0), json!(false), Value::Null)
    );

    let (_, clamped) = app.get("/contacts?limit=1000", &keys.secret_key).await;
    assert_eq!(clamped["data"].as_array().unwrap().len(), 25, "limit clamped to 100");

    let (_, by_email) = app.get("/contacts?sort=email&dir=asc&limit=3", &keys.secret_key).await;
    let emails: Vec<&str> =
        by_email["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap()).collect();
    assert_eq!(emails, ["user00@example.com", "user01@example.com", "user02@example.com"]);
    let (_, fallback) = app.get("/contacts?sort=shoe&dir=sideways&limit=1", &keys.secret_key).await;
    assert_eq!(
        fallback["data"][0]["email"],
        json!("user24@example.com"),
        "unrecognised sort and dir fall back"
    );

    let (_, subscribed) = app.get("/contacts?subscribed=false&limit=100", &keys.secret_key).await;
    assert_eq!(subscribed["total"], json!(5));
    assert!(subscribed["data"].as_array().unwrap().iter().all(|c| c["subscribed"] == json!(false)));
    let (_, subscribed) = app.get("/contacts?subscribed=true", &keys.secret_key).await;
    assert_eq!(subscribed["total"], json!(20));

    let (_, search) = app.get("/contacts?search=USER1", &keys.secret_key).await;
    assert_eq!(search["total"], json!(10), "case-insensitive substring");
    let (_, short) = app.get("/contacts?search=r0", &keys.secret_key).await;
    assert_eq!(short["total"], json!(10), "short searches work without the trigram index");
    let (_, literal) = app.get("/contacts?search=user_", &keys.secret_key).await;
    assert_eq!(literal["total"], json!(0), "LIKE wildcards are literal");
}

#[rocket::async_test]
async fn bad_list_parameters_are_400() {
    let (app, keys) = app_with_project().await;
    create(&app, &keys, json!({ "email": "a@example.com" })).await;
    create(&app, &keys, json!({ "email": "b@example.com" })).await;
    for query in
        ["limit=0", "limit=-1", "limit=many", "subscribed=maybe", "cursor=not-a-cursor", "cursor=e30"]
    {
        let (status, body) = app.get(&format!("/contacts?{query}"), &keys.secret_key).await;
        assert_eq!(status, Status::BadRequest, "{query}: {body}");
        assert_eq!(body["error"]["code"], json!("BAD_REQUEST"));
    }
    let (_, page) = app.get("/contacts?limit=1", &keys.secret_key).await;
    let cursor = page["cursor"].as_str().unwrap();
    let (status, _) =
        app.get(&format!("/contacts?limit=1&sort=email&cursor={cursor}"), &keys.secret_key).await;
    assert_eq!(status, Status::BadRequest, "a cursor of another sort");
}

/// A parameter given twice would be read as absent (a filter falling away unseen): it is a
/// 400 naming it, under a key and under a session alike; once is fine.
#[rocket::async_test]
async fn a_parameter_given_twice_is_400_not_ignored() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    create(&app, &keys, json!({ "email": "a@example.com", "subscribed": true })).await;
    let (status, body) = app.get("/contacts?subscribed=false&subscribed=true", &keys.secret_key).await;
    assert_eq!(status, Status::BadRequest, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("\"subscribed\""), "{body}");
    let (status, _) = app.get("/contacts?limit=5&subscribed=false", &keys.secret_key).await;
    assert_eq!(status, Status::Ok);
    let res = app
        .client
        .get("/contacts?limit=1&limit=100")
        .cookie(session.clone())
        .header(rocket::http::Header::new("X-Project-Id", keys.id.clone()))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::BadRequest);
    let (status, _, _) =
        app.as_user(rocket::http::Method::Get, "/users/@me/projects?x=1&x=2", Some(&session), None).await;
    assert_eq!(status, Status::BadRequest);
}

#[rocket::async_test]
async fn pages_neither_skip_nor_repeat_rows_added_in_between() {
    let (app, keys) = app_with_project().await;
    for n in 0..30 {
        create(&app, &keys, json!({ "email": format!("old{n}@example.com") })).await;
    }
    for (sort, dir) in [("createdAt", "desc"), ("createdAt", "asc"), ("email", "asc"), ("email", "desc")] {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut round = 0;
        loop {
            let query = match &cursor {
                None => format!("/contacts?limit=7&sort={sort}&dir={dir}"),
                Some(c) => format!("/contacts?limit=7&sort={sort}&dir={dir}&cursor={c}"),
            };
            let (status, page) = app.get(&query, &keys.secret_key).await;
            assert_eq!(status, Status::Ok);
            seen.extend(
                page["data"].as_array().unwrap().iter().map(|c| c["email"].as_str().unwrap().to_string()),
            );
            // Someone adds contacts while we page.
            round += 1;
            create(&app, &keys, json!({ "email": format!("new-{sort}-{dir}-{round}@example.com") })).await;
            match page["cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
        let unique: HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{sort} {dir}: no row twice");
        for n in 0..30 {
            assert!(seen.contains(&format!("old{n}@example.com")), "{sort} {dir}: old{n} not skipped");
        }
    }
}

#[rocket::async_test]
async fn lookup_answers_which_emails_exist() {
    let (app, keys) = app_with_project().await;
    let a = create(&app, &keys, json!({ "email": "a@example.com" })).await;
    let (status, body) = app
        .post(
            "/contacts/lookup",
            &keys.secret_key,
            json!({ "emails": ["A@example.com", "nobody@example.com", "junk"] }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    assert_eq!(body["found"], json!(1));
    assert_eq!(
        body["data"][0],
        json!({ "email": "a@example.com", "exists": true, "id": a["id"], "subscribed": true })
    );
    assert_eq!(body["data"][1]["exists"], json!(false));
    assert_eq!(body["data"][2], json!({ "email": "junk", "exists": false, "id": null, "subscribed": null }));

    let emails: Vec<String> = (0..500).map(|n| format!("u{n}@example.com")).collect();
    let (status, _) = app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": emails })).await;
    assert_eq!(status, Status::Ok, "500 is allowed");
    let emails: Vec<String> = (0..501).map(|n| format!("u{n}@example.com")).collect();
    let (status, body) = app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": emails })).await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(body["error"]["errors"][0]["field"], json!("emails"));
}

#[rocket::async_test]
async fn projects_never_see_each_others_contacts() {
    let app = TestApp::new().await;
    let (session_a, a) = app.user_with_project("a@example.com").await;
    let (_, b) = app.user_with_project("b@example.com").await;
    let theirs = create(&app, &b, json!({ "email": "shared@example.com", "data": { "secret": "b" } })).await;
    let mine = create(&app, &a, json!({ "email": "shared@example.com", "data": { "plan": "a" } })).await;
    assert_ne!(mine["id"], theirs["id"], "the same email is a separate contact per project");
    assert_eq!(mine["_meta"]["isNew"], json!(true));

    let id = theirs["id"].as_str().unwrap();
    let path = format!("/contacts/{id}");
    assert_eq!(app.get(&path, &a.secret_key).await.0, Status::NotFound);
    assert_eq!(
        app.call(Method::Patch, &path, &a.secret_key, Some(json!({ "data": { "x": 1 } }))).await.0,
        Status::NotFound
    );
    assert_eq!(app.call(Method::Delete, &path, &a.secret_key, None).await.0, Status::NotFound);
    let (_, list) = app.get("/contacts", &a.secret_key).await;
    assert_eq!(list["total"], json!(1));
    assert_eq!(list["data"][0]["id"], mine["id"]);
    let (_, fields) = app.get("/contacts/fields", &a.secret_key).await;
    assert!(!fields.to_string().contains("data.secret"));
    let (_, lookup) =
        app.post("/contacts/lookup", &a.secret_key, json!({ "emails": ["shared@example.com"] })).await;
    assert_eq!(lookup["data"][0]["id"], mine["id"]);
    let (status, read) = app.get(&path, &b.secret_key).await;
    assert_eq!((status, read["data"].clone()), (Status::Ok, json!({ "secret": "b" })));

    // The dashboard reaches the same endpoints with its session and the project header.
    let res = app
        .client
        .get("/contacts")
        .cookie(session_a.clone())
        .header(rocket::http::Header::new("X-Project-Id", a.id.clone()))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let res = app
        .client
        .get("/contacts")
        .cookie(session_a)
        .header(rocket::http::Header::new("X-Project-Id", b.id.clone()))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::NotFound, "not a member of b");
}

#[rocket::async_test]
async fn deleting_a_field_touches_that_field_only() {
    // `_` and `%` in a field name are characters, not patterns.
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let data = json!({ "a_b": 1, "axb": { "c": 2 }, "a%": 3, "a_b2": 4 });
    let (status, _) =
        app.post("/contacts", &keys.secret_key, json!({ "email": "a@example.com", "data": data })).await;
    assert_eq!(status, Status::Ok);
    let (status, job) =
        app.call(rocket::http::Method::Delete, "/contacts/fields/data.a_b", &keys.secret_key, None).await;
    assert_eq!(status, Status::Accepted, "{job}");
    app.finish_job(&format!("/contacts/bulk/{}", job["jobId"].as_str().unwrap()), &keys.secret_key).await;
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let mut names: Vec<&str> = fields["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .filter(|f| f.starts_with("data."))
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["data.a%", "data.a_b2", "data.axb.c"]);
    let (_, contact) = app.get("/contacts?search=a%40example", &keys.secret_key).await;
    assert_eq!(contact["data"][0]["data"], json!({ "axb": { "c": 2 }, "a%": 3, "a_b2": 4 }));
}

/// Found by Schemathesis: a nested data key with a control character reached the catalogue,
/// and listing its values put it into a SQLite JSON path, which failed with a 500.
#[rocket::async_test]
async fn data_keys_no_path_can_name_are_kept_but_are_not_fields() {
    let (app, keys) = app_with_project().await;
    let odd = "a\u{0}b\u{1f}";
    let contact =
        create(&app, &keys, json!({ "email": "odd@example.com", "data": { "x": { odd: 1, "ok": 2 } } }))
            .await;
    assert_eq!(contact["data"]["x"][odd], json!(1), "the data is kept as sent");

    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let names: Vec<&str> =
        fields["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert!(
        names.contains(&"data.x.ok") && names.iter().all(|n| !n.chars().any(char::is_control)),
        "{names:?}"
    );

    let escaped = "data.x.a%00b%1F";
    for path in [format!("/contacts/fields/{escaped}/values"), format!("/contacts/fields/{escaped}/usage")] {
        let (status, body) = app.get(&path, &keys.secret_key).await;
        assert_eq!(status, Status::NotFound, "{path}: {body}");
    }
    let (status, body) = app.post(
        "/segments/count",
        &keys.secret_key,
        json!({ "condition": { "logic": "AND", "groups": [{ "filters": [{ "field": "data.x.a\u{0}b", "operator": "exists" }] }] } }),
    )
    .await;
    assert_eq!(status, Status::UnprocessableEntity, "{body}");
    assert!(body.to_string().contains("control characters"), "{body}");
}
