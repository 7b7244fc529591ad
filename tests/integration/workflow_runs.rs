//! Workflow executions end to end (appliance.md §11): events start and resume them, every step
//! type runs against the SMTP sink and a loopback HTTP receiver, and waits are rows with a due
//! time. The executions API is `workflow_executions`'.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::common::http_receiver::HttpReceiver;
use crate::common::store::NotNull;
use crate::send::Mailroom;

/// A room whose webhooks may call loopback (the receiver lives there).
pub(crate) async fn room() -> Mailroom {
    Mailroom::with(|c| c.webhooks.allow_private = true).await
}

pub(crate) async fn template(room: &Mailroom, kind: &str, subject: &str, body: &str) -> String {
    let (status, created) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": format!("t {subject}"), "subject": subject, "body": body,
                    "from": "flows@example.test", "type": kind }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{created}");
    created["id"].as_str().unwrap().to_string()
}

/// Builds a workflow: `steps` as (label, type, config), `edges` as (from label, to label,
/// branch); "trigger" is the trigger step. Enabled on `event` (or MANUAL without one).
pub(crate) async fn workflow(
    app: &TestApp,
    key: &str,
    event: Option<&str>,
    steps: &[(&str, &str, Value)],
    edges: &[(&str, &str, Option<&str>)],
) -> (String, std::collections::HashMap<String, String>) {
    let (status, created) = app.post("/workflows", key, json!({ "name": "flow" })).await;
    assert_eq!(status, Status::Ok, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let mut ids = std::collections::HashMap::new();
    ids.insert("trigger".to_string(), created["steps"][0]["id"].as_str().unwrap().to_string());
    for (label, kind, config) in steps {
        let body = json!({ "type": kind, "config": config, "autoConnect": false });
        let (status, step) = app.post(&format!("/workflows/{id}/steps"), key, body).await;
        assert_eq!(status, Status::Ok, "{label}: {step}");
        ids.insert(label.to_string(), step["id"].as_str().unwrap().to_string());
    }
    for (from, to, branch) in edges {
        let (status, t) = app
            .post(
                &format!("/workflows/{id}/transitions"),
                key,
                json!({ "fromStepId": ids[*from], "toStepId": ids[*to], "branch": branch }),
            )
            .await;
        assert_eq!(status, Status::Ok, "{from} -> {to}: {t}");
    }
    let patch = match event {
        Some(event) => json!({ "enabled": true, "triggerConfig": { "eventName": event } }),
        None => json!({ "enabled": true, "triggerType": "MANUAL" }),
    };
    let (status, enabled) = app.call(Method::Patch, &format!("/workflows/{id}"), key, Some(patch)).await;
    assert_eq!(status, Status::Ok, "{enabled}");
    (id, ids)
}

pub(crate) async fn track(room: &Mailroom, email: &str, event: &str, data: Value) {
    let (status, tracked) = room
        .app
        .post("/v1/track", &room.keys.public_key, json!({ "email": email, "event": event, "data": data }))
        .await;
    assert_eq!(status, Status::Ok, "{tracked}");
}

pub(crate) async fn executions(app: &TestApp, key: &str, workflow: &str, query: &str) -> Vec<Value> {
    let (status, list) = app.get(&format!("/workflows/{workflow}/executions{query}"), key).await;
    assert_eq!(status, Status::Ok, "{list}");
    list["data"].as_array().unwrap().clone()
}

/// The one execution of `workflow` for the contact with `email`.
pub(crate) async fn execution_of(app: &TestApp, key: &str, workflow: &str, email: &str) -> Value {
    let all = executions(app, key, workflow, "?pageSize=100").await;
    let mine: Vec<&Value> = all.iter().filter(|e| e["contactEmail"] == email).collect();
    assert_eq!(mine.len(), 1, "{all:?}");
    mine[0].clone()
}

/// Makes a waiting execution's DELAY or timeout end now, as if its time had passed.
pub(crate) fn come_due(app: &TestApp, execution: &str) {
    let changed = app.store().set(
        "workflow_executions",
        &[("due_at", tidings::clock::now_ms().into())],
        &[("id", execution.into()), ("status", "WAITING".into()), ("due_at", NotNull)],
    );
    assert_eq!(changed, 1);
}

pub(crate) fn statuses(execution: &Value) -> Vec<(String, String)> {
    execution["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["stepId"].as_str().unwrap().to_string(), s["status"].as_str().unwrap().to_string()))
        .collect()
}

#[rocket::async_test]
async fn an_event_runs_condition_email_update_webhook_and_wait_and_a_later_event_resumes_it() {
    let room = room().await;
    let receiver = HttpReceiver::start();
    let key = &room.keys.secret_key.clone();
    let tpl = template(
        &room,
        "TRANSACTIONAL",
        "Order {{ event.orderId }}",
        "<p>Thanks {{ name }}, total {{ event.total }}</p>",
    )
    .await;
    let (id, steps) = workflow(
        &room.app,
        key,
        Some("order.placed"),
        &[
            (
                "big",
                "CONDITION",
                json!({ "condition": { "logic": "AND", "groups": [{ "filters": [
                { "field": "event.total", "operator": "greaterThan", "value": 100 }] }] } }),
            ),
            ("mail", "SEND_EMAIL", json!({ "templateId": tpl })),
            ("vip", "UPDATE_CONTACT", json!({ "data": { "vip": true } })),
            (
                "hook",
                "WEBHOOK",
                json!({ "url": receiver.url("/orders/{{ event.orderId }}"),
                "headers": { "X-Contact": "{{ email }}" } }),
            ),
            ("wait", "WAIT_FOR_EVENT", json!({ "eventName": "order.paid", "timeoutSeconds": 3600 })),
            ("paid", "EXIT", json!({ "reason": "paid" })),
            ("unpaid", "EXIT", json!({ "reason": "never paid" })),
            ("small", "EXIT", json!({ "reason": "small order" })),
        ],
        &[
            ("trigger", "big", None),
            ("big", "mail", Some("yes")),
            ("big", "small", Some("no")),
            ("mail", "vip", None),
            ("vip", "hook", None),
            ("hook", "wait", None),
            ("wait", "paid", Some("event")),
            ("wait", "unpaid", Some("timeout")),
        ],
    )
    .await;

    track(&room, "ada@example.com", "order.placed", json!({ "orderId": "A1", "total": 150, "name": "Ada" }))
        .await;
    track(&room, "bob@example.com", "order.placed", json!({ "orderId": "B2", "total": 50 })).await;
    let app = &room.app;
    app.run_jobs_until("ada waits and bob exited", async || {
        let all = executions(app, key, &id, "").await;
        all.len() == 2
            && all.iter().all(|e| e["status"] == "WAITING" || e["status"] == "EXITED")
            && room.sink.messages().len() == 1
    })
    .await;

    let ada = execution_of(app, key, &id, "ada@example.com").await;
    assert_eq!(ada["status"], "WAITING", "{ada}");
    assert_eq!(ada["waitingFor"], "order.paid");
    assert_eq!(ada["currentStepId"], steps["wait"].as_str());
    let ran: Vec<(String, String)> = statuses(&ada);
    let expected: Vec<(String, String)> = [
        ("trigger", "COMPLETED"),
        ("big", "COMPLETED"),
        ("mail", "COMPLETED"),
        ("vip", "COMPLETED"),
        ("hook", "COMPLETED"),
        ("wait", "WAITING"),
    ]
    .iter()
    .map(|(label, status)| (steps[*label].clone(), status.to_string()))
    .collect();
    assert_eq!(ran, expected);
    assert_eq!(ada["steps"][1]["output"], json!({ "result": true }));
    assert_eq!(ada["steps"][4]["output"]["status"], 200, "the webhook's answer is kept");

    // The email went through the outbound path, rendered with the event and the contact.
    let messages = room.sink.messages();
    assert_eq!(messages[0].to, vec!["ada@example.com".to_string()]);
    let raw = String::from_utf8_lossy(&messages[0].data).to_string();
    assert!(raw.contains("Subject: Order A1"), "{raw}");
    assert!(room.dkim_passes(&messages[0].data).await, "signed like any other mail");
    let email_id = ada["steps"][2]["output"]["emailId"].as_str().unwrap().to_string();
    let email = room.email(&email_id);
    assert_eq!((email.source_type.as_str(), email.workflow_id.as_deref()), ("WORKFLOW", Some(id.as_str())));

    // The contact was updated through the field rules, and the catalogue knows the field.
    let (_, contact) = app.get(&format!("/contacts/{}", ada["contactId"].as_str().unwrap()), key).await;
    assert_eq!(contact["data"]["vip"], true, "{contact}");
    let (_, fields) = app.get("/contacts/fields", key).await;
    assert!(fields["fields"].as_array().unwrap().iter().any(|f| f["field"] == "data.vip"), "{fields}");

    // The webhook: rendered url and header, the execution as its body, a stable key.
    let calls = receiver.requests();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].method.as_str(), calls[0].path.as_str()), ("POST", "/orders/A1"));
    assert_eq!(calls[0].headers["x-contact"], "ada@example.com");
    let seq = 5;
    assert_eq!(calls[0].headers["idempotency-key"], format!("{}:{seq}", ada["id"].as_str().unwrap()));
    let sent: Value = serde_json::from_str(&calls[0].body).unwrap();
    assert_eq!(sent["event"]["orderId"], "A1");
    assert_eq!(sent["contact"]["email"], "ada@example.com");

    let bob = execution_of(app, key, &id, "bob@example.com").await;
    assert_eq!((bob["status"].clone(), bob["exitReason"].clone()), (json!("EXITED"), json!("small order")));
    assert_eq!(bob["steps"][1]["output"], json!({ "result": false }));

    // Another contact's event resumes nothing of Ada's; hers does, merging its data.
    track(&room, "bob@example.com", "order.paid", json!({ "amount": 50 })).await;
    assert_eq!(execution_of(app, key, &id, "ada@example.com").await["status"], "WAITING");
    track(&room, "ada@example.com", "order.paid", json!({ "amount": 150, "method": "card" })).await;
    app.run_jobs_until("ada paid", async || {
        execution_of(app, key, &id, "ada@example.com").await["status"] == "EXITED"
    })
    .await;
    let ada = execution_of(app, key, &id, "ada@example.com").await;
    assert_eq!(ada["exitReason"], "paid");
    assert_eq!(ada["context"]["event"]["method"], "card", "the awaited event's data is merged in");
    assert_eq!(ada["context"]["event"]["orderId"], "A1", "and what was there stays");
    assert!(ada["completedAt"].is_string());
    let (status, one) =
        app.get(&format!("/workflows/{id}/executions/{}", ada["id"].as_str().unwrap()), key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(one["steps"].as_array().unwrap().len(), 7, "{one}");
    assert_eq!(one["steps"][5]["status"], "COMPLETED");
    assert_eq!(one["steps"][5]["output"]["event"], "order.paid");
    assert_eq!(room.sink.messages().len(), 1, "nothing sent twice");
    assert_eq!(receiver.requests().len(), 1, "nothing called twice");
}

#[rocket::async_test]
async fn delays_and_timeouts_are_rows_with_a_due_time() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let tpl = template(&room, "TRANSACTIONAL", "Later", "<p>later</p>").await;
    let (id, steps) = workflow(
        &room.app,
        key,
        Some("signup"),
        &[
            ("delay", "DELAY", json!({ "amount": 2, "unit": "days" })),
            ("wait", "WAIT_FOR_EVENT", json!({ "eventName": "activated", "timeoutSeconds": 60 })),
            ("nudge", "SEND_EMAIL", json!({ "templateId": tpl })),
        ],
        &[("trigger", "delay", None), ("delay", "wait", None), ("wait", "nudge", Some("timeout"))],
    )
    .await;
    track(&room, "ada@example.com", "signup", json!({})).await;
    let app = &room.app;
    app.run_jobs_until("the delay begins", async || {
        executions(app, key, &id, "?status=WAITING").await.len() == 1
    })
    .await;
    let ex = execution_of(app, key, &id, "ada@example.com").await;
    assert_eq!(ex["currentStepId"], steps["delay"].as_str());
    let due = tidings::clock::parse_date(ex["dueAt"].as_str().unwrap()).unwrap().0;
    let two_days = 2 * 86_400_000;
    assert!((due - tidings::clock::now_ms() - two_days).abs() < 60_000, "{ex}");
    assert_eq!(ex["waitingFor"], Value::Null);

    // An event meanwhile resumes nothing: the execution waits on a delay, not an event.
    track(&room, "ada@example.com", "activated", json!({})).await;
    let id_ex = ex["id"].as_str().unwrap().to_string();
    come_due(app, &id_ex);
    app.run_jobs_until("the wait begins", async || {
        execution_of(app, key, &id, "ada@example.com").await["currentStepId"] == steps["wait"].as_str()
    })
    .await;
    let ex = execution_of(app, key, &id, "ada@example.com").await;
    assert_eq!((ex["status"].clone(), ex["waitingFor"].clone()), (json!("WAITING"), json!("activated")));
    come_due(app, &id_ex);
    app.run_jobs_until("the timeout branch sends", async || room.sink.messages().len() == 1).await;
    app.run_jobs_until("completed", async || {
        execution_of(app, key, &id, "ada@example.com").await["status"] == "COMPLETED"
    })
    .await;
    let ex = execution_of(app, key, &id, "ada@example.com").await;
    assert_eq!(ex["steps"][2]["output"], json!({ "timedOut": true }), "{ex}");
}

#[rocket::async_test]
async fn reentry_failures_and_skips_are_recorded_on_the_execution() {
    let room = room().await;
    let receiver = HttpReceiver::start();
    receiver.answer(500);
    let key = &room.keys.secret_key.clone();
    let marketing = template(&room, "MARKETING", "News", "<p>news</p>").await;
    // Once per contact: a second signup does not enter again.
    let (once, _) = workflow(
        &room.app,
        key,
        Some("signup"),
        &[
            ("news", "SEND_EMAIL", json!({ "templateId": marketing })),
            ("hook", "WEBHOOK", json!({ "url": receiver.url("/x") })),
        ],
        &[("trigger", "news", None), ("news", "hook", None)],
    )
    .await;
    let (status, unsubscribed) =
        room.app.post("/contacts", key, json!({ "email": "quiet@example.com", "subscribed": false })).await;
    assert_eq!(status, Status::Ok, "{unsubscribed}");
    track(&room, "quiet@example.com", "signup", json!({})).await;
    track(&room, "quiet@example.com", "signup", json!({})).await;
    let app = &room.app;
    app.run_jobs_until("the webhook fails it", async || {
        executions(app, key, &once, "?status=FAILED").await.len() == 1
    })
    .await;
    let all = executions(app, key, &once, "").await;
    assert_eq!(all.len(), 1, "no re-entry: {all:?}");
    let ex = &all[0];
    assert_eq!(ex["steps"][1]["status"], "SKIPPED", "marketing mail to an unsubscribed contact: {ex}");
    assert!(ex["steps"][1]["output"]["reason"].as_str().unwrap().contains("unsubscribed"));
    assert_eq!(ex["steps"][2]["status"], "FAILED");
    assert!(ex["steps"][2]["error"].as_str().unwrap().contains("500"), "{ex}");
    assert!(room.sink.messages().is_empty());

    // With re-entry allowed, each event starts one.
    let (status, _) = app
        .call(Method::Patch, &format!("/workflows/{once}"), key, Some(json!({ "allowReentry": true })))
        .await;
    assert_eq!(status, Status::Ok);
    receiver.answer(200);
    track(&room, "quiet@example.com", "signup", json!({})).await;
    app.run_jobs_until("a second execution", async || {
        executions(app, key, &once, "?status=COMPLETED").await.len() == 1
    })
    .await;
    assert_eq!(executions(app, key, &once, "").await.len(), 2);

    // The template it sends is listed as used by it and cannot be deleted under it.
    let (_, usage) = app.get(&format!("/templates/{marketing}/usage"), key).await;
    assert_eq!(usage["workflows"][0]["id"], once.as_str(), "{usage}");
    let (status, refused) = app.call(Method::Delete, &format!("/templates/{marketing}"), key, None).await;
    assert_eq!(status, Status::Conflict, "{refused}");
    assert_eq!(refused["error"]["details"]["workflows"][0]["id"], once.as_str());
}

#[rocket::async_test]
async fn webhooks_to_private_addresses_are_refused_unless_allowed() {
    // The default: allow_private is off.
    let room = Mailroom::new().await;
    let receiver = HttpReceiver::start();
    let key = &room.keys.secret_key.clone();
    let urls = [
        receiver.url("/direct"),
        format!("http://[::1]:{}/v6", receiver.port),
        format!("http://localhost.test:{}/named", receiver.port),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ];
    // A name that resolves to loopback is refused on the address it resolves to.
    room.dns.a("localhost.test", "127.0.0.1".parse().unwrap()).await;
    let mut flows = Vec::new();
    for url in &urls {
        let (id, _) = workflow(
            &room.app,
            key,
            Some("go"),
            &[("hook", "WEBHOOK", json!({ "url": url, "method": "GET" }))],
            &[("trigger", "hook", None)],
        )
        .await;
        flows.push(id);
    }
    track(&room, "ada@example.com", "go", json!({})).await;
    let app = &room.app;
    app.run_jobs_until("every call is refused", async || {
        let mut failed = 0;
        for id in &flows {
            failed += executions(app, key, id, "?status=FAILED").await.len();
        }
        failed == flows.len()
    })
    .await;
    for id in &flows {
        let ex = &executions(app, key, id, "").await[0];
        let error = ex["steps"][1]["error"].as_str().unwrap();
        assert!(error.contains("private, loopback or link-local"), "{error}");
    }
    assert!(receiver.requests().is_empty(), "nothing reached the receiver");
}

#[rocket::async_test]
async fn service_events_and_segment_entries_start_workflows_too() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let (on_unsubscribe, _) = workflow(app, key, Some("contact.unsubscribed"), &[], &[]).await;
    let (on_entry, _) = workflow(app, key, Some("segment.pros.entry"), &[], &[]).await;
    let (status, segment) = app
        .post(
            "/segments",
            key,
            json!({ "name": "Pros", "trackMembership": true, "condition": { "logic": "AND",
                "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{segment}");
    let (_, contact) =
        app.post("/contacts", key, json!({ "email": "a@example.com", "data": { "plan": "pro" } })).await;
    let (status, _) = app
        .call(
            Method::Patch,
            &format!("/contacts/{}", contact["id"].as_str().unwrap()),
            key,
            Some(json!({ "subscribed": false })),
        )
        .await;
    assert_eq!(status, Status::Ok);
    let (status, computed) =
        app.post(&format!("/segments/{}/compute", segment["id"].as_str().unwrap()), key, json!({})).await;
    assert!(status == Status::Ok || status == Status::Accepted, "{computed}");
    app.run_jobs_until("both workflows ran", async || {
        executions(app, key, &on_unsubscribe, "?status=COMPLETED").await.len() == 1
            && executions(app, key, &on_entry, "?status=COMPLETED").await.len() == 1
    })
    .await;
    let ex = &executions(app, key, &on_unsubscribe, "").await[0];
    assert_eq!(ex["context"]["event"]["source"], "api", "{ex}");
}

#[rocket::async_test]
async fn a_custom_recipient_hears_about_the_contact_without_acting_for_them() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let tpl =
        template(&room, "MARKETING", "New lead {{ contact.email }}", "<p>{{ event.source }}: {{ plan }}</p>")
            .await;
    let (id, _) = workflow(
        &room.app,
        key,
        Some("lead"),
        &[(
            "tell",
            "SEND_EMAIL",
            json!({ "templateId": tpl, "recipient": { "type": "CUSTOM", "email": "Sales@Example.com" } }),
        )],
        &[("trigger", "tell", None)],
    )
    .await;
    // Unsubscribed from marketing: the contact would get nothing, but the team still hears.
    let (status, _) = room
        .app
        .post(
            "/contacts",
            key,
            json!({ "email": "lead@example.com", "subscribed": false, "data": { "plan": "pro" } }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    track(&room, "lead@example.com", "lead", json!({ "source": "pricing page" })).await;
    let messages = room.deliver(1).await;
    assert_eq!(messages[0].to, vec!["sales@example.com".to_string()]);
    let raw = String::from_utf8_lossy(&messages[0].data).to_string();
    assert!(raw.contains("Subject: New lead lead@example.com"), "{raw}");
    let ex = execution_of(&room.app, key, &id, "lead@example.com").await;
    let email = room.email(ex["steps"][1]["output"]["emailId"].as_str().unwrap());
    assert_eq!(email.contact_id, None, "not the contact's message: no events or links on them");
    assert_eq!(email.to_email, "sales@example.com");
}

#[tokio::test]
async fn a_webhook_that_does_not_answer_in_time_is_given_up() {
    use tidings::adapters::outbound_http::{Call, Caller};
    let receiver = HttpReceiver::start();
    receiver.delay(std::time::Duration::from_secs(2));
    let dns = tidings::adapters::dns::Dns::new(&tidings::config::DnsConfig::default());
    let caller = Caller::new(dns, true, std::time::Duration::from_millis(300));
    let call = Call { method: "GET".into(), url: receiver.url("/slow"), headers: vec![], body: None };
    let started = std::time::Instant::now();
    let answer = caller.call(&call).await;
    assert_eq!(answer.unwrap_err(), "no answer within the time limit");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "it did not wait for the answer");
    receiver.delay(std::time::Duration::ZERO);
    let answered = caller.call(&call).await.unwrap();
    assert_eq!(answered.status, 200);
}

#[rocket::async_test]
async fn a_wait_in_a_loop_does_not_grow_the_context_without_bound() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let (id, _) = workflow(
        &room.app,
        key,
        Some("start"),
        &[("wait", "WAIT_FOR_EVENT", json!({ "eventName": "ping" }))],
        &[("trigger", "wait", None), ("wait", "wait", Some("event"))],
    )
    .await;
    track(&room, "loop@example.com", "start", json!({})).await;
    let app = &room.app;
    app.run_jobs_until("it waits", async || executions(app, key, &id, "?status=WAITING").await.len() == 1)
        .await;
    for round in 0..4 {
        track(
            &room,
            "loop@example.com",
            "ping",
            json!({ format!("k{round}"): { "value": "x".repeat(30_000), "persistent": false } }),
        )
        .await;
        app.run_jobs_until("it waits again", async || {
            executions(app, key, &id, "?status=WAITING").await.len() == 1
        })
        .await;
    }
    let ex = execution_of(app, key, &id, "loop@example.com").await;
    let size = ex["context"].to_string().len();
    assert!(size <= 2 * 32_000 + 100, "the context stays bounded: {size} bytes");
    assert!(ex["context"]["event"]["k3"].is_string(), "the latest event's data is there");
    assert_eq!(ex["steps"].as_array().unwrap().len(), 6, "trigger and five waits");
}

#[rocket::async_test]
async fn events_from_delivery_and_bulk_jobs_start_workflows() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let (on_sent, _) = workflow(app, key, Some("email.sent"), &[], &[]).await;
    let (on_unsubscribed, _) = workflow(app, key, Some("contact.unsubscribed"), &[], &[]).await;
    // The relay's acceptance is recorded by the delivery worker, as for campaign mail.
    let tpl = template(&room, "TRANSACTIONAL", "Receipt", "<p>thanks</p>").await;
    room.send_ok(json!({ "to": "buyer@example.com", "template": tpl })).await;
    // A bulk job (a background batch, like an import's) that unsubscribes a contact.
    let (_, leaver) =
        app.post("/contacts", key, json!({ "email": "leaver@example.com", "subscribed": true })).await;
    let (status, queued) =
        app.post("/contacts/bulk-unsubscribe", key, json!({ "contactIds": [leaver["id"]] })).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let completed = || app.store().count("workflow_executions", &[("status", "COMPLETED".into())]);
    app.run_jobs_until("both workflows ran", async || completed() == 2).await;
    let sent = &executions(app, key, &on_sent, "").await[0];
    assert_eq!(sent["contactEmail"], "buyer@example.com");
    assert_eq!(sent["context"]["event"]["subject"], "Receipt", "{sent}");
    let left = &executions(app, key, &on_unsubscribed, "").await[0];
    assert_eq!(
        (left["contactEmail"].clone(), left["context"]["event"]["source"].clone()),
        (json!("leaver@example.com"), json!("bulk"))
    );
}

#[rocket::async_test]
async fn a_send_step_over_the_workflow_cap_fails_with_the_reason() {
    let room = room().await;
    let (app, key) = (&room.app, &room.keys.secret_key.clone());
    let limits = format!("/users/@me/projects/{}/billing-limits", room.keys.id);
    let (status, _, _) =
        app.as_user(Method::Put, &limits, Some(&room.session), Some(json!({ "workflow": 1 }))).await;
    assert_eq!(status, Status::Ok);
    let welcome = template(&room, "TRANSACTIONAL", "Welcome", "<p>hi</p>").await;
    let (flow, _) = workflow(
        app,
        key,
        Some("signup"),
        &[("welcome", "SEND_EMAIL", json!({ "templateId": welcome }))],
        &[("trigger", "welcome", None)],
    )
    .await;
    track(&room, "first@example.com", "signup", json!({})).await;
    track(&room, "second@example.com", "signup", json!({})).await;
    app.run_jobs_until("both executions end", async || {
        executions(app, key, &flow, "?status=COMPLETED").await.len() == 1
            && executions(app, key, &flow, "?status=FAILED").await.len() == 1
    })
    .await;
    let failed = &executions(app, key, &flow, "?status=FAILED").await[0];
    assert!(
        failed["steps"][1]["error"].as_str().unwrap().contains("monthly limit of workflow emails"),
        "{failed}"
    );
    assert_eq!(app.store().count("emails", &[("source_type", "WORKFLOW".into())]), 1);
}
