//! The executions API (appliance.md §11): executions started by hand, listed, read and
//! cancelled, what another project and a public key reach, and the fields a CONDITION can test.

use rocket::http::{Method, Status};
use serde_json::json;

use crate::workflow_runs::{execution_of, executions, room, track, workflow};

#[rocket::async_test]
async fn executions_are_started_by_hand_listed_and_cancelled() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let (id, steps) = workflow(
        &room.app,
        key,
        None,
        &[
            (
                "check",
                "CONDITION",
                json!({ "condition": { "logic": "AND", "groups": [{ "filters": [
                { "field": "workflow.plan", "operator": "equals", "value": "pro" }] }] } }),
            ),
            ("wait", "DELAY", json!({ "amount": 1, "unit": "hours" })),
        ],
        &[("trigger", "check", None), ("check", "wait", Some("yes"))],
    )
    .await;
    let app = &room.app;
    for email in ["a@example.com", "b@example.com", "c@example.com"] {
        let (status, c) = app.post("/contacts", key, json!({ "email": email })).await;
        assert_eq!(status, Status::Ok, "{c}");
    }
    let path = format!("/workflows/{id}/executions");

    // Bad starts change nothing.
    for (body, status) in [
        (json!({}), Status::UnprocessableEntity),
        (json!({ "email": "nobody@example.com" }), Status::UnprocessableEntity),
        (json!({ "email": "a@example.com", "context": [1] }), Status::UnprocessableEntity),
        (
            json!({ "email": "a@example.com", "context": { "x": "y".repeat(20_000) } }),
            Status::PayloadTooLarge,
        ),
        (json!({ "email": "a@example.com", "extra": 1 }), Status::UnprocessableEntity),
    ] {
        let (got, answer) = app.post(&path, key, body.clone()).await;
        assert_eq!(got, status, "{answer}");
        assert!(answer["error"]["code"].is_string(), "{answer}");
    }
    assert!(executions(app, key, &id, "").await.is_empty());

    let (status, started) =
        app.post(&path, key, json!({ "email": "a@example.com", "context": { "plan": "pro" } })).await;
    assert_eq!(status, Status::Ok, "{started}");
    assert_eq!(started["status"], "RUNNING");
    assert_eq!(started["context"], json!({ "plan": "pro" }));
    assert_eq!(started["steps"][0]["output"], json!({ "manual": true }));
    let (status, again) = app.post(&path, key, json!({ "email": "a@example.com" })).await;
    assert_eq!(status, Status::Conflict, "no re-entry by hand either: {again}");
    let (status, b) =
        app.post(&path, key, json!({ "email": "b@example.com", "context": { "plan": "free" } })).await;
    assert_eq!(status, Status::Ok, "{b}");
    let (status, c) =
        app.post(&path, key, json!({ "email": "c@example.com", "context": { "plan": "pro" } })).await;
    assert_eq!(status, Status::Ok, "{c}");
    app.run_jobs_until("a and c wait, b completed", async || {
        executions(app, key, &id, "?status=WAITING").await.len() == 2
            && executions(app, key, &id, "?status=COMPLETED").await.len() == 1
    })
    .await;
    let a = execution_of(app, key, &id, "a@example.com").await;
    assert_eq!(a["currentStepId"], steps["wait"].as_str());
    let (status, bad) = app.get(&format!("{path}?status=SLEEPING"), key).await;
    assert_eq!(status, Status::BadRequest, "{bad}");

    // Structure is locked while they wait.
    let (status, _) = app.call(Method::Delete, &format!("/workflows/{id}"), key, None).await;
    assert_eq!(status, Status::Conflict);

    // Cancel one; cancelling it again, or a completed one, is 400.
    let a_id = a["id"].as_str().unwrap();
    let (status, cancelled) = app.call(Method::Delete, &format!("{path}/{a_id}"), key, None).await;
    assert_eq!(status, Status::Ok, "{cancelled}");
    assert_eq!(cancelled["status"], "CANCELLED");
    assert_eq!(cancelled["steps"].as_array().unwrap().last().unwrap()["status"], "SKIPPED");
    let (status, _) = app.call(Method::Delete, &format!("{path}/{a_id}"), key, None).await;
    assert_eq!(status, Status::BadRequest);
    let b_id = execution_of(app, key, &id, "b@example.com").await["id"].as_str().unwrap().to_string();
    let (status, _) = app.call(Method::Delete, &format!("{path}/{b_id}"), key, None).await;
    assert_eq!(status, Status::BadRequest);

    // Cancel all, then the workflow may go.
    let (status, all) = app.post(&format!("{path}/cancel-all"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{all}");
    assert_eq!(all["cancelled"], 1);
    assert_eq!(executions(app, key, &id, "?status=CANCELLED").await.len(), 2);
    let (status, _) = app.call(Method::Delete, &format!("/workflows/{id}"), key, None).await;
    assert_eq!(status, Status::NoContent);

    // A disabled workflow starts nothing by hand.
    let (other, _) = workflow(app, key, None, &[], &[]).await;
    let (status, _) =
        app.call(Method::Patch, &format!("/workflows/{other}"), key, Some(json!({ "enabled": false }))).await;
    assert_eq!(status, Status::Ok);
    let (status, refused) =
        app.post(&format!("/workflows/{other}/executions"), key, json!({ "email": "a@example.com" })).await;
    assert_eq!(status, Status::BadRequest, "{refused}");
}

#[rocket::async_test]
async fn another_project_cannot_reach_executions_and_a_public_key_reaches_nothing() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let (id, _) = workflow(
        &room.app,
        key,
        None,
        &[("wait", "DELAY", json!({ "amount": 1, "unit": "days" }))],
        &[("trigger", "wait", None)],
    )
    .await;
    let app = &room.app;
    app.post("/contacts", key, json!({ "email": "a@example.com" })).await;
    let (_, started) =
        app.post(&format!("/workflows/{id}/executions"), key, json!({ "email": "a@example.com" })).await;
    let ex = started["id"].as_str().unwrap();
    let (_, other) = app.user_with_project("mallory@example.com").await;
    let paths = [
        (Method::Get, format!("/workflows/{id}/executions")),
        (Method::Get, format!("/workflows/{id}/executions/{ex}")),
        (Method::Delete, format!("/workflows/{id}/executions/{ex}")),
        (Method::Post, format!("/workflows/{id}/executions/cancel-all")),
        (Method::Post, format!("/workflows/{id}/executions")),
    ];
    for (method, path) in &paths {
        let body = (*method == Method::Post).then(|| json!({ "email": "a@example.com" }));
        let (status, answer) = app.call(*method, path, &other.secret_key, body.clone()).await;
        assert_eq!(status, Status::NotFound, "{path}: {answer}");
        let (status, _) = app.call(*method, path, &room.keys.public_key, body).await;
        assert_eq!(status, Status::Unauthorized, "{path} with the public key");
    }
    let (status, _) = app.get("/workflows/fields", &room.keys.public_key).await;
    assert_eq!(status, Status::Unauthorized);
    let (_, still) = app.get(&format!("/workflows/{id}/executions/{ex}"), key).await;
    assert_eq!(still["status"], "RUNNING", "untouched by the other project");
}

#[rocket::async_test]
async fn the_fields_list_names_contact_fields_and_each_events_data_keys() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    app.post("/contacts", key, json!({ "email": "a@example.com", "data": { "plan": "pro" } })).await;
    track(
        &room,
        "a@example.com",
        "order.placed",
        json!({ "total": 10, "items": { "count": 2 }, "when": "2026-01-02" }),
    )
    .await;
    let (status, fields) = app.get("/workflows/fields", key).await;
    assert_eq!(status, Status::Ok, "{fields}");
    let contact: Vec<&str> =
        fields["contact"].as_array().unwrap().iter().map(|f| f["field"].as_str().unwrap()).collect();
    assert!(contact.contains(&"email") && contact.contains(&"data.plan"), "{fields}");
    let order = fields["events"].as_array().unwrap().iter().find(|e| e["name"] == "order.placed").unwrap();
    assert_eq!(
        order["fields"],
        json!([
            { "field": "event.items.count", "key": "items.count", "type": "number" },
            { "field": "event.total", "key": "total", "type": "number" },
            { "field": "event.when", "key": "when", "type": "date" },
        ])
    );
}
