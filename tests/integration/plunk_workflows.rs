//! Workflows built as a client written against Plunk v2's own API builds them (issue 28): the
//! bodies `Workflows.ts` reads (`WorkflowSchemas`, `WorkflowStepConfigSchemas`), stored in
//! Tidings' form, and then run end to end with the meaning Plunk gives them.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

async fn ok(room: &Mailroom, method: Method, path: &str, body: Value) -> Value {
    let (status, answer) = room.app.call(method, path, &room.keys.secret_key, Some(body.clone())).await;
    assert_eq!(status, Status::Ok, "{path} {body} -> {answer}");
    answer
}

async fn template(room: &Mailroom, name: &str) -> String {
    let body = json!({ "name": name, "subject": "Hi {{ email }}", "body": "<p>Welcome</p>",
        "from": "flows@example.test", "type": "TRANSACTIONAL" });
    ok(room, Method::Post, "/templates", body).await["id"].as_str().unwrap().to_string()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[rocket::async_test]
async fn a_workflow_built_with_plunk_bodies_runs_with_plunk_meanings() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    let (welcome, other) = (template(&room, "Welcome").await, template(&room, "Other").await);

    // WorkflowSchemas.create: {name, description, eventName, enabled, allowReentry}.
    let created = ok(
        &room,
        Method::Post,
        "/workflows",
        json!({ "name": "Onboarding", "description": "welcome",
        "eventName": "signed-up", "enabled": false, "allowReentry": false }),
    )
    .await;
    assert_eq!(created["triggerConfig"], json!({ "eventName": "signed-up" }));
    assert_eq!((created["enabled"].clone(), created["triggerType"].clone()), (json!(false), json!("EVENT")));
    let flow = id(&created);
    let trigger = id(&created["steps"][0]);
    let steps = format!("/workflows/{flow}/steps");
    let transitions = format!("/workflows/{flow}/transitions");

    // WorkflowSchemas.addStep, autoConnect left out (true): each step follows the last.
    let send = ok(
        &room,
        Method::Post,
        &steps,
        json!({ "type": "SEND_EMAIL", "name": "Tell ops",
        "position": { "x": 100, "y": 250 }, "templateId": welcome,
        "config": { "recipient": { "type": "CUSTOM", "customEmail": "ops@example.test" } } }),
    )
    .await;
    assert_eq!(
        send["config"],
        json!({ "templateId": welcome, "recipient": { "type": "CUSTOM", "email": "ops@example.test" } })
    );
    assert_eq!(send["templateId"], json!(welcome));
    let wait = ok(
        &room,
        Method::Post,
        &steps,
        json!({ "type": "WAIT_FOR_EVENT", "name": "Wait for payment",
        "position": { "x": 100, "y": 400 }, "config": { "eventName": "paid", "timeout": 86400 } }),
    )
    .await;
    assert_eq!(wait["config"], json!({ "eventName": "paid", "timeoutSeconds": 86400 }));
    let read = ok(&room, Method::Get, &format!("/workflows/{flow}"), Value::Null).await;
    let edges: Vec<(String, String, Value)> = read["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["fromStepId"].as_str().unwrap().into(),
                t["toStepId"].as_str().unwrap().into(),
                t["branch"].clone(),
            )
        })
        .collect();
    assert_eq!(edges, [(trigger, id(&send), Value::Null), (id(&send), id(&wait), Value::Null)]);

    // Steps joined by hand (autoConnect: false), with Plunk's transition bodies.
    let plain = |kind: &str, name: &str, config: Value| {
        json!({ "type": kind, "name": name,
        "position": { "x": 0, "y": 0 }, "config": config, "autoConnect": false })
    };
    let check = ok(
        &room,
        Method::Post,
        &steps,
        plain(
            "CONDITION",
            "Pro?",
            json!({ "field": "contact.data.plan", "operator": "equals", "value": "pro" }),
        ),
    )
    .await;
    assert_eq!(check["config"]["condition"]["groups"][0]["filters"][0]["field"], "data.plan");
    let never =
        ok(&room, Method::Post, &steps, plain("EXIT", "Never paid", json!({ "reason": "timeout" }))).await;
    let mark = ok(
        &room,
        Method::Post,
        &steps,
        plain(
            "UPDATE_CONTACT",
            "Mark paid",
            json!({ "updates": { "paid": true }, "subscriptionAction": "unsubscribe" }),
        ),
    )
    .await;
    assert_eq!(mark["config"], json!({ "data": { "paid": true }, "subscribed": false }));
    let later =
        ok(&room, Method::Post, &steps, plain("DELAY", "Later", json!({ "amount": 1.5, "unit": "hours" })))
            .await;
    assert_eq!(later["config"], json!({ "amount": 90, "unit": "minutes" }));
    let joined = ok(
        &room,
        Method::Post,
        &transitions,
        json!({ "fromStepId": id(&wait), "toStepId": id(&check), "waitOutcome": "EVENT", "priority": 0 }),
    )
    .await;
    assert_eq!((joined["branch"].clone(), joined["waitOutcome"].clone()), (json!("event"), json!("EVENT")));
    ok(
        &room,
        Method::Post,
        &transitions,
        json!({ "fromStepId": id(&wait), "toStepId": id(&never), "waitOutcome": "TIMEOUT", "priority": 1 }),
    )
    .await;
    let yes = ok(&room, Method::Post, &transitions,
        json!({ "fromStepId": id(&check), "toStepId": id(&mark), "condition": { "branch": "yes" }, "priority": 0 })).await;
    assert_eq!((yes["branch"].clone(), yes["condition"].clone()), (json!("yes"), json!({ "branch": "yes" })));
    ok(
        &room,
        Method::Post,
        &transitions,
        json!({ "fromStepId": id(&check), "toStepId": id(&later), "condition": { "branch": "no" } }),
    )
    .await;
    // Forms that disagree, or name no branch from a CONDITION, are refused.
    for bad in [
        json!({ "fromStepId": id(&later), "toStepId": id(&never), "condition": { "branch": "yes" }, "waitOutcome": "EVENT" }),
        json!({ "fromStepId": id(&check), "toStepId": id(&never), "priority": 0 }),
        json!({ "fromStepId": id(&later), "toStepId": id(&never), "priority": -1 }),
    ] {
        let (status, refused) = room.app.post(&transitions, &key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad} -> {refused}");
    }

    // WorkflowSchemas.updateStep: templateId (nullable), name and position.
    let path = format!("{steps}/{}", id(&send));
    let changed = ok(&room, Method::Patch, &path, json!({ "templateId": other })).await;
    assert_eq!(
        (changed["templateId"].clone(), changed["config"]["recipient"]["email"].clone()),
        (json!(other), json!("ops@example.test"))
    );
    let (status, refused) =
        room.app.call(Method::Patch, &path, &key, Some(json!({ "templateId": null }))).await;
    assert_eq!(status, Status::UnprocessableEntity, "a send step keeps its template: {refused}");
    ok(
        &room,
        Method::Patch,
        &path,
        json!({ "name": "Tell ops again", "position": { "x": 5, "y": 6 }, "templateId": welcome }),
    )
    .await;
    let (status, _) = room
        .app
        .call(Method::Patch, &format!("{steps}/{}", id(&later)), &key, Some(json!({ "templateId": welcome })))
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "only a send step takes a template");

    // WorkflowSchemas.update, then GET /workflows?status=.
    ok(&room, Method::Patch, &format!("/workflows/{flow}"), json!({ "enabled": true })).await;
    let idle = ok(&room, Method::Post, "/workflows", json!({ "name": "Idle", "eventName": "never" })).await;
    let names = |list: &Value| -> Vec<String> {
        list["data"].as_array().unwrap().iter().map(|w| w["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&ok(&room, Method::Get, "/workflows?status=active", Value::Null).await), ["Onboarding"]);
    assert_eq!(names(&ok(&room, Method::Get, "/workflows?status=disabled", Value::Null).await), ["Idle"]);
    assert_eq!(room.app.get("/workflows?status=paused", &key).await.0, Status::BadRequest);
    let enabled_at_once = ok(
        &room,
        Method::Post,
        "/workflows",
        json!({ "name": "At once", "eventName": "go", "enabled": true }),
    )
    .await;
    assert_eq!(enabled_at_once["enabled"], true);
    let (status, refused) =
        room.app.post("/workflows", &key, json!({ "name": "No event", "enabled": true })).await;
    assert_eq!(status, Status::UnprocessableEntity, "an enabled workflow names its event: {refused}");
    let (status, refused) = room
        .app
        .post(
            "/workflows",
            &key,
            json!({ "name": "Two events", "eventName": "a", "triggerConfig": { "eventName": "b" } }),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(idle["enabled"], false);

    // Run: ops hears of the sign-up; the payment passes the condition on contact.data.plan,
    // and the update stores `updates` and unsubscribes.
    let track = |event: &str, data: Value| {
        room.app.post(
            "/v1/track",
            &room.keys.public_key,
            json!({ "email": "ada@example.com", "event": event, "data": data }),
        )
    };
    assert_eq!(track("signed-up", json!({ "plan": "pro" })).await.0, Status::Ok);
    let execution = |status: &'static str| {
        let (app, key, flow) = (&room.app, key.clone(), flow.clone());
        async move {
            let (_, list) = app.get(&format!("/workflows/{flow}/executions"), &key).await;
            list["data"].as_array().is_some_and(|l| l.len() == 1 && l[0]["status"] == status)
        }
    };
    room.app
        .run_jobs_until("waiting for the payment", async || {
            execution("WAITING").await && room.sink.messages().len() == 1
        })
        .await;
    assert_eq!(room.sink.messages()[0].to, ["ops@example.test".to_string()]);
    assert_eq!(track("paid", json!({})).await.0, Status::Ok);
    room.app.run_jobs_until("the execution completed", async || execution("COMPLETED").await).await;
    let (_, found) = room.app.post("/contacts/lookup", &key, json!({ "emails": ["ada@example.com"] })).await;
    let (_, ada) =
        room.app.get(&format!("/contacts/{}", found["data"][0]["id"].as_str().unwrap()), &key).await;
    assert_eq!(
        (ada["data"]["paid"].clone(), ada["subscribed"].clone()),
        (json!(true), json!(false)),
        "{ada}"
    );
}
