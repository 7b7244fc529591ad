//! Tracked segment membership: entry and exit events exactly once, an interrupted computation
//! resumed without repeats, and the scheduler's refresh.

use rocket::http::Status;
use serde_json::json;

use crate::common::TestApp;
use crate::common::store::NotNull;
use crate::segments::{app_with_project, contact, create, membership_events, plan_is, set_plan};

#[rocket::async_test]
async fn compute_emits_entry_and_exit_exactly_once() {
    let (app, keys) = app_with_project().await;
    let a = contact(&app, &keys, "a@example.com", json!({ "plan": "pro" })).await;
    let b = contact(&app, &keys, "b@example.com", json!({ "plan": "pro" })).await;
    let c = contact(&app, &keys, "c@example.com", json!({ "plan": "free" })).await;
    let segment = create(
        &app,
        &keys,
        json!({ "name": "Pro users", "condition": plan_is("pro"), "trackMembership": true }),
    )
    .await;
    let id = segment["id"].as_str().unwrap();
    let compute = format!("/segments/{id}/compute");

    let (status, done) = app.post(&compute, &keys.secret_key, json!({})).await;
    assert_eq!(status, Status::Ok, "{done}");
    assert_eq!(done["memberCount"], json!(2));
    assert_eq!(
        (done["computation"]["entered"].clone(), done["computation"]["exited"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(done["computation"]["running"], json!(false));
    assert_eq!(
        membership_events(&app),
        [
            ("segment.pro-users.entry".to_string(), a.clone()),
            ("segment.pro-users.entry".to_string(), b.clone())
        ]
    );
    let (_, again) = app.post(&compute, &keys.secret_key, json!({})).await;
    assert_eq!(
        (again["computation"]["entered"].clone(), again["computation"]["exited"].clone()),
        (json!(0), json!(0))
    );
    assert_eq!(membership_events(&app).len(), 2, "a second compute emits nothing");

    set_plan(&app, &keys, &a, "free").await;
    set_plan(&app, &keys, &c, "pro").await;
    // Refresh counts but writes no membership and emits nothing.
    let (_, refreshed) = app.post(&format!("/segments/{id}/refresh"), &keys.secret_key, json!({})).await;
    assert_eq!(refreshed["memberCount"], json!(2));
    assert_eq!(membership_events(&app).len(), 2);
    let seq: i64 = app.store().value("contacts", "seq", &[("id", (&a).into())]);
    let stored = [("segment_id", id.into()), ("contact_seq", seq.into())];
    assert_eq!(app.store().count("segment_members", &stored), 1);

    let (_, third) = app.post(&compute, &keys.secret_key, json!({})).await;
    assert_eq!(
        (third["computation"]["entered"].clone(), third["computation"]["exited"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        membership_events(&app)[2..],
        [
            ("segment.pro-users.exit".to_string(), a.clone()),
            ("segment.pro-users.entry".to_string(), c.clone())
        ]
    );
    let (_, history) =
        app.get(&format!("/events/contact/{a}?name=segment.pro-users.exit"), &keys.secret_key).await;
    assert_eq!(history["data"][0]["data"], json!({ "segmentId": id, "segmentName": "Pro users" }));

    // Tracked events can be tracked by nobody else, and other segments can filter on them.
    let (status, _) = app
        .post(
            "/v1/track",
            &keys.public_key,
            json!({ "email": "b@example.com", "event": "segment.pro-users.entry" }),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity);

    let untracked = create(&app, &keys, json!({ "name": "Untracked", "condition": plan_is("pro") })).await;
    let (status, _) = app
        .post(
            &format!("/segments/{}/compute", untracked["id"].as_str().unwrap()),
            &keys.secret_key,
            json!({}),
        )
        .await;
    assert_eq!(status, Status::BadRequest);
    let _ = b;
}

#[rocket::async_test]
async fn an_interrupted_compute_resumes_without_repeating_events() {
    let (app, keys) = app_with_project().await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(contact(&app, &keys, &format!("u{i}@example.com"), json!({ "plan": "pro" })).await);
    }
    let segment = create(
        &app,
        &keys,
        json!({ "name": "All pro", "condition": plan_is("pro"), "trackMembership": true }),
    )
    .await;
    let id = segment["id"].as_str().unwrap().to_string();
    let now = tidings::clock::now_ms();
    {
        let mut conn = app.state.db.conn().unwrap();
        // Two batches of two commit; a third is rolled back, as if the process died mid-batch.
        for _ in 0..2 {
            let step =
                tidings::db::write_tx(&mut conn, |tx| tidings::core::segments::compute_step(tx, &id, 2, now))
                    .unwrap();
            assert_eq!(step, tidings::core::segments::Step::Running);
        }
        let tx = conn.transaction().unwrap();
        tidings::core::segments::compute_step(&tx, &id, 2, now).unwrap();
        tx.rollback().unwrap();
    }
    assert_eq!(membership_events(&app).len(), 4);
    // The queued compute job (from creation) carries on from the stored cursor.
    app.run_jobs_until("the computation", async || {
        app.store().count("segments", &[("id", (&id).into()), ("computed_at", NotNull)]) == 1
    })
    .await;
    let events = membership_events(&app);
    assert_eq!(events.len(), 7, "{events:?}");
    let mut contacts: Vec<&String> = events.iter().map(|(_, c)| c).collect();
    contacts.sort();
    contacts.dedup();
    assert_eq!(contacts.len(), 7, "one entry per contact");
    let (_, done) = app.get(&format!("/segments/{id}"), &keys.secret_key).await;
    assert_eq!(done["memberCount"], json!(7));
    // (The periodic refresh may have started another run since; it finds nothing new.)
    assert_eq!(done["computation"]["exited"], json!(0));
}

#[rocket::async_test]
async fn the_scheduler_refreshes_counts_and_computes_tracked_segments() {
    let app = TestApp::with(|c| c.scheduler.segment_refresh_secs = 1).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let counted = create(&app, &keys, json!({ "name": "Counted", "condition": plan_is("pro") })).await;
    let tracked = create(
        &app,
        &keys,
        json!({ "name": "Tracked", "condition": plan_is("pro"), "trackMembership": true }),
    )
    .await;
    assert_eq!(counted["memberCount"], json!(0));
    let x = contact(&app, &keys, "x@example.com", json!({ "plan": "pro" })).await;
    let counted_path = format!("/segments/{}", counted["id"].as_str().unwrap());
    let tracked_path = format!("/segments/{}", tracked["id"].as_str().unwrap());
    app.run_jobs_until("a refresh and a computation", async || {
        let (_, c) = app.get(&counted_path, &keys.secret_key).await;
        let (_, t) = app.get(&tracked_path, &keys.secret_key).await;
        c["memberCount"] == json!(1) && t["memberCount"] == json!(1)
    })
    .await;
    assert_eq!(
        membership_events(&app),
        [("segment.tracked.entry".to_string(), x)],
        "only the tracked segment emits"
    );
}
