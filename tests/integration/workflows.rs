//! Workflows' API (appliance.md §11): the workflow itself, its steps and transitions, the rules
//! a graph change keeps, and what active executions lock.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::send::Mailroom;

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    let (status, created) = app.post("/workflows", key, body).await;
    assert_eq!(status, Status::Ok, "{created}");
    created
}

/// Adds a step left unconnected (unless `body` says otherwise): these tests join steps
/// themselves.
async fn add_step(app: &TestApp, key: &str, workflow: &str, mut body: Value) -> (Status, Value) {
    if body.get("autoConnect").is_none() {
        body["autoConnect"] = json!(false);
    }
    app.post(&format!("/workflows/{workflow}/steps"), key, body).await
}

async fn connect(
    app: &TestApp,
    key: &str,
    workflow: &str,
    from: &str,
    to: &str,
    branch: Option<&str>,
) -> (Status, Value) {
    let mut body = json!({ "fromStepId": from, "toStepId": to });
    if let Some(branch) = branch {
        body["branch"] = json!(branch);
    }
    app.post(&format!("/workflows/{workflow}/transitions"), key, body).await
}

/// The workflow as stored now.
async fn read(app: &TestApp, key: &str, workflow: &str) -> Value {
    let (status, read) = app.get(&format!("/workflows/{workflow}"), key).await;
    assert_eq!(status, Status::Ok, "{read}");
    read
}

#[rocket::async_test]
async fn a_workflow_is_made_disabled_with_its_trigger_and_enabled_once_it_names_an_event() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let created = create(&app, key, json!({ "name": " Onboarding ", "description": "welcome flow" })).await;
    assert_eq!(created["name"], "Onboarding");
    assert_eq!((created["enabled"].clone(), created["triggerType"].clone()), (json!(false), json!("EVENT")));
    assert_eq!(created["allowReentry"], false);
    let steps = created["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0]["type"], "TRIGGER");
    assert_eq!(created["triggerConfig"], json!({}));
    let id = created["id"].as_str().unwrap();

    // Enabling an EVENT workflow needs the event: refused, and nothing changes.
    let (status, refused) =
        app.call(Method::Patch, &format!("/workflows/{id}"), key, Some(json!({ "enabled": true }))).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(read(&app, key, id).await["enabled"], false);

    let (status, enabled) = app
        .call(
            Method::Patch,
            &format!("/workflows/{id}"),
            key,
            Some(
                json!({ "enabled": true, "triggerConfig": { "eventName": "signup" }, "allowReentry": true }),
            ),
        )
        .await;
    assert_eq!(status, Status::Ok, "{enabled}");
    assert_eq!(enabled["triggerConfig"], json!({ "eventName": "signup" }));
    assert_eq!(enabled["steps"][0]["config"], json!({ "eventName": "signup" }), "the trigger step's config");
    assert_eq!((enabled["enabled"].clone(), enabled["allowReentry"].clone()), (json!(true), json!(true)));

    // Event usage lists it.
    let (_, usage) = app.get("/events/signup/usage", key).await;
    assert_eq!(usage["workflows"], json!([{ "id": id, "name": "Onboarding", "enabled": true }]));

    // Unknown fields and a third trigger type are refused.
    let (status, _) = app.post("/workflows", key, json!({ "name": "x", "enabled": true })).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, _) = app
        .call(Method::Patch, &format!("/workflows/{id}"), key, Some(json!({ "triggerType": "CRON" })))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, _) = app.post("/workflows", key, json!({ "description": "no name" })).await;
    assert_eq!(status, Status::UnprocessableEntity);

    let (status, list) = app.get("/workflows", key).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(list["data"][0]["id"], json!(id), "{list}");

    // A public key reaches no workflow endpoint.
    assert_eq!(app.get("/workflows", &keys.public_key).await.0, Status::Unauthorized);
    assert_eq!(
        app.post("/workflows", &keys.public_key, json!({ "name": "x" })).await.0,
        Status::Unauthorized
    );

    // Another project's key sees nothing of it.
    let (_, other) = app.user_with_project("other@example.com").await;
    assert_eq!(app.get(&format!("/workflows/{id}"), &other.secret_key).await.0, Status::NotFound);
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{id}"), &other.secret_key, None).await.0,
        Status::NotFound
    );
    let (_, theirs) = app.get("/workflows", &other.secret_key).await;
    assert_eq!(theirs["data"], json!([]));

    assert_eq!(app.call(Method::Delete, &format!("/workflows/{id}"), key, None).await.0, Status::NoContent);
    assert_eq!(app.get(&format!("/workflows/{id}"), key).await.0, Status::NotFound);
    let (_, usage) = app.get("/events/signup/usage", key).await;
    assert_eq!(usage["workflows"], json!([]), "its references went with it");
}

#[rocket::async_test]
async fn steps_are_checked_for_their_type_and_what_they_name() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.as_str());
    let workflow = create(app, key, json!({ "name": "Steps" })).await;
    let id = workflow["id"].as_str().unwrap();

    let refused = [
        json!({ "type": "TRIGGER", "config": { "eventName": "x" } }),
        json!({ "type": "SLEEP", "config": {} }),
        json!({ "type": "DELAY", "config": { "amount": -1, "unit": "days" } }),
        json!({ "type": "SEND_EMAIL", "config": { "templateId": "no-such-template" } }),
        json!({ "type": "WEBHOOK", "config": { "url": "file:///etc/passwd" } }),
        json!({ "type": "CONDITION", "config": { "condition": { "groups": [{ "filters": [
            { "field": "planet", "operator": "equals", "value": 1 }] }] } } }),
        json!({ "type": "CONDITION", "config": { "condition": { "groups": [{ "filters": [
            { "operator": "memberOfSegment", "value": "no-such-segment" }] }] } } }),
        json!({ "type": "EXIT", "config": {}, "position": { "x": "left" } }),
    ];
    for body in refused {
        let (status, error) = add_step(app, key, id, body.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body} -> {error}");
        assert!(error["error"]["code"].is_string(), "{error}");
    }
    assert_eq!(read(app, key, id).await["steps"].as_array().unwrap().len(), 1, "nothing was added");

    let (_, template) = app
        .post(
            "/templates",
            key,
            json!({ "name": "Welcome", "subject": "Hi", "body": "<p>Hi</p>", "from": "news@example.test" }),
        )
        .await;
    let template = template["id"].as_str().unwrap();
    let (status, send) = add_step(
        app,
        key,
        id,
        json!({ "type": "SEND_EMAIL", "name": "Welcome mail", "config": { "templateId": template }, "position": { "x": 10, "y": 20 } }),
    )
    .await;
    assert_eq!(status, Status::Ok, "{send}");
    assert_eq!(send["config"], json!({ "templateId": template, "recipient": { "type": "CONTACT" } }));
    assert_eq!(send["position"], json!({ "x": 10, "y": 20 }));
    let (status, _) = add_step(
        app,
        key,
        id,
        json!({ "type": "WAIT_FOR_EVENT", "config": { "eventName": "purchase", "timeoutSeconds": 86400 } }),
    )
    .await;
    assert_eq!(status, Status::Ok);
    let (_, usage) = app.get("/events/purchase/usage", key).await;
    assert_eq!(usage["workflows"][0]["id"], json!(id));

    // A config change is checked the same way; the type stays.
    let step = send["id"].as_str().unwrap();
    let path = format!("/workflows/{id}/steps/{step}");
    let (status, _) =
        app.call(Method::Patch, &path, key, Some(json!({ "config": { "templateId": "gone" } }))).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, patched) = app
        .call(
            Method::Patch,
            &path,
            key,
            Some(json!({ "config": { "templateId": template, "recipient": { "type": "CUSTOM", "email": "Ops@Example.org" } } })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{patched}");
    assert_eq!(patched["config"]["recipient"], json!({ "type": "CUSTOM", "email": "ops@example.org" }));
    assert_eq!(patched["type"], "SEND_EMAIL");

    // The trigger step stays.
    let trigger = read(app, key, id).await["steps"][0]["id"].as_str().unwrap().to_string();
    let (status, _) = app.call(Method::Delete, &format!("/workflows/{id}/steps/{trigger}"), key, None).await;
    assert_eq!(status, Status::BadRequest);
}

#[rocket::async_test]
async fn transitions_keep_one_way_per_branch_and_no_loop_without_a_wait() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let workflow = create(&app, key, json!({ "name": "Graph" })).await;
    let id = workflow["id"].as_str().unwrap();
    let trigger = workflow["steps"][0]["id"].as_str().unwrap();
    let step = async |body: Value| add_step(&app, key, id, body).await.1["id"].as_str().unwrap().to_string();
    let condition = step(json!({ "type": "CONDITION", "config": { "condition": { "groups": [{ "filters": [
        { "field": "event.plan", "operator": "equals", "value": "pro" }] }] } } }))
    .await;
    let update = step(json!({ "type": "UPDATE_CONTACT", "config": { "data": { "vip": true } } })).await;
    let delay = step(json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } })).await;
    let exit = step(json!({ "type": "EXIT", "config": { "reason": "not pro" } })).await;

    assert_eq!(connect(&app, key, id, trigger, &condition, None).await.0, Status::Ok);
    let (status, error) = connect(&app, key, id, &condition, &update, None).await;
    assert_eq!(status, Status::UnprocessableEntity, "a condition's transition names its branch: {error}");
    let (status, yes) = connect(&app, key, id, &condition, &update, Some("yes")).await;
    assert_eq!((status, yes["branch"].clone()), (Status::Ok, json!("yes")));
    assert_eq!(
        connect(&app, key, id, &condition, &exit, Some("yes")).await.0,
        Status::Conflict,
        "yes is taken"
    );
    assert_eq!(connect(&app, key, id, &condition, &exit, Some("no")).await.0, Status::Ok);
    assert_eq!(
        connect(&app, key, id, &exit, &update, None).await.0,
        Status::UnprocessableEntity,
        "nothing after an EXIT"
    );
    assert_eq!(
        connect(&app, key, id, &update, trigger, None).await.0,
        Status::UnprocessableEntity,
        "nothing into the trigger"
    );
    // update → condition would loop without waiting; through the delay it may.
    let (status, error) = connect(&app, key, id, &update, &condition, None).await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(error["error"]["errors"][0]["code"], "waitless_cycle", "{error}");
    assert_eq!(connect(&app, key, id, &update, &delay, None).await.0, Status::Ok);
    assert_eq!(connect(&app, key, id, &delay, &condition, None).await.0, Status::Ok);
    assert_eq!(read(&app, key, id).await["transitions"].as_array().unwrap().len(), 5);

    // Splicing the update out: the condition's yes now goes to the delay.
    let (status, _) =
        app.call(Method::Delete, &format!("/workflows/{id}/steps/{update}?splice=true"), key, None).await;
    assert_eq!(status, Status::NoContent);
    let graph = read(&app, key, id).await;
    let ways: Vec<(Value, Value, Value)> = graph["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["fromStepId"].clone(), t["toStepId"].clone(), t["branch"].clone()))
        .collect();
    assert!(ways.contains(&(json!(condition), json!(delay), json!("yes"))), "{ways:?}");
    assert_eq!(ways.len(), 4, "{ways:?}");

    // The condition branches two ways, so it cannot be spliced out; deleted plainly, its
    // transitions go with it.
    let path = format!("/workflows/{id}/steps/{condition}");
    assert_eq!(
        app.call(Method::Delete, &format!("{path}?splice=true"), key, None).await.0,
        Status::BadRequest
    );
    assert_eq!(app.call(Method::Delete, &path, key, None).await.0, Status::NoContent);
    assert_eq!(read(&app, key, id).await["transitions"].as_array().unwrap().len(), 0);

    let t = connect(&app, key, id, trigger, &delay, None).await.1["id"].as_str().unwrap().to_string();
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{id}/transitions/{t}"), key, None).await.0,
        Status::NoContent
    );
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{id}/transitions/{t}"), key, None).await.0,
        Status::NotFound
    );
}

#[rocket::async_test]
async fn while_executions_are_active_only_step_configs_change_and_the_workflow_stays() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let workflow =
        create(&app, key, json!({ "name": "Busy", "triggerConfig": { "eventName": "signup" } })).await;
    let id = workflow["id"].as_str().unwrap();
    let trigger = workflow["steps"][0]["id"].as_str().unwrap();
    let (_, delay) =
        add_step(&app, key, id, json!({ "type": "DELAY", "config": { "amount": 1, "unit": "hours" } })).await;
    let delay = delay["id"].as_str().unwrap();
    let (_, link) = connect(&app, key, id, trigger, delay, None).await;
    let (_, contact) = app.post("/contacts", key, json!({ "email": "a@example.org" })).await;
    // An execution waiting at the delay (the engine makes these; here it is put in place).
    app.store().insert(
        "workflow_executions",
        &[
            ("id", "e1".into()),
            ("workflow_id", id.into()),
            ("project_id", (&keys.id).into()),
            ("contact_id", contact["id"].as_str().unwrap().into()),
            ("status", "WAITING".into()),
            ("current_step_id", delay.into()),
            ("due_at", 0.into()),
            ("started_at", 0.into()),
            ("updated_at", 0.into()),
        ],
    );

    let before = read(&app, key, id).await;
    let (status, error) = add_step(&app, key, id, json!({ "type": "EXIT", "config": {} })).await;
    assert_eq!(status, Status::Conflict, "{error}");
    assert_eq!(error["error"]["details"]["activeExecutions"], 1);
    let t = link["id"].as_str().unwrap();
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{id}/transitions/{t}"), key, None).await.0,
        Status::Conflict
    );
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{id}/steps/{delay}"), key, None).await.0,
        Status::Conflict
    );
    assert_eq!(connect(&app, key, id, delay, delay, None).await.0, Status::Conflict);
    assert_eq!(app.call(Method::Delete, &format!("/workflows/{id}"), key, None).await.0, Status::Conflict);
    let after = read(&app, key, id).await;
    assert_eq!(
        (after["steps"].clone(), after["transitions"].clone()),
        (before["steps"].clone(), before["transitions"].clone())
    );

    let (status, patched) = app
        .call(
            Method::Patch,
            &format!("/workflows/{id}/steps/{delay}"),
            key,
            Some(json!({ "config": { "amount": 2, "unit": "hours" } })),
        )
        .await;
    assert_eq!((status, patched["config"]["amount"].clone()), (Status::Ok, json!(2)), "{patched}");
    let (status, _) =
        app.call(Method::Patch, &format!("/workflows/{id}"), key, Some(json!({ "enabled": true }))).await;
    assert_eq!(status, Status::Ok, "switching a workflow on or off is no structure change");
}
