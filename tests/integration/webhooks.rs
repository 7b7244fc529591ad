//! Outbound webhooks (appliance.md §12): endpoints get the project's matching events, signed
//! the Standard Webhooks way (checked here by a receiver computing the signature itself), tried
//! again with backoff under the same `webhook-id`, logged, given up after 24 hours, and an
//! endpoint failing for 24 hours is disabled.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rocket::http::{Method, Status};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::TestApp;
use crate::common::http_receiver::{HttpReceiver, Request};
use crate::common::store::Set;
use crate::send::Mailroom;

/// The Standard Webhooks check a receiver makes: the signature of `id.timestamp.body` under the
/// secret's bytes is one of the header's `v1,` values.
fn verified(secret: &str, request: &Request) -> bool {
    let key = STANDARD.decode(secret.trim_start_matches("whsec_")).unwrap();
    let (id, timestamp) = (&request.headers["webhook-id"], &request.headers["webhook-timestamp"]);
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{}", request.body).as_bytes());
    let expected = STANDARD.encode(mac.finalize().into_bytes());
    request.headers["webhook-signature"].split(' ').any(|s| s.strip_prefix("v1,") == Some(expected.as_str()))
}

async fn deliveries(app: &TestApp, key: &str, endpoint: &str) -> Vec<Value> {
    let (status, log) = app.get(&format!("/webhooks/{endpoint}/deliveries"), key).await;
    assert_eq!(status, Status::Ok, "{log}");
    log["data"].as_array().unwrap().clone()
}

async fn track(room: &Mailroom, email: &str, event: &str) {
    let (status, answer) = room
        .app
        .post(
            "/v1/track",
            &room.keys.public_key,
            json!({ "email": email, "event": event, "data": { "plan": "pro" } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{answer}");
}

/// Makes every pending delivery due now (and, with `age_ms`, that much older).
fn due_now(app: &TestApp, age_ms: i64) {
    let now = tidings::clock::now_ms();
    app.store().set(
        "webhook_deliveries",
        &[("next_attempt_at", now.into()), ("created_at", Set::Less(age_ms))],
        &[("status", "pending".into())],
    );
}

#[rocket::async_test]
async fn matching_events_arrive_signed_retried_logged_and_an_endpoint_failing_a_day_is_disabled() {
    let room = Mailroom::with(|c| c.webhooks.allow_private = true).await;
    let receiver = HttpReceiver::start();
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (status, created) = app
        .post("/webhooks", &key, json!({ "url": receiver.url("/hook"), "events": ["email.*", "signup"] }))
        .await;
    assert_eq!(status, Status::Ok, "{created}");
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("whsec_"));
    let id = created["id"].as_str().unwrap().to_string();
    let (_, listed) = app.get("/webhooks", &key).await;
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(listed[0].get("secret").is_none(), "the secret is shown once");

    // A matching tracked event, one that does not match, and the email.* of a send.
    track(&room, "ada@example.com", "signup").await;
    track(&room, "ada@example.com", "page.viewed").await;
    room.send_ok(
        json!({ "to": "ada@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }),
    )
    .await;
    room.deliver(1).await;
    app.run_jobs_until("two deliveries", async || receiver.requests().len() == 2).await;
    let calls = receiver.requests();
    assert!(
        calls.iter().all(|r| verified(&secret, r)),
        "every delivery verifies with the Standard Webhooks algorithm"
    );
    let bodies: Vec<Value> = calls.iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect();
    let signup = bodies.iter().find(|b| b["type"] == "signup").unwrap();
    assert_eq!(signup["data"]["contact"]["email"], "ada@example.com", "{signup}");
    assert_eq!(signup["data"]["data"]["plan"], "pro");
    assert!(bodies.iter().any(|b| b["type"] == "email.sent"), "{bodies:?}");
    // The receiver answered before the try was recorded: wait for the record too.
    app.run_jobs_until("both recorded", async || {
        deliveries(app, &key, &id).await.iter().all(|d| d["status"] == "succeeded")
    })
    .await;
    let log = deliveries(app, &key, &id).await;
    assert_eq!(log.len(), 2);
    assert!(
        log.iter().all(|d| d["status"] == "succeeded" && d["attempts"] == 1 && d["lastStatusCode"] == 200),
        "{log:?}"
    );

    // A failure is tried again within 30 s, with the same webhook-id, until it succeeds.
    receiver.answer(500);
    track(&room, "bob@example.com", "signup").await;
    let attempts = async || deliveries(app, &key, &id).await[0]["attempts"].as_i64().unwrap_or(0);
    app.run_jobs_until("the first try, recorded", async || attempts().await >= 1).await;
    let failed = deliveries(app, &key, &id).await[0].clone();
    assert_eq!(failed["status"], "pending", "{failed}");
    assert!(failed["lastStatusCode"] == 500 || failed["lastError"].is_string(), "{failed}");
    let next = tidings::clock::parse_date(failed["nextAttemptAt"].as_str().unwrap()).unwrap().0;
    assert!(next - tidings::clock::now_ms() <= 30_000, "the first retry within 30 s: {failed}");
    receiver.answer(200);
    due_now(app, 0);
    app.run_jobs_until("the retry", async || deliveries(app, &key, &id).await[0]["status"] == "succeeded")
        .await;
    let bob: Vec<Request> =
        receiver.requests().into_iter().filter(|r| r.body.contains("bob@example.com")).collect();
    assert!(
        bob.len() >= 2 || failed["lastStatusCode"].is_null(),
        "a failed try and the retry: {}",
        bob.len()
    );
    assert!(
        bob.iter().all(|r| r.headers["webhook-id"] == failed["id"].as_str().unwrap()),
        "the same id on every try"
    );
    assert!(bob.iter().all(|r| verified(&secret, r)));

    // Failing for a day: the delivery is given up and the endpoint disabled, with the reason.
    receiver.answer(503);
    track(&room, "cy@example.com", "signup").await;
    app.run_jobs_until("a failure, recorded", async || attempts().await >= 1).await;
    let failing = deliveries(app, &key, &id).await[0]["id"].as_str().unwrap().to_string();
    let status_of = async |delivery: &str| {
        deliveries(app, &key, &id).await.into_iter().find(|d| d["id"] == delivery).unwrap()["status"].clone()
    };
    app.store().set("webhook_endpoints", &[("failing_since", Set::Less(86_400_001))], &[]);
    due_now(app, 86_400_001);
    app.run_jobs_until("given up", async || status_of(&failing).await == "failed").await;
    let (_, endpoint) = app.get(&format!("/webhooks/{id}"), &key).await;
    assert_eq!(endpoint["enabled"], false, "{endpoint}");
    assert!(endpoint["disabledReason"].as_str().unwrap().contains("503"));
    track(&room, "dee@example.com", "signup").await;
    assert_eq!(deliveries(app, &key, &id).await.len(), 4, "a disabled endpoint gets nothing new");
    let (status, refused) = app.post(&format!("/webhooks/{id}/test"), &key, json!({})).await;
    assert_eq!(status, Status::BadRequest, "no test to a disabled endpoint: {refused}");

    // Enabled again, a test send goes through.
    let (status, enabled) =
        app.call(Method::Patch, &format!("/webhooks/{id}"), &key, Some(json!({ "enabled": true }))).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(
        (enabled["failingSince"].clone(), enabled["disabledReason"].clone()),
        (Value::Null, Value::Null)
    );
    receiver.answer(200);
    let (status, queued) = app.post(&format!("/webhooks/{id}/test"), &key, json!({})).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    app.run_jobs_until("the test", async || {
        receiver.requests().iter().any(|r| r.body.contains("webhook.test"))
    })
    .await;
    let test = receiver.requests().into_iter().find(|r| r.body.contains("webhook.test")).unwrap();
    assert!(verified(&secret, &test));
    assert_eq!(test.headers["webhook-id"], queued["deliveryId"].as_str().unwrap());
    let metrics = app.client.get("/metrics").dispatch().await.into_string().await.unwrap();
    let count = |result: &str| -> f64 {
        let prefix = format!("tidings_webhook_deliveries_total{{result=\"{result}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&prefix)).and_then(|v| v.parse().ok()).unwrap_or(0.0)
    };
    assert!(count("success") >= 4.0 && count("failure") >= 2.0, "{metrics}");
}

#[rocket::async_test]
async fn endpoints_are_checked_private_addresses_refused_and_other_projects_kept_out() {
    let room = Mailroom::new().await;
    let receiver = HttpReceiver::start();
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    // Names the test DNS server knows nothing of yet: they pass when saved.
    let later = |name: &str, path: &str| format!("http://{name}.example.test:{}{path}", receiver.port);
    for (body, field) in [
        (json!({ "url": "ftp://example.com", "events": ["*"] }), "url"),
        (json!({ "url": later("hooks", "/x"), "events": [] }), "events"),
        (json!({ "url": later("hooks", "/x"), "events": ["a*b"] }), "events[0]"),
        // A loopback, private or link-local target is refused when saved, not on every call.
        (json!({ "url": receiver.url("/x") }), "url"),
        (json!({ "url": format!("http://[::1]:{}/x", receiver.port) }), "url"),
        (json!({ "url": "http://localhost:8080/x" }), "url"),
        (json!({ "url": "http://169.254.169.254/latest/meta-data/" }), "url"),
    ] {
        let (status, answer) = app.post("/webhooks", &key, body.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body}: {answer}");
        assert_eq!(answer["error"]["errors"][0]["field"], field, "{answer}");
    }
    room.dns.a("inside.example.test", "10.0.0.7".parse().unwrap()).await;
    let (status, answer) = app.post("/webhooks", &key, json!({ "url": later("inside", "/x") })).await;
    assert_eq!(status, Status::UnprocessableEntity, "a name that resolves to a private address: {answer}");
    assert_eq!(app.get("/webhooks", &key).await.1, json!([]), "nothing refused was stored");

    // A target that became loopback after it was saved (its name's DNS changed; here, the row
    // itself) is refused on every call.
    let (_, created) = app.post("/webhooks", &key, json!({ "url": later("rebind", "/x") })).await;
    let id = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["events"], json!(["*"]), "every event by default");
    let (status, answer) = app
        .call(Method::Patch, &format!("/webhooks/{id}"), &key, Some(json!({ "url": receiver.url("/y") })))
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{answer}");
    let loopback = receiver.url("/x");
    app.store().set("webhook_endpoints", &[("url", loopback.as_str().into())], &[("id", id.clone().into())]);
    track(&room, "ada@example.com", "signup").await;
    app.run_jobs_until("a try", async || deliveries(app, &key, &id).await[0]["attempts"] == 1).await;
    let log = deliveries(app, &key, &id).await;
    assert!(log[0]["lastError"].as_str().unwrap().contains("private, loopback or link-local"), "{log:?}");
    assert!(receiver.requests().is_empty());

    // Disabled while a delivery waits: it is not sent, and the log says why.
    let (_, second) =
        app.post("/webhooks", &key, json!({ "url": later("late", "/y"), "events": ["late"] })).await;
    let second = second["id"].as_str().unwrap().to_string();
    track(&room, "ada@example.com", "late").await;
    let (status, _) = app
        .call(Method::Patch, &format!("/webhooks/{second}"), &key, Some(json!({ "enabled": false })))
        .await;
    assert_eq!(status, Status::Ok);
    app.run_jobs_until("recorded", async || deliveries(app, &key, &second).await[0]["status"] == "failed")
        .await;
    assert!(deliveries(app, &key, &second).await[0]["lastError"].as_str().unwrap().contains("disabled"));
    assert!(receiver.requests().is_empty());

    let (_, other) = app.user_with_project("mallory@example.com").await;
    for (method, path) in [
        (Method::Get, format!("/webhooks/{id}")),
        (Method::Patch, format!("/webhooks/{id}")),
        (Method::Delete, format!("/webhooks/{id}")),
        (Method::Get, format!("/webhooks/{id}/deliveries")),
        (Method::Post, format!("/webhooks/{id}/test")),
    ] {
        let body = (method == Method::Patch).then(|| json!({ "enabled": false }));
        let (status, _) = app.call(method, &path, &other.secret_key, body.clone()).await;
        assert_eq!(status, Status::NotFound, "{path}");
        let (status, _) = app.call(method, &path, &room.keys.public_key, body).await;
        assert_eq!(status, Status::Unauthorized, "{path} with a public key");
    }
    let (_, theirs) = app.get("/webhooks", &other.secret_key).await;
    assert_eq!(theirs, json!([]));
    let (status, _) = app.call(Method::Delete, &format!("/webhooks/{id}"), &key, None).await;
    assert_eq!(status, Status::NoContent);
}
