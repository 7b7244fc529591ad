//! Fair shares (issue 29, items 5 and 6): one project's slow or huge work delays only itself.
//! Each shared queue is claimed round-robin across projects, each project within a cap on what
//! it holds at once, so another project's one item goes out while the first project's hundreds
//! hang. "Before any of A's could have answered" below is the 10 s a webhook call may take: a
//! B that waited for A's turn would come after it (29 s and 8.6 s were measured before).

use std::time::{Duration, Instant};

use rocket::http::Status;
use serde_json::json;

use crate::common::Keys;
use crate::common::http_receiver::HttpReceiver;
use crate::send::Mailroom;

/// Another project, of another owner.
async fn second_project(room: &Mailroom) -> Keys {
    room.app.user_with_project("b@example.com").await.1
}

async fn track(room: &Mailroom, keys: &Keys, email: &str, event: &str) {
    let body = json!({ "email": email, "event": event });
    let (status, answer) = room.app.post("/v1/track", &keys.public_key, body).await;
    assert_eq!(status, Status::Ok, "{answer}");
}

#[rocket::async_test]
async fn one_projects_hung_webhook_endpoint_does_not_delay_anothers_delivery() {
    let room = Mailroom::with(|c| c.webhooks.allow_private = true).await;
    let (hung, answering) = (HttpReceiver::start(), HttpReceiver::start());
    hung.delay(Duration::from_secs(30));
    let a = room.keys.clone();
    let b = second_project(&room).await;
    for (keys, receiver) in [(&a, &hung), (&b, &answering)] {
        let hook = json!({ "url": receiver.url("/hook"), "events": ["signup"] });
        let (status, created) = room.app.post("/webhooks", &keys.secret_key, hook).await;
        assert_eq!(status, Status::Ok, "{created}");
    }
    for i in 0..96 {
        track(&room, &a, &format!("a{i}@example.com"), "signup").await;
    }
    track(&room, &b, "b@example.com", "signup").await;

    let start = Instant::now();
    room.app.run_jobs_until("B's delivery", async || !answering.requests().is_empty()).await;
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(10), "B waited {waited:?}, for A's calls to time out");
    assert!(hung.requests().len() <= 8, "A holds its share of the calls and no more");
}

#[rocket::async_test]
async fn one_projects_hung_webhook_steps_do_not_delay_anothers_executions() {
    let room = Mailroom::with(|c| c.webhooks.allow_private = true).await;
    let hung = HttpReceiver::start();
    hung.delay(Duration::from_secs(30));
    let a = room.keys.clone();
    let b = second_project(&room).await;
    // A: a WEBHOOK step to an endpoint that never answers, 192 times over.
    let call = json!({ "type": "WEBHOOK", "config": { "url": hung.url("/step"), "method": "POST" } });
    let flow_a = workflow(&room, &a, "go", call).await;
    // B: one step that needs no call.
    let update = json!({ "type": "UPDATE_CONTACT", "config": { "data": { "done": true } } });
    let flow_b = workflow(&room, &b, "go", update).await;
    for i in 0..192 {
        track(&room, &a, &format!("a{i}@example.com"), "go").await;
    }
    track(&room, &b, "b@example.com", "go").await;

    let executions = format!("/workflows/{flow_b}/executions");
    let start = Instant::now();
    room.app
        .run_jobs_until("B's execution", async || {
            let (_, list) = room.app.get(&executions, &b.secret_key).await;
            list["data"][0]["status"] == "COMPLETED"
        })
        .await;
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(10), "B waited {waited:?}, for A's calls to time out");
    assert!(hung.requests().len() <= 8, "A holds its share of the calls and no more");
    let (_, list) = room.app.get(&format!("/workflows/{flow_a}/executions?limit=100"), &a.secret_key).await;
    assert!(list["data"].as_array().unwrap().iter().all(|e| e["status"] != "COMPLETED"), "A's still wait");
}

/// An enabled workflow of `keys`' project on `event` with one step; its id.
async fn workflow(room: &Mailroom, keys: &Keys, event: &str, step: serde_json::Value) -> String {
    let body = json!({ "name": "f", "eventName": event, "enabled": true, "allowReentry": true });
    let (status, flow) = room.app.post("/workflows", &keys.secret_key, body).await;
    assert_eq!(status, Status::Ok, "{flow}");
    let id = flow["id"].as_str().unwrap().to_string();
    let (status, created) = room.app.post(&format!("/workflows/{id}/steps"), &keys.secret_key, step).await;
    assert_eq!(status, Status::Ok, "{created}");
    id
}

#[rocket::async_test]
async fn one_projects_backlog_does_not_hold_back_anothers_email() {
    let room = Mailroom::new().await;
    let a = room.keys.clone();
    let b = second_project(&room).await;
    let (_, domain) = room.app.post("/domains", &b.secret_key, json!({ "domain": "b.test" })).await;
    for record in domain["records"].as_array().unwrap() {
        room.dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
    }
    let verify = format!("/domains/{}/verify", domain["id"].as_str().unwrap());
    assert_eq!(room.app.get(&verify, &b.secret_key).await.1["status"], "verified");
    // A queues 600 emails (twelve sends of 50 recipients), then B one.
    for batch in 0..12 {
        let to: Vec<String> = (0..50).map(|i| format!("a{batch}-{i}@example.com")).collect();
        let body = json!({ "to": to, "from": "news@example.test", "subject": "s", "body": "<p>x</p>" });
        let (status, answer) = room.app.post("/v1/send", &a.secret_key, body).await;
        assert_eq!(status, Status::Ok, "{answer}");
    }
    let body = json!({ "to": "reader@example.com", "from": "hi@b.test", "subject": "s", "body": "<p>x</p>" });
    let (status, answer) = room.app.post("/v1/send", &b.secret_key, body).await;
    assert_eq!(status, Status::Ok, "{answer}");

    let sink = &room.sink;
    room.app
        .run_jobs_until("B's email", async || {
            sink.messages().iter().any(|m| m.to.iter().any(|t| t == "reader@example.com"))
        })
        .await;
    let position =
        sink.messages().iter().position(|m| m.to.iter().any(|t| t == "reader@example.com")).unwrap();
    // The first claim takes B's turn beside A's (round-robin), so B's is among the first batch.
    assert!(position < 64, "B's email went out {position}th, behind A's backlog");
}

#[rocket::async_test]
async fn one_projects_long_jobs_leave_workers_for_anothers() {
    use tidings::db::jobs::{self, NewJob};
    use tidings::scheduler::{JobOutcome, Registry};
    let app = crate::common::TestApp::new().await;
    let a = app.user_with_project("a@example.com").await.1;
    let b = app.user_with_project("b@example.com").await.1;
    let mut registry = Registry::new();
    registry.register("test.long", Duration::from_secs(600), |_| async {
        tokio::time::sleep(Duration::from_secs(600)).await;
        Ok(JobOutcome::Done)
    });
    registry.register("test.quick", Duration::from_secs(60), |_| async { Ok(JobOutcome::Done) });
    let enqueue = |kind: &str, project: &Keys| {
        let mut job = NewJob::new(kind, &json!({}));
        job.project_id = Some(project.id.clone());
        tidings::db::write_tx(&mut app.state.db.conn().unwrap(), |tx| jobs::enqueue(tx, &job))
            .unwrap()
            .unwrap()
    };
    // A's eight long jobs (the four workers of the default are more than enough for them all),
    // then B's quick one.
    let long: Vec<i64> = (0..8).map(|_| enqueue("test.long", &a)).collect();
    let quick = enqueue("test.quick", &b);
    let handle = tidings::scheduler::start(app.state.clone(), registry);
    let status = |id: i64| jobs::get(&app.state.db.conn().unwrap(), id).unwrap().unwrap().status;
    let start = Instant::now();
    while status(quick) != "done" {
        assert!(start.elapsed() < Duration::from_secs(10), "B's job waits behind A's");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let running = long.iter().filter(|id| status(**id) == "running").count();
    assert_eq!(running, 2, "A runs on half the workers at most");
    handle.shutdown().await;
}
