//! `/v1/track`, its dashboard alias, and the event queries.

use rocket::http::{ContentType, Header, Method, Status};
use serde_json::{Value, json};

use crate::common::{Keys, TestApp, body};

async fn app_with_project() -> (TestApp, Keys) {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    (app, keys)
}

/// `POST /v1/track` with the public key.
async fn track(app: &TestApp, keys: &Keys, body: Value) -> (Status, Value) {
    app.post("/v1/track", &keys.public_key, body).await
}

async fn track_ok(app: &TestApp, keys: &Keys, body: Value) -> Value {
    let (status, res) = track(app, keys, body.clone()).await;
    assert_eq!(status, Status::Ok, "{body}: {res}");
    res
}

fn names_for(app: &TestApp, contact: &str) -> Vec<String> {
    tidings::db::events::names_for_contact(&app.state.db.conn().unwrap(), contact).unwrap()
}

#[rocket::async_test]
async fn track_records_an_event_and_upserts_the_contact() {
    let (app, keys) = app_with_project().await;
    let res = track_ok(
        &app,
        &keys,
        json!({ "email": "Ada@Example.com", "event": "signup", "data": { "plan": "pro" } }),
    )
    .await;
    assert_eq!(res["success"], json!(true));
    let (contact, event) = (res["data"]["contact"].as_str().unwrap(), res["data"]["event"].as_str().unwrap());
    assert!(res["data"]["timestamp"].as_str().unwrap().ends_with('Z'));

    let (_, stored) = app.get(&format!("/contacts/{contact}"), &keys.secret_key).await;
    assert_eq!(stored["email"], json!("ada@example.com"));
    assert_eq!(stored["subscribed"], json!(true), "a contact made by track is subscribed");
    assert_eq!(stored["data"], json!({ "plan": "pro" }));
    assert_eq!(names_for(&app, contact), ["signup"], "a new contact emits no subscription event");

    // The event is stored before the reply: it is listed at once.
    let (_, list) = app.get("/events", &keys.secret_key).await;
    assert_eq!(list["data"][0]["id"], json!(event));
    assert_eq!(list["data"][0]["name"], json!("signup"));
    assert_eq!(list["data"][0]["contact"], json!({ "id": contact, "email": "ada@example.com" }));
    assert_eq!(list["data"][0]["data"], json!({ "plan": "pro" }));

    // Tracking the same event again makes another record.
    let again = track_ok(&app, &keys, json!({ "email": "ada@example.com", "event": "signup" })).await;
    assert_eq!(again["data"]["contact"], json!(contact));
    assert_ne!(again["data"]["event"], json!(event));
    assert_eq!(names_for(&app, contact), ["signup", "signup"]);
}

#[rocket::async_test]
async fn reserved_event_names_are_refused_and_store_nothing() {
    let (app, keys) = app_with_project().await;
    for name in [
        "email.sent",
        "email.opened",
        "email.clicked",
        "email.bounced",
        "email.anything",
        "Email.Sent",
        "contact.subscribed",
        "contact.unsubscribed",
        "segment.vip.entry",
        "segment.vip.exit",
        "segment.power-users.entry",
    ] {
        let (status, res) = track(&app, &keys, json!({ "email": "ada@example.com", "event": name })).await;
        assert_eq!(status, Status::UnprocessableEntity, "{name}");
        assert_eq!(res["error"]["code"], json!("VALIDATION_ERROR"));
        assert_eq!(res["error"]["errors"][0]["field"], json!("event"));
        assert_eq!(res["error"]["errors"][0]["code"], json!("reserved_event"), "{name}");
        assert_eq!(res["error"]["errors"][0]["received"], json!(name));
    }
    assert_eq!(app.store().count("contacts", &[]), 0, "a refused request upserts nothing");
    assert_eq!(app.store().count("events", &[]), 0);
    for name in ["signup", "emailed", "contact.created", "segment.entry", "order.completed"] {
        track_ok(&app, &keys, json!({ "email": "ada@example.com", "event": name })).await;
    }
}

#[rocket::async_test]
async fn bad_bodies_get_clear_errors_and_change_nothing() {
    let (app, keys) = app_with_project().await;
    track_ok(&app, &keys, json!({ "email": "ada@example.com", "event": "seed", "data": { "plan": "free" } }))
        .await;
    let cases = [
        (json!({ "event": "signup" }), 422, "email", "required"),
        (json!({ "email": "ada@example.com" }), 422, "event", "required"),
        (json!({ "email": "not-an-email", "event": "signup" }), 422, "email", "invalid_string"),
        (json!({ "email": "ada@example.com", "event": "" }), 422, "event", "invalid_string"),
        (json!({ "email": "ada@example.com", "event": "x".repeat(201) }), 422, "event", "invalid_string"),
        (json!({ "email": "ada@example.com", "event": 42 }), 422, "event", "invalid_type"),
        (json!({ "email": "ada@example.com", "event": "signup", "data": [1] }), 422, "data", "invalid_type"),
        (
            json!({ "email": "ada@example.com", "event": "signup", "subscribed": "yes" }),
            422,
            "subscribed",
            "invalid_type",
        ),
        (
            json!({ "email": "ada@example.com", "event": "signup", "extra": 1 }),
            422,
            "extra",
            "unrecognized_key",
        ),
    ];
    for (body, status, field, code) in cases {
        let (got, res) = track(&app, &keys, body.clone()).await;
        assert_eq!(got.code, status, "{body}: {res}");
        assert_eq!(res["error"]["errors"][0]["field"], json!(field), "{body}: {res}");
        assert_eq!(res["error"]["errors"][0]["code"], json!(code), "{body}: {res}");
    }
    let res = app
        .keyed(app.client.post("/v1/track"), &keys.public_key)
        .header(ContentType::JSON)
        .body("{not json")
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::BadRequest);
    assert_eq!(app.store().count("events", &[]), 1);
    assert_eq!(app.store().count("contacts", &[]), 1);
    let (_, list) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(list["data"][0]["data"], json!({ "plan": "free" }));
}

#[rocket::async_test]
async fn keys_and_sessions() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let body = json!({ "email": "ada@example.com", "event": "signup" });
    // /v1/track takes the public key only; every other endpoint the secret key only.
    let (status, res) = app.post("/v1/track", &keys.secret_key, body.clone()).await;
    assert_eq!((status, res["error"]["code"].clone()), (Status::Unauthorized, json!("INVALID_API_KEY")));
    assert_eq!(track(&app, &keys, body.clone()).await.0, Status::Ok);
    let (status, _) = app.post("/events/track", &keys.public_key, body.clone()).await;
    assert_eq!(status, Status::Unauthorized);
    let (status, res) = app.post("/events/track", &keys.secret_key, body.clone()).await;
    assert_eq!(status, Status::Ok, "{res}");
    assert_eq!(res["success"], json!(true));
    let res = app
        .client
        .post("/events/track")
        .cookie(session)
        .header(Header::new("X-Project-Id", keys.id.clone()))
        .header(ContentType::JSON)
        .body(body.to_string())
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let (_, list) = app.get("/events?name=signup", &keys.secret_key).await;
    assert_eq!(list["total"], json!(3));
    let (status, _) = app.get("/events", &keys.public_key).await;
    assert_eq!(status, Status::Unauthorized);
}

#[rocket::async_test]
async fn subscription_defaults_and_events() {
    let (app, keys) = app_with_project().await;
    let (_, created) = app
        .post("/contacts", &keys.secret_key, json!({ "email": "grace@example.com", "subscribed": false }))
        .await;
    let id = created["id"].as_str().unwrap().to_string();
    track_ok(&app, &keys, json!({ "email": "grace@example.com", "event": "visit" })).await;
    let (_, stored) = app.get(&format!("/contacts/{id}"), &keys.secret_key).await;
    assert_eq!(stored["subscribed"], json!(false), "an existing contact keeps its state");
    track_ok(&app, &keys, json!({ "email": "grace@example.com", "event": "visit", "subscribed": true }))
        .await;
    let (_, stored) = app.get(&format!("/contacts/{id}"), &keys.secret_key).await;
    assert_eq!(stored["subscribed"], json!(true));
    track_ok(&app, &keys, json!({ "email": "grace@example.com", "event": "visit", "subscribed": true }))
        .await;
    assert_eq!(
        names_for(&app, &id),
        ["visit", "contact.subscribed", "visit", "visit"],
        "a change emits, a repeat does not"
    );
    track_ok(&app, &keys, json!({ "email": "grace@example.com", "event": "leave", "subscribed": false }))
        .await;
    assert_eq!(names_for(&app, &id).last().unwrap(), "leave");
    assert!(names_for(&app, &id).contains(&"contact.unsubscribed".to_string()));
    let new =
        track_ok(&app, &keys, json!({ "email": "new@example.com", "event": "visit", "subscribed": false }))
            .await;
    let (_, stored) =
        app.get(&format!("/contacts/{}", new["data"]["contact"].as_str().unwrap()), &keys.secret_key).await;
    assert_eq!(stored["subscribed"], json!(false), "a new contact takes the given state");
}

#[rocket::async_test]
async fn non_persistent_data_goes_to_the_event_only() {
    let (app, keys) = app_with_project().await;
    track_ok(
        &app,
        &keys,
        json!({ "email": "ada@example.com", "event": "seed", "data": { "plan": "free", "city": "Oslo" } }),
    )
    .await;
    let res = track_ok(
        &app,
        &keys,
        json!({ "email": "ada@example.com", "event": "purchase", "data": {
            "plan": "pro",
            "city": null,
            "note": "",
            "amount": { "value": 49.5, "persistent": false },
            "profile": { "tier": "gold" },
            "email": "spoof@example.com",
            "unsubscribeUrl": "x",
        }}),
    )
    .await;
    let (_, contact) =
        app.get(&format!("/contacts/{}", res["data"]["contact"].as_str().unwrap()), &keys.secret_key).await;
    assert_eq!(
        contact["data"],
        json!({ "plan": "pro", "profile": { "tier": "gold" } }),
        "null deletes, reserved keys dropped"
    );
    assert_eq!(contact["email"], json!("ada@example.com"));
    let (_, list) = app.get("/events?name=purchase", &keys.secret_key).await;
    assert_eq!(
        list["data"][0]["data"],
        json!({ "plan": "pro", "amount": 49.5, "profile": { "tier": "gold" } })
    );
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let names: Vec<&str> =
        fields["fields"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert!(names.contains(&"data.profile.tier") && !names.contains(&"data.amount"), "{names:?}");
}

#[rocket::async_test]
async fn idempotent_track() {
    let (app, keys) = app_with_project().await;
    let request = json!({ "email": "ada@example.com", "event": "purchase" });
    let send = |key: &'static str| {
        app.keyed(app.client.post("/v1/track"), &keys.public_key)
            .header(Header::new("Idempotency-Key", key))
            .header(ContentType::JSON)
            .body(request.to_string())
            .dispatch()
    };
    assert_eq!(send("order-1").await.status(), Status::Ok);
    let replay = send("order-1").await;
    assert_eq!(replay.status(), Status::Conflict);
    let replay = body(replay).await;
    assert_eq!(replay["error"]["code"], json!("IDEMPOTENCY_KEY_REUSED"));
    assert_eq!(replay["error"]["details"]["originalRequest"], json!("POST /v1/track"));
    assert_eq!(app.store().count("events", &[]), 1, "the replay stored nothing");
    assert_eq!(send("order-2").await.status(), Status::Ok);
    assert_eq!(app.store().count("events", &[]), 2);
}

#[rocket::async_test]
async fn event_lists_names_and_stats() {
    let (app, keys) = app_with_project().await;
    for i in 0..5 {
        track_ok(&app, &keys, json!({ "email": format!("u{i}@example.com"), "event": "signup" })).await;
    }
    let ada =
        track_ok(&app, &keys, json!({ "email": "u0@example.com", "event": "purchase", "data": { "n": 1 } }))
            .await;
    track_ok(&app, &keys, json!({ "email": "u0@example.com", "event": "purchase", "data": { "n": 2 } }))
        .await;
    let contact = ada["data"]["contact"].as_str().unwrap().to_string();

    // Cursor pages, newest first, total on the first page only.
    let (_, first) = app.get("/events?limit=3", &keys.secret_key).await;
    assert_eq!((first["total"].clone(), first["hasMore"].clone()), (json!(7), json!(true)));
    assert_eq!(first["data"][0]["data"], json!({ "n": 2 }));
    let mut seen: Vec<String> =
        first["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().into()).collect();
    let mut cursor = first["cursor"].as_str().unwrap().to_string();
    loop {
        let (_, page) = app.get(&format!("/events?limit=3&cursor={cursor}"), &keys.secret_key).await;
        assert_eq!(page["total"], json!(0));
        seen.extend(page["data"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_string()));
        match page["cursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => {
                assert_eq!(page["hasMore"], json!(false));
                break;
            }
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (7, 7), "every event once");
    let (status, _) = app.get("/events?cursor=nonsense", &keys.secret_key).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = app.get("/events?limit=0", &keys.secret_key).await;
    assert_eq!(status, Status::BadRequest);

    let (_, named) = app.get("/events?name=purchase", &keys.secret_key).await;
    assert_eq!(named["total"], json!(2));
    let (_, mine) = app.get(&format!("/events?contactId={contact}"), &keys.secret_key).await;
    assert_eq!(mine["total"], json!(3));
    let (_, history) = app.get(&format!("/events/contact/{contact}?limit=2"), &keys.secret_key).await;
    assert_eq!((history["total"].clone(), history["data"].as_array().unwrap().len()), (json!(3), 2));
    let (status, _) = app.get("/events/contact/no-such-contact", &keys.secret_key).await;
    assert_eq!(status, Status::NotFound);

    let (_, names) = app.get("/events/names", &keys.secret_key).await;
    assert_eq!(names[0]["name"], json!("purchase"));
    assert_eq!((names[0]["count"].clone(), names[1]["count"].clone()), (json!(2), json!(5)));
    assert_eq!(names[1]["reserved"], json!(false));

    let (_, stats) = app.get("/events/stats", &keys.secret_key).await;
    assert_eq!(stats["total"], json!(7));
    assert_eq!(stats["events"][0], json!({ "name": "signup", "count": 5, "contacts": 5 }));
    assert_eq!(stats["events"][1], json!({ "name": "purchase", "count": 2, "contacts": 1 }));
    assert_eq!(stats["days"][0]["count"], json!(7));
    let today = &tidings::clock::now_iso()[..10];
    let (_, day) = app.get(&format!("/events/stats?from={today}&to={today}"), &keys.secret_key).await;
    assert_eq!(day["total"], json!(7), "a date-only `to` includes its whole day: {day}");
    let (_, empty) = app.get("/events/stats?from=2020-01-01&to=2020-02-01", &keys.secret_key).await;
    assert_eq!((empty["total"].clone(), empty["events"].clone()), (json!(0), json!([])));
    for bad in [
        "from=yesterday",
        "from=2026-01-02&to=2026-01-01",
        "from=2026-01-02T00:00:00Z&to=2026-01-02T00:00:00Z",
        "from=2020-01-01&to=2026-01-01",
    ] {
        let (status, res) = app.get(&format!("/events/stats?{bad}"), &keys.secret_key).await;
        assert_eq!(status, Status::BadRequest, "{bad}: {res}");
    }
}

#[rocket::async_test]
async fn deleting_events_by_name() {
    let (app, keys) = app_with_project().await;
    for i in 0..3 {
        track_ok(&app, &keys, json!({ "email": format!("u{i}@example.com"), "event": "signup" })).await;
    }
    track_ok(&app, &keys, json!({ "email": "u0@example.com", "event": "keep" })).await;
    let (status, res) = app.call(Method::Delete, "/events/signup", &keys.secret_key, None).await;
    assert_eq!(status, Status::Ok, "{res}");
    assert_eq!(res, json!({ "name": "signup", "deleted": 3, "status": "completed" }));
    let (_, names) = app.get("/events/names", &keys.secret_key).await;
    assert_eq!(
        names,
        json!([{ "name": "keep", "count": 1, "lastSeenAt": names[0]["lastSeenAt"], "reserved": false }])
    );
    let (status, _) = app.call(Method::Delete, "/events/signup", &keys.secret_key, None).await;
    assert_eq!(status, Status::NotFound);
    // Names are percent-decoded from the path.
    track_ok(&app, &keys, json!({ "email": "u0@example.com", "event": "order placed/paid" })).await;
    let (status, res) =
        app.call(Method::Delete, "/events/order%20placed%2Fpaid", &keys.secret_key, None).await;
    assert_eq!((status, res["deleted"].clone()), (Status::Ok, json!(1)), "{res}");
    let (status, res) = app.call(Method::Delete, "/events/email.sent", &keys.secret_key, None).await;
    assert_eq!(
        (status, res["error"]["errors"][0]["code"].clone()),
        (Status::UnprocessableEntity, json!("reserved_event"))
    );

    // Many events go in a background job, batch by batch.
    let contact: String = app.store().values("contacts", "id", &[]).remove(0);
    {
        let mut conn = app.state.db.conn().unwrap();
        tidings::db::write_tx(&mut conn, |tx| {
            for _ in 0..12_001 {
                tidings::db::events::insert(tx, &keys.id, Some(&contact), "pageview", &json!({}), 1, None)?;
            }
            Ok::<_, tidings::db::DbError>(())
        })
        .unwrap();
    }
    let (status, res) = app.call(Method::Delete, "/events/pageview", &keys.secret_key, None).await;
    assert_eq!(status, Status::Accepted, "{res}");
    assert_eq!((res["status"].clone(), res["total"].clone()), (json!("queued"), json!(12_001)));
    app.run_jobs_until("the events to go", async || {
        app.store().count("events", &[("name", "pageview".into())]) == 0
    })
    .await;
    let (_, names) = app.get("/events/names", &keys.secret_key).await;
    assert_eq!(names.as_array().unwrap().len(), 1, "{names}");
    assert_eq!(app.store().count("events", &[("name", "keep".into())]), 1);
}

#[rocket::async_test]
async fn projects_see_only_their_own_events() {
    let app = TestApp::new().await;
    let (_, a) = app.user_with_project("a@example.com").await;
    let (_, b) = app.user_with_project("b@example.com").await;
    let res = track_ok(&app, &a, json!({ "email": "ada@example.com", "event": "signup" })).await;
    let contact = res["data"]["contact"].as_str().unwrap();
    let (_, list) = app.get("/events", &b.secret_key).await;
    assert_eq!((list["total"].clone(), list["data"].clone()), (json!(0), json!([])));
    let (status, _) = app.get(&format!("/events/contact/{contact}"), &b.secret_key).await;
    assert_eq!(status, Status::NotFound);
    let (_, list) = app.get(&format!("/events?contactId={contact}"), &b.secret_key).await;
    assert_eq!(list["total"], json!(0));
    let (_, names) = app.get("/events/names", &b.secret_key).await;
    assert_eq!(names, json!([]));
    let (status, _) = app.call(Method::Delete, "/events/signup", &b.secret_key, None).await;
    assert_eq!(status, Status::NotFound);
    assert_eq!(app.store().count("events", &[]), 1);
}

#[rocket::async_test]
async fn contacts_tracked_at_once_are_all_found_by_search_after_the_reply() {
    let (app, keys) = app_with_project().await;
    // Many requests at once share writer transactions; their contacts enter the search index as
    // each transaction commits, before any of them is answered.
    let answers = rocket::futures::future::join_all((0..48).map(|n| {
        let body = json!({ "email": format!("burst{n:02}@tracked.example"), "event": "signup" });
        let keys = &keys;
        let app = &app;
        async move { track(app, keys, body).await }
    }))
    .await;
    assert!(answers.iter().all(|(status, _)| *status == Status::Ok), "{answers:?}");
    let (_, all) = app.get("/contacts?search=tracked.example&limit=100", &keys.secret_key).await;
    assert_eq!(all["total"], json!(48), "{all}");
    let (_, one) = app.get("/contacts?search=burst17%40", &keys.secret_key).await;
    assert_eq!(one["data"][0]["email"], json!("burst17@tracked.example"));
    assert_eq!(app.store().count("contacts_search_pending", &[]), 0);
    assert!(app.store().search_index_is_sound(), "the search index matches the contacts");
}
