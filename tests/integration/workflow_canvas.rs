//! What the workflow canvas asks of the API (issue 33, item 5, as Plunk v2 has them): a step
//! put in the middle of a transition, a workflow duplicated, and how many executions are at
//! each step and went through it.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::workflow_runs::{execution_of, track, workflow};

/// The transitions as (from, to, branch), `-` for none, sorted.
fn edges(detail: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = detail["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["fromStepId"].as_str().unwrap().to_string(),
                t["toStepId"].as_str().unwrap().to_string(),
                t["branch"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[rocket::async_test]
async fn a_step_goes_into_the_middle_of_a_transition() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let condition = json!({ "condition": { "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] } });
    let (id, steps) = workflow(
        &app,
        key,
        None,
        &[
            ("check", "CONDITION", condition.clone()),
            ("tag", "UPDATE_CONTACT", json!({ "data": { "vip": true } })),
        ],
        &[("trigger", "check", None), ("check", "tag", Some("yes"))],
    )
    .await;
    app.call(Method::Patch, &format!("/workflows/{id}"), key, Some(json!({ "enabled": false }))).await;
    let (_, detail) = app.get(&format!("/workflows/{id}"), key).await;
    let on_yes =
        detail["transitions"].as_array().unwrap().iter().find(|t| t["branch"] == "yes").unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();

    // check -yes-> tag becomes check -yes-> delay -> tag.
    let path = format!("/workflows/{id}/transitions/{on_yes}/insert-step");
    let body = json!({ "type": "DELAY", "name": "Wait a day", "config": { "amount": 1, "unit": "days" }, "position": { "x": 10, "y": 20 } });
    let (status, delay) = app.post(&path, key, body).await;
    assert_eq!(status, Status::Ok, "{delay}");
    let delay_id = delay["id"].as_str().unwrap().to_string();
    let (_, detail) = app.get(&format!("/workflows/{id}"), key).await;
    let mut expected = vec![
        (steps["trigger"].clone(), steps["check"].clone(), "-".to_string()),
        (steps["check"].clone(), delay_id.clone(), "yes".to_string()),
        (delay_id.clone(), steps["tag"].clone(), "-".to_string()),
    ];
    expected.sort();
    assert_eq!(edges(&detail), expected);

    // A branching step goes in on its first branch: trigger -> wait -event-> check.
    let on_trigger = detail["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["fromStepId"] == steps["trigger"].as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let body =
        json!({ "type": "WAIT_FOR_EVENT", "config": { "eventName": "activated", "timeoutSeconds": 3600 } });
    let (status, wait) =
        app.post(&format!("/workflows/{id}/transitions/{on_trigger}/insert-step"), key, body).await;
    assert_eq!(status, Status::Ok, "{wait}");
    let (_, after) = app.get(&format!("/workflows/{id}"), key).await;
    assert!(
        edges(&after).contains(&(
            wait["id"].as_str().unwrap().to_string(),
            steps["check"].clone(),
            "event".to_string()
        )),
        "{after}"
    );

    // Refused, and the graph unchanged: an EXIT (nothing may follow it), a transition of no
    // such id or of another workflow, a bad config, and any change while executions run.
    let before = edges(&after);
    let (other, _) = workflow(&app, key, None, &[("x", "EXIT", json!({}))], &[("trigger", "x", None)]).await;
    let (_, theirs) = app.get(&format!("/workflows/{other}"), key).await;
    let their_transition = theirs["transitions"][0]["id"].as_str().unwrap().to_string();
    let any = after["transitions"][0]["id"].as_str().unwrap().to_string();
    for (transition, body, want) in [
        (any.clone(), json!({ "type": "EXIT", "config": {} }), Status::UnprocessableEntity),
        (
            "00000000-0000-0000-0000-000000000000".into(),
            json!({ "type": "EXIT", "config": {} }),
            Status::NotFound,
        ),
        (
            their_transition,
            json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } }),
            Status::NotFound,
        ),
        (
            any.clone(),
            json!({ "type": "DELAY", "config": { "amount": -1, "unit": "days" } }),
            Status::UnprocessableEntity,
        ),
        (any.clone(), json!({ "type": "TRIGGER", "config": {} }), Status::UnprocessableEntity),
    ] {
        let (status, refused) = app
            .post(&format!("/workflows/{id}/transitions/{transition}/insert-step"), key, body.clone())
            .await;
        assert_eq!(status, want, "{body}: {refused}");
        assert!(refused["error"]["message"].is_string(), "{refused}");
    }
    let steps_before = app.store().count("workflow_steps", &[("workflow_id", id.as_str().into())]);
    app.store().insert(
        "workflow_executions",
        &[
            ("id", "running".into()),
            ("workflow_id", id.as_str().into()),
            ("project_id", keys.id.as_str().into()),
            (
                "contact_id",
                app.post("/contacts", key, json!({ "email": "a@example.com" })).await.1["id"]
                    .as_str()
                    .unwrap()
                    .into(),
            ),
            ("status", "WAITING".into()),
            ("started_at", 1.into()),
            ("updated_at", 1.into()),
        ],
    );
    let body = json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } });
    let (status, _) = app.post(&format!("/workflows/{id}/transitions/{any}/insert-step"), key, body).await;
    assert_eq!(status, Status::Conflict, "the graph is locked while executions run");
    let (_, unchanged) = app.get(&format!("/workflows/{id}"), key).await;
    assert_eq!(edges(&unchanged), before);
    assert_eq!(app.store().count("workflow_steps", &[("workflow_id", id.as_str().into())]), steps_before);
}

#[rocket::async_test]
async fn a_duplicate_is_the_same_graph_disabled_under_new_ids() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = &keys.secret_key;
    let condition = json!({ "condition": { "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] } });
    let (id, _) = workflow(
        &app,
        key,
        Some("signed_up"),
        &[
            ("check", "CONDITION", condition),
            ("tag", "UPDATE_CONTACT", json!({ "data": { "vip": true } })),
            ("out", "EXIT", json!({})),
        ],
        &[("trigger", "check", None), ("check", "tag", Some("yes")), ("check", "out", Some("no"))],
    )
    .await;
    let (_, original) = app.get(&format!("/workflows/{id}"), key).await;
    let (status, copy) = app.post(&format!("/workflows/{id}/duplicate"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{copy}");
    assert_eq!(copy["name"], json!("flow (copy)"));
    assert_eq!((copy["enabled"].clone(), original["enabled"].clone()), (json!(false), json!(true)));
    assert_eq!(copy["triggerConfig"], original["triggerConfig"]);
    assert_ne!(copy["id"], original["id"]);
    let shape = |w: &Value| {
        let name_of = |id: &str| {
            w["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .map(|s| (s["type"].clone(), s["config"].clone()))
                .unwrap()
        };
        let mut out: Vec<String> = edges(w)
            .iter()
            .map(|(from, to, branch)| format!("{:?} -{branch}-> {:?}", name_of(from), name_of(to)))
            .collect();
        out.sort();
        out
    };
    assert_eq!(shape(&copy), shape(&original), "the same graph");
    let ids = |w: &Value| w["steps"].as_array().unwrap().iter().map(|s| s["id"].clone()).collect::<Vec<_>>();
    assert!(ids(&copy).iter().all(|i| !ids(&original).contains(i)), "new step ids");

    // The copy is its own: deleting it leaves the original whole; another project cannot copy.
    let (_, other) = app.user_with_project("other@example.com").await;
    let (status, _) = app.post(&format!("/workflows/{id}/duplicate"), &other.secret_key, json!({})).await;
    assert_eq!(status, Status::NotFound);
    let copy_id = copy["id"].as_str().unwrap();
    assert_eq!(
        app.call(Method::Delete, &format!("/workflows/{copy_id}"), key, None).await.0,
        Status::NoContent
    );
    let (_, still) = app.get(&format!("/workflows/{id}"), key).await;
    assert_eq!(shape(&still), shape(&original));

    // A project holds at most MAX_WORKFLOWS: a copy is one request, so it is counted too.
    let max = tidings::core::workflows::MAX_WORKFLOWS as i64;
    for n in 1..max {
        app.store().insert(
            "workflows",
            &[
                ("id", format!("filler-{n}").as_str().into()),
                ("project_id", keys.id.as_str().into()),
                ("name", "filler".into()),
                ("trigger_type", "EVENT".into()),
                ("created_at", 1.into()),
                ("updated_at", 1.into()),
            ],
        );
    }
    let full = app.store().count("workflows", &[("project_id", keys.id.as_str().into())]);
    assert_eq!(full, max);
    for (path, body) in [
        (format!("/workflows/{id}/duplicate"), json!({})),
        ("/workflows".to_string(), json!({ "name": "one more" })),
    ] {
        let (status, refused) = app.post(&path, key, body).await;
        assert_eq!(status, Status::BadRequest, "{path}: {refused}");
        assert!(refused["error"]["message"].as_str().unwrap().contains("at most"), "{refused}");
    }
    assert_eq!(app.store().count("workflows", &[("project_id", keys.id.as_str().into())]), full);
}

#[rocket::async_test]
async fn step_counts_say_where_executions_are_and_what_they_went_through() {
    let room = crate::workflow_runs::room().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let (id, steps) = workflow(
        app,
        key,
        Some("signed_up"),
        &[
            ("tag", "UPDATE_CONTACT", json!({ "data": { "vip": true } })),
            ("delay", "DELAY", json!({ "amount": 1, "unit": "days" })),
        ],
        &[("trigger", "tag", None), ("tag", "delay", None)],
    )
    .await;
    for email in ["a@example.com", "b@example.com"] {
        track(&room, email, "signed_up", json!({})).await;
    }
    app.run_jobs_until("both wait at the delay", async || {
        let (_, counts) = app.get(&format!("/workflows/{id}/step-counts"), key).await;
        counts["steps"]
            .as_array()
            .is_some_and(|s| s.iter().any(|c| c["stepId"] == steps["delay"].as_str() && c["active"] == 2))
    })
    .await;
    let (status, counts) = app.get(&format!("/workflows/{id}/step-counts"), key).await;
    assert_eq!(status, Status::Ok, "{counts}");
    let of = |counts: &Value, label: &str| -> (i64, i64, i64) {
        let c = counts["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["stepId"] == steps[label].as_str())
            .unwrap();
        (c["active"].as_i64().unwrap(), c["completed"].as_i64().unwrap(), c["failed"].as_i64().unwrap())
    };
    assert_eq!(of(&counts, "trigger"), (0, 2, 0), "{counts}");
    assert_eq!(of(&counts, "tag"), (0, 2, 0));
    assert_eq!(of(&counts, "delay"), (2, 0, 0));
    assert_eq!(
        app.get(&format!("/workflows/{id}/step-execution-counts"), key).await.1,
        counts,
        "Plunk's name"
    );

    // One delay ends: counted once, even when its run is written again as a restart would.
    let ex = execution_of(app, key, &id, "a@example.com").await;
    crate::workflow_runs::come_due(app, ex["id"].as_str().unwrap());
    app.run_jobs_until("a finishes", async || {
        execution_of(app, key, &id, "a@example.com").await["status"] == "COMPLETED"
    })
    .await;
    let (_, counts) = app.get(&format!("/workflows/{id}/step-counts"), key).await;
    assert_eq!(of(&counts, "delay"), (1, 1, 0), "{counts}");
    let rewritten = app.store().set(
        "workflow_execution_steps",
        &[("status", "COMPLETED".into())],
        &[("execution_id", ex["id"].as_str().unwrap().into()), ("step_id", steps["delay"].as_str().into())],
    );
    assert_eq!(rewritten, 1);
    {
        let conn = app.state.db.conn().unwrap();
        let run = tidings::db::executions::last_run(&conn, ex["id"].as_str().unwrap()).unwrap().unwrap();
        tidings::db::executions::put_run(&conn, &run).unwrap();
    }
    let (_, again) = app.get(&format!("/workflows/{id}/step-counts"), key).await;
    assert_eq!(again, counts, "a run written twice counts once");

    let (_, other) = app.user_with_project("other@example.com").await;
    assert_eq!(app.get(&format!("/workflows/{id}/step-counts"), &other.secret_key).await.0, Status::NotFound);
}
