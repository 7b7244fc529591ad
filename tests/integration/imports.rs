//! CSV import, bulk jobs and the field catalogue's removal job.

use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::clock;
use tidings::db::{self, contact_jobs, jobs};

use crate::common::{Keys, TestApp};

async fn app_with_project() -> (TestApp, Keys) {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    (app, keys)
}

async fn import(app: &TestApp, keys: &Keys, csv: &str) -> Value {
    let (status, queued) = app.upload_csv(&keys.secret_key, csv.as_bytes()).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    assert_eq!(queued["status"], json!("queued"));
    let job = queued["jobId"].as_str().unwrap();
    app.finish_job(&format!("/contacts/import/{job}"), &keys.secret_key).await
}

/// The named counters of a job, in order.
fn counters(job: &Value, names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| job[*name].clone()).collect()
}

async fn contact(app: &TestApp, keys: &Keys, email: &str) -> Value {
    let (_, lookup) = app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": [email] })).await;
    let id = lookup["data"][0]["id"].as_str().unwrap_or_else(|| panic!("{email} was not imported"));
    app.get(&format!("/contacts/{id}"), &keys.secret_key).await.1
}

#[rocket::async_test]
async fn every_csv_rule() {
    let (app, keys) = app_with_project().await;
    // An existing contact, unsubscribed, with data of its own.
    app.post(
        "/contacts",
        &keys.secret_key,
        json!({ "email": "old@example.com", "subscribed": false, "data": { "keep": 1, "plan": "free" } }),
    )
    .await;
    let csv = "\u{feff}Email,first name,plan,zip,phone,score,big,sci,vip,active,signup,seen,id,subscribed,createdAt,updatedAt,unsubscribeUrl,blank\r\n\
        ada@example.com,Ada,pro,007,+4712345678,12.5,12345678901234567890,1e5,yes,FALSE,2024-01-15,2024-01-15T10:30:00Z,x,false,y,z,u,\r\n\
        not-an-email,X,,,,,,,,,,,,,,,,\r\n\
        ,nobody,,,,,,,,,,,,,,,,\r\n\
        OLD@example.com,Old,team,,,3,,,no,true,,,,,,,,\r\n\
        \"quoted@example.com\",\"Smith, Jo\",\"multi\nline\",,,-4,,,,,,,,,,,,\r\n";
    let job = import(&app, &keys, csv).await;
    assert_eq!(job["status"], json!("completed"), "{job}");
    assert_eq!(job["operation"], json!("import"));
    assert_eq!(
        counters(&job, &["totalRows", "processed", "imported", "updated", "skipped"]),
        [json!(5), json!(5), json!(2), json!(1), json!(2)]
    );
    assert_eq!(
        job["errors"],
        json!([
            { "row": 3, "email": "not-an-email", "reason": "invalid_email" },
            { "row": 4, "email": "", "reason": "missing_email" }
        ])
    );
    assert!(job["createdAt"].is_string() && job["finishedAt"].is_string());

    let ada = contact(&app, &keys, "ada@example.com").await;
    assert_eq!(ada["subscribed"], json!(true), "new contacts are subscribed");
    assert_eq!(
        ada["data"],
        json!({
            "first name": "Ada", "plan": "pro", "zip": "007", "phone": "+4712345678", "score": 12.5,
            "big": "12345678901234567890", "sci": "1e5", "vip": true, "active": false,
            "signup": "2024-01-15", "seen": "2024-01-15T10:30:00Z"
        }),
        "typed cells; dropped columns and empty cells absent"
    );
    let old = contact(&app, &keys, "old@example.com").await;
    assert_eq!(old["subscribed"], json!(false), "an existing contact keeps its subscription");
    assert_eq!(
        old["data"],
        json!({ "keep": 1, "plan": "team", "first name": "Old", "score": 3, "vip": false, "active": true })
    );
    let (_, found) = app.get("/contacts?search=quoted%40", &keys.secret_key).await;
    assert_eq!(found["total"], json!(1), "imported contacts can be searched");
    let quoted = contact(&app, &keys, "quoted@example.com").await;
    assert_eq!(quoted["data"], json!({ "first name": "Smith, Jo", "plan": "multi\nline", "score": -4 }));

    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let kind = |name: &str| {
        fields["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["field"] == json!(name))
            .map(|f| f["type"].clone())
    };
    assert_eq!(kind("data.zip"), Some(json!("string")));
    assert_eq!(kind("data.score"), Some(json!("number")));
    assert_eq!(kind("data.vip"), Some(json!("boolean")));
    assert_eq!(kind("data.signup"), Some(json!("date")));
    assert_eq!(kind("data.id"), None);
    assert_eq!(kind("data.unsubscribeUrl"), None);

    // The same file again updates in place: nothing new, no duplicates.
    let again = import(&app, &keys, csv).await;
    assert_eq!(counters(&again, &["imported", "updated", "skipped"]), [json!(0), json!(3), json!(2)]);
    let (_, list) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(list["total"], json!(3));
}

#[rocket::async_test]
async fn bad_uploads_are_refused_at_once() {
    let (app, keys) = app_with_project().await;
    for (csv, why) in [
        (&b"name,plan\nAda,pro\n"[..], "no email column"),
        (b"", "empty"),
        (b"email,name\nada@example.com,\xff\xfe\n", "not UTF-8"),
    ] {
        let (status, body) = app.upload_csv(&keys.secret_key, csv).await;
        assert_eq!(status, Status::UnprocessableEntity, "{why}: {body}");
        assert_eq!(body["error"]["errors"][0]["field"], json!("file"), "{why}");
    }
    let res =
        app.keyed(app.client.post("/contacts/import"), &keys.secret_key).body("email\n").dispatch().await;
    crate::common::assert_envelope(res, 415, "UNSUPPORTED_MEDIA_TYPE").await;
    let count = app.store().count("contact_jobs", &[]);
    assert_eq!(count, 0, "nothing queued");
}

#[rocket::async_test]
async fn a_file_over_the_limit_is_413() {
    let app = TestApp::with(|c| c.limits.csv_bytes = 1024).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let mut csv = String::from("email,note\n");
    while csv.len() <= 1024 {
        csv.push_str("someone@example.com,a fairly long note to fill the file\n");
    }
    let (status, body) = app.upload_csv(&keys.secret_key, csv.as_bytes()).await;
    assert_eq!(status, Status::PayloadTooLarge, "{body}");
    assert_eq!(body["error"]["code"], json!("PAYLOAD_TOO_LARGE"));
}

#[rocket::async_test]
async fn an_interrupted_import_resumes_without_duplicates() {
    let (app, keys) = app_with_project().await;
    let mut csv = String::from("email,n\n");
    for n in 0..57 {
        csv.push_str(&format!("user{n}@example.com,{n}\n"));
    }
    csv.push_str("bad-row,1\nuser3@example.com,dup\n");
    let (status, queued) = app.upload_csv(&keys.secret_key, csv.as_bytes()).await;
    assert_eq!(status, Status::Accepted);
    let id = queued["jobId"].as_str().unwrap().to_string();

    {
        // A worker imports two batches of 10, commits them, and starts a third that never commits.
        let mut conn = app.state.db.conn().unwrap();
        let content = contact_jobs::input(&conn, &id).unwrap().unwrap();
        for _ in 0..2 {
            db::write_tx(&mut conn, |tx| {
                let job = contact_jobs::by_id(tx, &id)?.unwrap();
                tidings::core::import::run_batch(tx, &job, &content, 10, clock::now_ms())
            })
            .unwrap();
        }
        {
            let tx = conn.transaction().unwrap();
            let job = contact_jobs::by_id(&tx, &id).unwrap().unwrap();
            tidings::core::import::run_batch(&tx, &job, &content, 10, clock::now_ms()).unwrap();
            // The process dies here: the transaction is rolled back.
        }
        let job = contact_jobs::by_id(&conn, &id).unwrap().unwrap();
        assert_eq!((job.status.as_str(), job.processed, job.imported), ("processing", 20, 20));
        // Its scheduler job is still leased to the dead worker, for a moment.
        db::write_tx(&mut conn, |tx| {
            jobs::claim(tx, clock::now_ms(), 10, 50, &mut tidings::db::fair::Turns::new(usize::MAX))
        })
        .unwrap();
    }

    let finished = app.finish_job(&format!("/contacts/import/{id}"), &keys.secret_key).await;
    assert_eq!(finished["status"], json!("completed"), "{finished}");
    assert_eq!(
        counters(&finished, &["processed", "imported", "updated", "skipped"]),
        [json!(59), json!(57), json!(1), json!(1)]
    );
    let (_, list) = app.get("/contacts?limit=100", &keys.secret_key).await;
    assert_eq!(list["total"], json!(57), "no contact twice");
    let (_, found) = app.get("/contacts?search=user1", &keys.secret_key).await;
    assert_eq!(
        found["total"],
        json!(11),
        "imported contacts are in the search index once: user1, user10 to user19"
    );
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let n =
        fields["fields"].as_array().unwrap().iter().find(|f| f["field"] == json!("data.n")).unwrap().clone();
    assert_eq!(n["coverage"], json!(1.0), "coverage counted once per contact");
    let input_left: Option<Vec<u8>> = contact_jobs::input(&app.state.db.conn().unwrap(), &id).unwrap();
    assert_eq!(input_left, None, "the file is dropped once imported");
}

#[rocket::async_test]
async fn bulk_jobs_touch_only_the_projects_contacts() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("a@example.com").await;
    let (_, other) = app.user_with_project("b@example.com").await;
    let mut ids = Vec::new();
    for n in 0..4 {
        let (_, c) = app
            .post(
                "/contacts",
                &keys.secret_key,
                json!({ "email": format!("c{n}@example.com"), "subscribed": n != 0 }),
            )
            .await;
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    let (_, foreign) = app.post("/contacts", &other.secret_key, json!({ "email": "f@example.com" })).await;
    let foreign = foreign["id"].as_str().unwrap().to_string();

    let body = json!({ "contactIds": [ids[0], ids[1], ids[2], foreign, "no-such-id"] });
    let (status, queued) = app.post("/contacts/bulk-unsubscribe", &keys.secret_key, body).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let job = app
        .finish_job(&format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap()), &keys.secret_key)
        .await;
    assert_eq!(job["status"], json!("completed"));
    assert_eq!(job["operation"], json!("unsubscribe"));
    assert_eq!(
        counters(&job, &["total", "processed", "updated", "skipped", "errorCount"]),
        [json!(5), json!(5), json!(2), json!(1), json!(2)]
    );
    assert_eq!(job["errors"][0], json!({ "contactId": foreign, "reason": "not_found" }));
    let (_, f) = app.get(&format!("/contacts/{foreign}"), &other.secret_key).await;
    assert_eq!(f["subscribed"], json!(true), "another project's contact is untouched");
    let names = tidings::db::events::names_for_contact(&app.state.db.conn().unwrap(), &ids[1]).unwrap();
    assert_eq!(names, ["contact.unsubscribed"]);
    let names = tidings::db::events::names_for_contact(&app.state.db.conn().unwrap(), &ids[0]).unwrap();
    assert!(names.is_empty(), "already unsubscribed: no event");

    let (_, queued) =
        app.post("/contacts/bulk-subscribe", &keys.secret_key, json!({ "contactIds": [ids[0]] })).await;
    let job = app
        .finish_job(&format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap()), &keys.secret_key)
        .await;
    assert_eq!(job["updated"], json!(1));
    let (_, queued) = app
        .post("/contacts/bulk-delete", &keys.secret_key, json!({ "contactIds": [ids[2], ids[3], foreign] }))
        .await;
    let job = app
        .finish_job(&format!("/contacts/bulk/{}", queued["jobId"].as_str().unwrap()), &keys.secret_key)
        .await;
    assert_eq!(counters(&job, &["updated", "errorCount"]), [json!(2), json!(1)]);
    let (_, list) = app.get("/contacts", &keys.secret_key).await;
    assert_eq!(list["total"], json!(2));
    assert_eq!(app.get(&format!("/contacts/{foreign}"), &other.secret_key).await.0, Status::Ok);

    // A bulk job is not an import job and belongs to its project.
    let id = queued["jobId"].as_str().unwrap();
    assert_eq!(app.get(&format!("/contacts/import/{id}"), &keys.secret_key).await.0, Status::NotFound);
    assert_eq!(app.get(&format!("/contacts/bulk/{id}"), &other.secret_key).await.0, Status::NotFound);
}

#[rocket::async_test]
async fn bulk_requests_are_checked() {
    let (app, keys) = app_with_project().await;
    let ids: Vec<String> = (0..1000).map(|n| format!("id-{n}")).collect();
    let (status, _) =
        app.post("/contacts/bulk-subscribe", &keys.secret_key, json!({ "contactIds": ids })).await;
    assert_eq!(status, Status::Accepted, "1,000 is allowed");
    let ids: Vec<String> = (0..1001).map(|n| format!("id-{n}")).collect();
    for path in ["/contacts/bulk-subscribe", "/contacts/bulk-unsubscribe", "/contacts/bulk-delete"] {
        let (status, body) = app.post(path, &keys.secret_key, json!({ "contactIds": ids })).await;
        assert_eq!(status, Status::UnprocessableEntity, "{path}");
        assert_eq!(body["error"]["errors"][0]["field"], json!("contactIds"));
    }
    for bad in
        [json!({}), json!({ "contactIds": [] }), json!({ "contactIds": "x" }), json!({ "contactIds": [1] })]
    {
        let (status, _) = app.post("/contacts/bulk-delete", &keys.secret_key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}");
    }
    let count = app.store().count("contact_jobs", &[]);
    assert_eq!(count, 1);
}

#[rocket::async_test]
async fn the_field_catalogue_lists_values_usage_and_deletes_fields() {
    let (app, keys) = app_with_project().await;
    for (n, plan) in ["free", "pro", "pro", "team"].iter().enumerate() {
        app.post(
            "/contacts",
            &keys.secret_key,
            json!({ "email": format!("c{n}@example.com"), "data": { "plan": plan, "profile": { "tier": n } } }),
        )
        .await;
    }
    app.post("/contacts", &keys.secret_key, json!({ "email": "bare@example.com" })).await;

    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let fields = fields["fields"].as_array().unwrap().clone();
    assert_eq!(fields[0], json!({ "field": "email", "type": "string", "isCustom": false, "coverage": 1.0 }));
    let plan = fields.iter().find(|f| f["field"] == json!("data.plan")).unwrap();
    assert_eq!(plan, &json!({ "field": "data.plan", "type": "string", "isCustom": true, "coverage": 0.8 }));

    let (_, values) = app.get("/contacts/fields/data.plan/values?limit=2", &keys.secret_key).await;
    assert_eq!(values["data"], json!([{ "value": "free", "count": 1 }, { "value": "pro", "count": 2 }]));
    assert_eq!(values["hasMore"], json!(true));
    let cursor = values["cursor"].as_str().unwrap();
    let (_, rest) = app
        .get(&format!("/contacts/fields/data.plan/values?limit=2&cursor={cursor}"), &keys.secret_key)
        .await;
    assert_eq!(rest["data"], json!([{ "value": "team", "count": 1 }]));
    assert_eq!(rest["hasMore"], json!(false));
    let (_, numbers) = app.get("/contacts/fields/data.profile.tier/values", &keys.secret_key).await;
    assert_eq!(numbers["data"].as_array().unwrap().len(), 4);
    assert_eq!(app.get("/contacts/fields/data.nope/values", &keys.secret_key).await.0, Status::NotFound);

    let (status, usage) = app.get("/contacts/fields/data.plan/usage", &keys.secret_key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(usage, json!({ "field": "data.plan", "segments": [], "campaigns": [], "workflows": [] }));

    assert_eq!(
        app.call(Method::Delete, "/contacts/fields/email", &keys.secret_key, None).await.0,
        Status::BadRequest
    );
    assert_eq!(
        app.call(Method::Delete, "/contacts/fields/data.nope", &keys.secret_key, None).await.0,
        Status::NotFound
    );
    let (status, queued) =
        app.call(Method::Delete, "/contacts/fields/data.plan", &keys.secret_key, None).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    assert!(!fields.to_string().contains("data.plan"), "gone from the catalogue at once");
    let id = queued["jobId"].as_str().unwrap().to_string();
    let job = app.finish_job(&format!("/contacts/bulk/{id}"), &keys.secret_key).await;
    assert_eq!(counters(&job, &["operation", "updated"]), [json!("delete_field"), json!(4)]);
    let (_, list) = app.get("/contacts?limit=100", &keys.secret_key).await;
    for c in list["data"].as_array().unwrap() {
        assert!(c["data"].get("plan").is_none(), "{c}");
    }
    let (_, c0) = app.get("/contacts?search=c0%40", &keys.secret_key).await;
    assert_eq!(c0["data"][0]["data"], json!({ "profile": { "tier": 0 } }), "other fields stay");

    // Used again later, the field is new: its type comes from the new first value.
    app.post("/contacts", &keys.secret_key, json!({ "email": "c0@example.com", "data": { "plan": 3 } }))
        .await;
    let (_, fields) = app.get("/contacts/fields", &keys.secret_key).await;
    let plan = fields["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == json!("data.plan"))
        .unwrap()
        .clone();
    assert_eq!((plan["type"].clone(), plan["coverage"].clone()), (json!("number"), json!(0.2)));
}
