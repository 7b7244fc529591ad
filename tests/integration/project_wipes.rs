//! Resetting and deleting a project: the request answers at once and stops the keys, a durable
//! job deletes the rows in bounded batches, and nothing of another project is touched.

use std::time::Duration;

use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::db::wipe::{self, CHUNK, Step};

use crate::accounts::add_member;
use crate::common::{Keys, TestApp, assert_envelope};
use crate::send::Mailroom;

/// The project's rows in every table that has a `project_id` column, by table (the tables with
/// none left out).
fn rows_by_table(app: &TestApp, project: &str) -> Vec<(String, i64)> {
    let store = app.store();
    store
        .tables_with("project_id")
        .into_iter()
        .filter_map(|table| {
            let n = store.count(&table, &[("project_id", project.into())]);
            (n > 0).then_some((table, n))
        })
        .collect()
}

/// The project's `wiping` (`None`: the project is gone).
fn wiping(app: &TestApp, project: &str) -> Option<Option<String>> {
    app.store().find("projects", "wiping", &[("id", project.into())])
}

/// More contacts and events than one batch holds, through the API.
async fn track_many(app: &TestApp, keys: &Keys, n: usize) {
    for i in 0..n {
        let body =
            json!({ "event": "signed-up", "email": format!("c{i}@example.org"), "data": { "plan": "pro" } });
        let (status, answer) = app.post("/v1/track", &keys.public_key, body).await;
        assert_eq!(status, Status::Ok, "{answer}");
    }
}

async fn created(app: &TestApp, keys: &Keys, path: &str, body: Value) {
    let (status, answer) = app.post(path, &keys.secret_key, body.clone()).await;
    assert_eq!(status, Status::Ok, "{path} {body} -> {answer}");
}

#[rocket::async_test]
async fn a_reset_wipes_the_data_and_keeps_the_project() {
    let room = Mailroom::new().await;
    let (app, keys, owner) = (&room.app, &room.keys, &room.session);
    let key = &keys.secret_key;
    track_many(app, keys, (CHUNK as usize) + 50).await;
    created(app, keys, "/contacts", json!({ "email": "ada@example.test", "subscribed": true })).await;
    let template =
        json!({ "name": "Welcome", "subject": "Hi", "body": "<p>Hi</p>", "from": "news@example.test" });
    created(app, keys, "/templates", template).await;
    created(app, keys, "/segments", json!({ "name": "All", "type": "STATIC" })).await;
    let campaign = json!({ "name": "News", "subject": "News", "body": "<p>n</p>", "from": "news@example.test", "audienceType": "ALL" });
    created(app, keys, "/campaigns", campaign).await;
    created(app, keys, "/workflows", json!({ "name": "Onboarding" })).await;
    // Queued and never delivered: the reset takes them out of the queue.
    room.send_ok(json!({ "to": "ada@example.test", "from": "news@example.test", "subject": "Hi", "body": "<p>Hi</p>" }))
        .await;
    let other = app.project(owner, "Other").await;
    track_many(app, &other, 3).await;
    let other_before = rows_by_table(app, &other.id);

    let before = rows_by_table(app, &keys.id);
    for table in ["contacts", "events", "emails", "templates", "segments", "campaigns", "workflows"] {
        assert!(before.iter().any(|(t, _)| t == table), "{table} has rows before: {before:?}");
    }

    let admin = app.signup("admin@example.com").await;
    add_member(app, owner, &keys.id, "admin@example.com", "ADMIN").await;
    let path = format!("/users/@me/projects/{}/reset", keys.id);
    let (status, _, _) = app.as_user(Method::Post, &path, Some(&admin), None).await;
    assert_eq!(status, Status::Forbidden, "only an owner resets");

    let (status, project, _) = app.as_user(Method::Post, &path, Some(owner), None).await;
    assert_eq!(status, Status::Accepted, "{project}");
    assert_eq!((project["id"].clone(), project["resetting"].clone()), (json!(keys.id), json!(true)));
    // The keys stop at once, with a reason; a second reset is refused.
    let res = app.keyed(app.client.get("/contacts"), key).dispatch().await;
    let error = assert_envelope(res, 409, "CONFLICT").await;
    assert!(error["message"].as_str().unwrap().contains("being reset"), "{error}");
    let (status, _, _) = app.as_user(Method::Post, &path, Some(owner), None).await;
    assert_eq!(status, Status::Conflict);

    app.run_jobs_until("the reset", async || wiping(app, &keys.id) == Some(None)).await;

    // What stays: the project, its members, keys, domain and sending history.
    let after = rows_by_table(app, &keys.id);
    let kept: Vec<&str> = after.iter().map(|(t, _)| t.as_str()).collect();
    for table in &kept {
        assert!(
            ["memberships", "api_keys", "domains", "contact_counts", "sending_days", "billing_usage"]
                .contains(table),
            "{table} keeps rows after a reset: {after:?}"
        );
    }
    assert!(kept.contains(&"domains") && kept.contains(&"memberships"), "{after:?}");
    // (The admin's sign-up mail, from the server itself, is the only message.)
    let sent: Vec<Vec<String>> = room.sink.messages().into_iter().map(|m| m.to).collect();
    assert!(
        !sent.iter().flatten().any(|to| to == "ada@example.test"),
        "queued mail of a reset project is not sent"
    );
    let (status, contacts) = app.get("/contacts", key).await;
    assert_eq!((status, contacts["total"].clone()), (Status::Ok, json!(0)), "the keys work again");
    let (status, project, _) =
        app.as_user(Method::Get, &format!("/users/@me/projects/{}", keys.id), Some(owner), None).await;
    assert_eq!((status, project["resetting"].clone()), (Status::Ok, json!(false)));
    assert_eq!(rows_by_table(app, &other.id), other_before, "another project is untouched");
}

#[rocket::async_test]
async fn a_deleted_project_goes_in_bounded_batches() {
    let app = TestApp::new().await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    track_many(&app, &keys, (CHUNK as usize) * 2 + 10).await;
    let other = app.project(&owner, "Other").await;
    track_many(&app, &other, 3).await;
    let other_before = rows_by_table(&app, &other.id);
    let admin = app.signup("admin@example.com").await;
    add_member(&app, &owner, &keys.id, "admin@example.com", "ADMIN").await;

    let path = format!("/users/@me/projects/{}", keys.id);
    let (status, _, _) = app.as_user(Method::Delete, &path, Some(&admin), None).await;
    assert_eq!(status, Status::Forbidden, "only an owner deletes");
    let (status, _, _) = app.as_user(Method::Delete, &path, Some(&owner), None).await;
    assert_eq!(status, Status::NoContent);

    // Gone at once for keys and members, though its rows are still there.
    let res = app.keyed(app.client.get("/contacts"), &keys.secret_key).dispatch().await;
    assert_envelope(res, 401, "INVALID_API_KEY").await;
    let (status, _, _) = app.as_user(Method::Get, &path, Some(&admin), None).await;
    assert_eq!(status, Status::NotFound);
    let (_, list, _) = app.as_user(Method::Get, "/users/@me/projects", Some(&owner), None).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(wiping(&app, &keys.id), Some(Some("delete".into())));

    // One step with no time to spare deletes one batch and commits.
    let id = keys.id.clone();
    let step = app.state.db.write_alone(move |tx| wipe::step(tx, &id, Duration::ZERO, CHUNK)).await.unwrap();
    assert!(
        matches!(step, Step::More { deleted, table: "events", .. } if deleted == CHUNK as usize),
        "{step:?}"
    );

    app.run_jobs_until("the deletion", async || wiping(&app, &keys.id).is_none()).await;
    assert_eq!(rows_by_table(&app, &keys.id), vec![], "nothing of the project is left");
    assert_eq!(rows_by_table(&app, &other.id), other_before, "another project is untouched");
}

#[rocket::async_test]
async fn a_deletion_may_follow_a_reset_under_way() {
    let app = TestApp::new().await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    track_many(&app, &keys, 20).await;
    let path = format!("/users/@me/projects/{}", keys.id);
    let (status, _, _) = app.as_user(Method::Post, &format!("{path}/reset"), Some(&owner), None).await;
    assert_eq!(status, Status::Accepted);
    let (status, _, _) = app.as_user(Method::Delete, &path, Some(&owner), None).await;
    assert_eq!(status, Status::NoContent);
    app.run_jobs_until("the deletion", async || wiping(&app, &keys.id).is_none()).await;
    assert_eq!(rows_by_table(&app, &keys.id), vec![]);
}
