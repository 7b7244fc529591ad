//! Workflows that trigger themselves, or one another, stop at a rate (issue 29, item 11): a
//! workflow on `contact.subscribed` that unsubscribes and subscribes its contact again once ran
//! ~1,200 executions a second and grew the database ~3 MB/s until it was disabled.

use rocket::http::{Method, Status};
use serde_json::json;

use crate::common::store::{NotNull, among};
use crate::send::Mailroom;
use crate::workflow_runs::{executions, template, workflow};

/// Executions in the database, and how many of them are still active or have mail queued.
fn counts(room: &Mailroom) -> (i64, i64) {
    let store = room.app.store();
    let active = store.count("workflow_executions", &[("status", among(&["RUNNING", "WAITING"]))]);
    let queued = store.count("emails", &[("status", "QUEUED".into())]);
    (store.count("workflow_executions", &[]), active + queued)
}

/// Subscribes a new, unsubscribed contact through the API: the `contact.subscribed` that starts it all.
async fn subscribe_one(room: &Mailroom, email: &str) {
    let key = &room.keys.secret_key;
    let (status, made) =
        room.app.post("/contacts", key, json!({ "email": email, "subscribed": false })).await;
    assert_eq!(status, Status::Ok, "{made}");
    let path = format!("/contacts/{}", made["id"].as_str().unwrap());
    let (status, _) = room.app.call(Method::Patch, &path, key, Some(json!({ "subscribed": true }))).await;
    assert_eq!(status, Status::Ok);
}

/// Runs the scheduler until no execution is active, then once more for a while, and returns how
/// many executions there are: a loop that was not stopped never gets there.
async fn run_to_rest(room: &Mailroom) -> i64 {
    room.app.run_jobs_until("every execution ended", async || counts(room).1 == 0).await;
    let settled = counts(room).0;
    let later = std::time::Instant::now() + std::time::Duration::from_millis(500);
    room.app.run_jobs_until("half a second more", async || std::time::Instant::now() > later).await;
    assert_eq!(counts(room).0, settled, "nothing starts once every execution has ended");
    settled
}

#[rocket::async_test]
async fn a_workflow_that_triggers_itself_stops_at_its_hourly_rate() {
    let room = Mailroom::with(|c| c.limits.workflow_runs_per_contact_hour = 5).await;
    let (app, key) = (&room.app, &room.keys.secret_key.clone());
    let (flow, _) = workflow(
        app,
        key,
        Some("contact.subscribed"),
        &[
            ("leave", "UPDATE_CONTACT", json!({ "subscribed": false })),
            ("rejoin", "UPDATE_CONTACT", json!({ "subscribed": true })),
        ],
        &[("trigger", "leave", None), ("leave", "rejoin", None)],
    )
    .await;
    let (status, _) = app
        .call(Method::Patch, &format!("/workflows/{flow}"), key, Some(json!({ "allowReentry": true })))
        .await;
    assert_eq!(status, Status::Ok);
    let refused = || tidings::core::workflows::start::refused_starts()[0].1;
    let before = refused();
    subscribe_one(&room, "looper@example.com").await;
    assert_eq!(run_to_rest(&room).await, 5, "five starts in the hour, then the event starts nothing");
    assert!(refused() > before, "the refusal is counted for GET /metrics");
    let runs = executions(app, key, &flow, "?pageSize=100").await;
    assert!(runs.iter().all(|r| r["status"] == "COMPLETED"), "{runs:?}");
    // Another contact has its own five.
    subscribe_one(&room, "other@example.com").await;
    assert_eq!(run_to_rest(&room).await, 10);
}

#[rocket::async_test]
async fn workflows_that_trigger_one_another_stop_at_the_chained_rate() {
    let room = Mailroom::with(|c| {
        c.limits.workflow_runs_per_contact_hour = 1_000;
        c.limits.chained_runs_per_contact_hour = 7;
    })
    .await;
    let (app, key) = (&room.app, &room.keys.secret_key.clone());
    let mut flows = Vec::new();
    for (event, subscribed) in [("contact.subscribed", false), ("contact.unsubscribed", true)] {
        let (flow, _) = workflow(
            app,
            key,
            Some(event),
            &[("flip", "UPDATE_CONTACT", json!({ "subscribed": subscribed }))],
            &[("trigger", "flip", None)],
        )
        .await;
        let reentry = Some(json!({ "allowReentry": true }));
        assert_eq!(app.call(Method::Patch, &format!("/workflows/{flow}"), key, reentry).await.0, Status::Ok);
        flows.push(flow);
    }
    subscribe_one(&room, "pingpong@example.com").await;
    // The API's subscription started the first; each of the next seven was started by the other
    // workflow's step, and the eighth such start was refused.
    assert_eq!(run_to_rest(&room).await, 8);
    assert_eq!(app.store().count("workflow_executions", &[("caused_by", NotNull)]), 7);
    // A start that is not a workflow's doing still happens.
    let (status, listed) = app.get("/contacts?search=pingpong", key).await;
    assert_eq!(status, Status::Ok);
    let path = format!("/contacts/{}", listed["data"][0]["id"].as_str().unwrap());
    let now_subscribed = listed["data"][0]["subscribed"].as_bool().unwrap();
    let flip = Some(json!({ "subscribed": !now_subscribed }));
    assert_eq!(app.call(Method::Patch, &path, key, flip).await.0, Status::Ok);
    assert_eq!(run_to_rest(&room).await, 9);
}

#[rocket::async_test]
async fn a_workflow_answering_its_own_mail_stops_at_the_chained_rate() {
    let room = Mailroom::with(|c| {
        c.limits.workflow_runs_per_contact_hour = 1_000;
        c.limits.chained_runs_per_contact_hour = 3;
    })
    .await;
    let (app, key) = (&room.app, &room.keys.secret_key.clone());
    let reply = template(&room, "TRANSACTIONAL", "Again", "<p>again</p>").await;
    let (flow, _) = workflow(
        app,
        key,
        Some("email.sent"),
        &[("reply", "SEND_EMAIL", json!({ "templateId": reply }))],
        &[("trigger", "reply", None)],
    )
    .await;
    let reentry = Some(json!({ "allowReentry": true }));
    assert_eq!(app.call(Method::Patch, &format!("/workflows/{flow}"), key, reentry).await.0, Status::Ok);
    // Mail sent through the API starts the workflow; the events of the mail the workflow sent
    // are the workflow's doing, and start it three more times.
    let first = template(&room, "TRANSACTIONAL", "Hello", "<p>hello</p>").await;
    room.send_ok(json!({ "to": "echo@example.com", "template": first })).await;
    assert_eq!(run_to_rest(&room).await, 4);
    assert_eq!(app.store().count("emails", &[("source_type", "WORKFLOW".into())]), 4);
}
