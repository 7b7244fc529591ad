//! The project's suppression list (issue 32, item 5): addresses and domains added by hand or
//! from a CSV file keep every message away, whoever sends it (counted at the SMTP sink); entries
//! from bounces keep MARKETING mail away only; deleting an entry lets mail through again.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

fn values(page: &Value) -> Vec<String> {
    page["data"].as_array().unwrap().iter().map(|e| e["value"].as_str().unwrap().to_string()).collect()
}

#[rocket::async_test]
async fn entries_are_checked_listed_found_and_deleted() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    for (bad, field) in [
        (json!({}), "email"),
        (json!({ "email": "not an address" }), "email"),
        (json!({ "domain": "localhost" }), "domain"),
        (json!({ "domain": "a@b.example" }), "domain"),
        (json!({ "email": "a@b.example", "reason": "x".repeat(501) }), "reason"),
    ] {
        let (status, refused) = app.post("/suppressions", &key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    let (_, first) =
        app.post("/suppressions", &key, json!({ "email": "Eve@Example.org", "reason": "asked" })).await;
    assert_eq!(
        (first["type"].clone(), first["value"].clone(), first["source"].clone()),
        (json!("address"), json!("eve@example.org"), json!("manual"))
    );
    let (_, again) = app.post("/suppressions", &key, json!({ "email": "eve@example.org" })).await;
    assert_eq!(again["id"], first["id"], "listed once");
    app.post("/suppressions", &key, json!({ "domain": "*.Spam.Example" })).await;
    let (_, page) = app.get("/suppressions", &key).await;
    assert_eq!(values(&page), ["spam.example", "eve@example.org"]);
    assert_eq!(page["total"], 2);
    assert_eq!(values(&app.get("/suppressions?search=spam", &key).await.1), ["spam.example"]);
    let (_, one) = app.get("/suppressions?limit=1", &key).await;
    let cursor = one["cursor"].as_str().unwrap();
    assert_eq!(
        values(&app.get(&format!("/suppressions?limit=1&cursor={cursor}"), &key).await.1),
        ["eve@example.org"]
    );
    let path = format!("/suppressions/{}", first["id"].as_str().unwrap());
    assert_eq!(app.call(Method::Delete, &path, &key, None).await.0, Status::NoContent);
    assert_eq!(app.call(Method::Delete, &path, &key, None).await.0, Status::NotFound);
    // Another project sees none of it.
    let other = app.project(&room.session, "Other").await.secret_key;
    assert_eq!(app.get("/suppressions", &other).await.1["total"], 0);
}

#[rocket::async_test]
async fn every_sender_honours_the_list_and_a_deleted_entry_lets_mail_through() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    for email in ["eve@example.org", "ann@sub.spam.example", "bo@example.org", "cat@example.org"] {
        app.post("/contacts", &key, json!({ "email": email })).await;
    }
    let (_, eve) = app.post("/suppressions", &key, json!({ "email": "eve@example.org" })).await;
    app.post("/suppressions", &key, json!({ "domain": "spam.example" })).await;
    // An entry a hard bounce made: it keeps MARKETING mail away only.
    app.store().insert(
        "suppression_list",
        &[
            ("id", "bounced-cat".into()),
            ("project_id", room.keys.id.as_str().into()),
            ("kind", "address".into()),
            ("value", "cat@example.org".into()),
            ("source", "bounce".into()),
            ("created_at", 1.into()),
        ],
    );

    // Transactional mail from /v1/send: kept from both, saying why.
    let receipt =
        |to: &str| json!({ "to": to, "subject": "Receipt", "body": "<p>x</p>", "from": "shop@example.test" });
    let eve_mail = room.send_ok(receipt("eve@example.org")).await;
    let ann_mail = room.send_ok(receipt("ann@sub.spam.example")).await;
    room.send_ok(receipt("bo@example.org")).await;
    room.send_ok(receipt("cat@example.org")).await;
    // A campaign to everyone.
    let campaign = json!({ "name": "News", "subject": "News", "body": "<p>News</p>", "from": "news@example.test", "audienceType": "ALL" });
    let (_, made) = app.post("/campaigns", &key, campaign).await;
    app.post(&format!("/campaigns/{}/send", made["data"]["id"].as_str().unwrap()), &key, json!({})).await;
    room.deliver(3).await;
    app.run_jobs_until("the queue is empty", async || {
        app.store().count("emails", &[("status", "QUEUED".into())]) == 0
    })
    .await;
    let mut to: Vec<_> = room.sink.messages().iter().map(|m| m.to[0].clone()).collect();
    to.sort();
    assert_eq!(to, ["bo@example.org", "bo@example.org", "cat@example.org"], "bo both, cat its receipt only");
    let eve_email = room.email(&eve_mail[0]);
    assert_eq!(eve_email.status, "FAILED");
    assert!(eve_email.last_error.unwrap().contains("suppression list (manual)"));
    assert!(room.email(&ann_mail[0]).last_error.unwrap().contains("the domain spam.example"));

    // Off the list, eve gets mail again.
    app.call(Method::Delete, &format!("/suppressions/{}", eve["id"].as_str().unwrap()), &key, None).await;
    room.send_ok(receipt("eve@example.org")).await;
    let got = room.deliver(4).await;
    assert_eq!(got[3].to, ["eve@example.org"]);
}

#[rocket::async_test]
async fn a_csv_file_is_imported_with_its_bad_rows_said_and_exported() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let csv = b"Email,Reason\nann@example.org,bought list\nspam.example,\nnot an address!,\nann@example.org,twice\n";
    let (status, done) = app.upload_csv_to("/suppressions/import", &key, csv).await;
    assert_eq!(status, Status::Ok, "{done}");
    assert_eq!(
        (done["added"].clone(), done["already"].clone(), done["skipped"].clone()),
        (json!(2), json!(1), json!(1))
    );
    assert_eq!(done["errors"][0]["row"], 3, "{done}");
    let (_, page) = app.get("/suppressions", &key).await;
    assert!(page["data"].as_array().unwrap().iter().all(|e| e["source"] == "import"));
    let res = app
        .client
        .get("/suppressions/export")
        .header(rocket::http::Header::new("Authorization", format!("Bearer {key}")))
        .dispatch()
        .await;
    let text = res.into_string().await.unwrap();
    let rows: Vec<csv::StringRecord> =
        csv::Reader::from_reader(text.as_bytes()).records().map(Result::unwrap).collect();
    let mut listed: Vec<_> =
        rows.iter().map(|r| (r[0].to_string(), r[1].to_string(), r[3].to_string())).collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("address".into(), "ann@example.org".into(), "bought list".into()),
            ("domain".into(), "spam.example".into(), String::new())
        ]
    );
    let (status, refused) =
        app.upload_csv_to("/suppressions/import", &key, b"email\n\xff\xfe\x00bad\n").await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["code"], "invalid_csv");
}
