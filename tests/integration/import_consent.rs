//! Imports with consent (issue 32, item 6): the subscription choice (`subscribe`,
//! `unsubscribe`, `from_column`, `keep`), topics every row joins, and a column mapping (skip,
//! rename, type), checked before the job is queued; what the import grants is recorded.

use rocket::http::Status;
use serde_json::{Value, json};

use crate::common::{Keys, TestApp};

async fn run(app: &TestApp, keys: &Keys, csv: &str, parts: &[(&str, &str)]) -> (Status, Value) {
    let mut all: Vec<(&str, &[u8])> = vec![("file", csv.as_bytes())];
    all.extend(parts.iter().map(|(name, value)| (*name, value.as_bytes())));
    let (status, queued) = app.upload_parts("/contacts/import", &keys.secret_key, &all).await;
    if status != Status::Accepted {
        return (status, queued);
    }
    let job = queued["jobId"].as_str().unwrap();
    (status, app.finish_job(&format!("/contacts/import/{job}"), &keys.secret_key).await)
}

async fn contact(app: &TestApp, keys: &Keys, email: &str) -> Value {
    let (_, found) = app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": [email] })).await;
    let id = found["data"][0]["id"].as_str().unwrap_or_else(|| panic!("{email} was not imported"));
    app.get(&format!("/contacts/{id}"), &keys.secret_key).await.1
}

#[rocket::async_test]
async fn the_subscribed_column_a_mapping_and_topics_are_honoured_and_recorded() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let (_, topic) = app.post("/topics", &keys.secret_key, json!({ "name": "News" })).await;
    let topic = topic["id"].as_str().unwrap().to_string();
    let csv = "email,subscribed,Plan Name,Notes,zip\nada@example.org,yes,pro,vip,01234\nbo@example.org,no,free,,02134\ncy@example.org,,free,,x\ndi@example.org,maybe,free,,1\n";
    let mapping = r#"{"Plan Name":{"rename":"plan"},"Notes":{"skip":true},"zip":{"type":"number"}}"#;
    let topics = format!("[\"{topic}\"]");
    let (status, job) =
        run(&app, &keys, csv, &[("subscription", "from_column"), ("topics", &topics), ("mapping", mapping)])
            .await;
    assert_eq!(status, Status::Accepted, "{job}");
    assert_eq!((job["imported"].clone(), job["skipped"].clone()), (json!(2), json!(2)), "{job}");
    let reasons: Vec<&str> =
        job["errors"].as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert_eq!(
        reasons,
        ["invalid_data", "invalid_subscribed"],
        "cy's zip is no number; di's subscribed no yes or no"
    );

    let ada = contact(&app, &keys, "ada@example.org").await;
    assert_eq!((ada["subscribed"].clone(), ada["topics"][&topic].clone()), (json!(true), json!(true)));
    assert_eq!(ada["data"], json!({ "plan": "pro", "zip": 1234 }), "renamed, skipped, typed");
    let bo = contact(&app, &keys, "bo@example.org").await;
    assert_eq!(bo["subscribed"], false, "the column said no");
    let (_, record) =
        app.get(&format!("/contacts/{}/consents", ada["id"].as_str().unwrap()), &keys.secret_key).await;
    let methods: Vec<(&str, Option<&str>)> = record["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["method"].as_str().unwrap(), r["topicId"].as_str()))
        .collect();
    assert_eq!(methods, [("import", Some(topic.as_str())), ("import", None)]);
}

#[rocket::async_test]
async fn keep_and_unsubscribe_treat_existing_contacts_as_they_say() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    app.post("/contacts", &keys.secret_key, json!({ "email": "old@example.org", "subscribed": true })).await;
    let csv = "email\nold@example.org\nnew@example.org\n";
    run(&app, &keys, csv, &[("subscription", "keep")]).await;
    assert_eq!(contact(&app, &keys, "old@example.org").await["subscribed"], true);
    assert_eq!(
        contact(&app, &keys, "new@example.org").await["subscribed"],
        false,
        "keep: a new contact waits"
    );
    run(&app, &keys, csv, &[("subscription", "unsubscribe")]).await;
    assert_eq!(contact(&app, &keys, "old@example.org").await["subscribed"], false);
    // Without choices, api.md's import: a new contact subscribed.
    run(&app, &keys, "email\nthird@example.org\n", &[]).await;
    assert_eq!(contact(&app, &keys, "third@example.org").await["subscribed"], true);
}

#[rocket::async_test]
async fn bad_choices_are_refused_before_anything_is_queued() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let csv = "email,plan\na@example.org,pro\n";
    for (parts, field) in [
        (vec![("subscription", "maybe")], "subscription"),
        (vec![("subscription", "from_column")], "subscription"),
        (vec![("topics", "[\"nope\"]")], "topics[0]"),
        (vec![("mapping", r#"{"missing":{"skip":true}}"#)], "mapping.missing"),
        (vec![("mapping", r#"{"plan":{"type":"color"}}"#)], "mapping.plan.type"),
        (vec![("mapping", "not json")], "mapping"),
    ] {
        let (status, refused) = run(&app, &keys, csv, &parts).await;
        assert_eq!(status, Status::UnprocessableEntity, "{parts:?}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    let (_, found) =
        app.post("/contacts/lookup", &keys.secret_key, json!({ "emails": ["a@example.org"] })).await;
    assert_eq!(found["found"], 0);
    // The preview shows the mapping.
    let mapping = r#"{"plan":{"rename":"tier"}}"#;
    let (status, preview) = app
        .upload_parts(
            "/contacts/import/preview",
            &keys.secret_key,
            &[("file", csv.as_bytes()), ("mapping", mapping.as_bytes())],
        )
        .await;
    assert_eq!(status, Status::Ok, "{preview}");
    assert_eq!(preview["columns"][1]["becomes"], "data.tier");
}

#[rocket::async_test]
async fn counts_stay_true_when_a_file_changes_its_own_new_contacts() {
    // A new project's first import: every row's contact is counted at the batch's end, while a
    // later row of the same batch flips the subscription of a contact an earlier one made.
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let csv = "email,subscribed\nada@example.org,yes\nbo@example.org,yes\ncy@example.org,no\nada@example.org,no\ncy@example.org,yes\ncy@example.org,no\n";
    let (status, job) = run(&app, &keys, csv, &[("subscription", "from_column")]).await;
    assert_eq!(status, Status::Accepted, "{job}");
    assert_eq!((job["imported"].clone(), job["updated"].clone()), (json!(3), json!(3)), "{job}");
    let (_, values) = app.get("/contacts/fields/subscribed/values", &keys.secret_key).await;
    let counts: Vec<(Value, Value)> =
        values["data"].as_array().unwrap().iter().map(|v| (v["value"].clone(), v["count"].clone())).collect();
    assert_eq!(counts, [(json!(true), json!(1)), (json!(false), json!(2))], "bo alone subscribed");
    let (_, list) = app.get("/contacts?subscribed=true", &keys.secret_key).await;
    assert_eq!(list["total"], json!(1), "{list}");
    let (_, found) = app.get("/contacts?search=example.org", &keys.secret_key).await;
    assert_eq!(found["total"], json!(3), "each contact indexed once: {found}");
}
