//! Issue 29: what one signed-up user (or one project's public key) could do to the server or to
//! another tenant, each reproduced as it was found, with the structural defence it now meets.

use rocket::http::Status;
use serde_json::{Value, json};

use crate::common::TestApp;

/// A project's secret key on a fresh server.
async fn project() -> (TestApp, String) {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("attacker@example.com").await;
    (app, keys.secret_key)
}

/// Item 13: an event pattern that is not ASCII was cut on a byte inside a character (500).
#[rocket::async_test]
async fn webhook_patterns_are_text_not_bytes() {
    let (app, key) = project().await;
    // A public address, not a name: saving an endpoint looks a name up, and this app has no DNS
    // server of its own (nothing is called here).
    let body = json!({ "url": "https://1.1.1.1/x", "events": ["é", "naïve.*"] });
    let (status, created) = app.post("/webhooks", &key, body).await;
    assert_eq!(status, Status::Ok, "{created}");
    assert_eq!(created["events"], json!(["é", "naïve.*"]));
    let (status, refused) =
        app.post("/webhooks", &key, json!({ "url": "https://1.1.1.1", "events": ["é*é"] })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
}

/// A template whose tags hold text that is not ASCII was scanned byte by byte and cut inside a
/// character (found by the never-panic property test beside the checkers).
#[rocket::async_test]
async fn templates_with_any_text_in_their_tags_are_checked_not_crashed_on() {
    let (app, key) = project().await;
    for body in ["{{ \"ü }} {% if 'é %}", "{{ ܵA }}", "{% assign x = \"ﬀ\" %}{{ x }}"] {
        let (status, answer) =
            app.post("/templates/preview", &key, json!({ "subject": "s", "body": body })).await;
        assert!(status == Status::Ok || status == Status::UnprocessableEntity, "{body:?}: {status} {answer}");
    }
}

/// Item 14: a condition of 1,000 groups reached SQLite as an expression 1,000 deep (500).
#[rocket::async_test]
async fn a_condition_of_a_thousand_groups_is_refused_by_name() {
    let (app, key) = project().await;
    let groups: Vec<Value> = (0..1000)
        .map(|n| json!({ "filters": [{ "field": "data.n", "operator": "equals", "value": n }] }))
        .collect();
    let body = json!({ "name": "wide", "condition": { "logic": "OR", "groups": groups } });
    let (status, refused) = app.post("/segments", &key, body).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["code"], "too_big");
    // Within the caps, the widest tree is counted (its SQL is balanced, not a chain).
    let groups: Vec<Value> = (0..100)
        .map(|n| json!({ "filters": [{ "field": "data.n", "operator": "equals", "value": n }] }))
        .collect();
    let (status, counted) = app
        .post(
            "/segments",
            &key,
            json!({ "name": "hundred", "condition": { "logic": "OR", "groups": groups } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{counted}");
}

/// Item 1: `to - from` wrapped around for instants near i64's ends, so the range cap passed and
/// the time series built ~1e11 buckets (the process aborted allocating 2.4 GB).
#[rocket::async_test]
async fn ranges_are_instants_within_ten_thousand_years_and_their_caps_hold() {
    let (app, key) = project().await;
    let far = "from=-4611686018427387904&to=4611686018427387904";
    // (`/analytics/top-campaigns` ranks every sent campaign and takes no period.)
    for path in ["/analytics/timeseries", "/activity/stats", "/analytics/top-events"] {
        let (status, refused) = app.get(&format!("{path}?{far}"), &key).await;
        assert_eq!(status, Status::BadRequest, "{path}: {refused}");
        let (status, refused) = app.get(&format!("{path}?from=0&to=253402300799999"), &key).await;
        assert_eq!(status, Status::BadRequest, "{path}: the cap holds: {refused}");
        let (status, answer) = app.get(&format!("{path}?from=2026-01-01&to=2026-01-31"), &key).await;
        assert_eq!(status, Status::Ok, "{path}: {answer}");
    }
    let (status, _) = app.get("/analytics/timeseries?interval=hour&from=-1&to=3600000", &key).await;
    assert_eq!(status, Status::BadRequest, "before 1970");
    // (A campaign's `scheduledFor` in milliseconds is held to the same window: core::campaigns.)
}

/// The class of item 1: every query parameter of every GET the document describes, given the
/// extremes of a 64-bit integer (and beyond), is answered without a server error, so the next
/// range, limit or offset parameter meets the same check.
#[rocket::async_test]
async fn every_query_parameter_takes_extreme_numbers_without_a_server_error() {
    let (app, key) = project().await;
    let doc = app.client.get("/openapi.json").dispatch().await.into_json::<Value>().await.unwrap();
    let extremes = [
        "-9223372036854775808",
        "9223372036854775807",
        "-4611686018427387904",
        "99999999999999999999",
        "1e309",
        "-1",
    ];
    let mut asked = 0;
    for (path, operations) in doc["paths"].as_object().unwrap() {
        let Some(get) = operations.get("get") else { continue };
        if path.contains('{') {
            continue;
        }
        let params: Vec<&str> = get["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "query")
            .filter_map(|p| p["name"].as_str())
            .collect();
        // Two at a time, one at each end (a `from` low and a `to` high is how ranges wrapped).
        for (i, a) in params.iter().enumerate() {
            for b in &params[i + 1..] {
                for (low, high) in [
                    ("-4611686018427387904", "4611686018427387904"),
                    ("4611686018427387904", "-4611686018427387904"),
                ] {
                    let uri = format!("{path}?{a}={low}&{b}={high}");
                    let (status, answer) = app.get(&uri, &key).await;
                    assert!(status.code < 500, "{uri}: {status} {answer}");
                }
            }
        }
        for param in params {
            for value in extremes {
                let uri = format!("{path}?{param}={value}");
                let started = std::time::Instant::now();
                let (status, answer) = app.get(&uri, &key).await;
                assert!(status.code < 500, "{uri}: {status} {answer}");
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(5),
                    "{uri} took {:?}",
                    started.elapsed()
                );
                asked += 1;
            }
        }
    }
    assert!(asked > 100, "only {asked} requests: the document lost its parameters?");
}

/// Item 12: a public key grew the field catalogue without bound (20 tracks made 30,004 fields,
/// and `GET /workflows/fields` answered 4.6 MB); event names likewise.
#[rocket::async_test]
async fn catalogues_are_capped_and_the_field_lists_stay_small() {
    let app = TestApp::with(|c| {
        c.limits.fields_per_project = 10;
        c.limits.event_names_per_project = 3;
    })
    .await;
    let (_, keys) = app.user_with_project("attacker@example.com").await;
    let (key, public) = (keys.secret_key.clone(), keys.public_key.clone());
    let track = |event: &str, data: Value| {
        app.post("/v1/track", &public, json!({ "email": "ada@example.com", "event": event, "data": data }))
    };
    let data = |from: usize, to: usize| -> Value {
        Value::Object((from..to).map(|n| (format!("k{n}"), json!(n))).collect())
    };
    assert_eq!(track("signup", data(0, 8)).await.0, Status::Ok);
    let (status, refused) = track("signup", data(8, 12)).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["code"], "too_many_fields");
    let (_, fields) = app.get("/contacts/fields", &key).await;
    assert_eq!(
        fields["fields"].as_array().unwrap().iter().filter(|f| f["isCustom"] == true).count(),
        8,
        "nothing of it kept"
    );
    let (_, events) = app.get("/events?name=signup", &key).await;
    assert_eq!(events["total"], 1, "nor the event");
    // Known fields still change at the cap; two more fit; a deleted field frees its place.
    assert_eq!(track("signup", data(0, 10)).await.0, Status::Ok);
    assert_eq!(track("signup", data(10, 11)).await.0, Status::UnprocessableEntity);
    let (status, _) = app.call(rocket::http::Method::Delete, "/contacts/fields/data.k0", &key, None).await;
    assert_eq!(status, Status::Accepted);
    assert_eq!(track("signup", data(10, 11)).await.0, Status::Ok);
    // Through the API and CSV imports alike.
    let (status, refused) =
        app.post("/contacts", &key, json!({ "email": "bob@example.com", "data": data(20, 25) })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");

    // Event names: three, then 422; the service's own names are never refused.
    for name in ["a", "b"] {
        assert_eq!(track(name, json!({})).await.0, Status::Ok, "{name}");
    }
    let (status, refused) = track("d", json!({})).await;
    assert_eq!(
        (status, refused["error"]["errors"][0]["code"].clone()),
        (Status::UnprocessableEntity, json!("too_many_event_names"))
    );
    assert_eq!(track("a", json!({})).await.0, Status::Ok, "a known name is tracked again");
    let (_, names) = app.get("/events/names", &key).await;
    assert_eq!(names.as_array().unwrap().iter().filter(|n| n["reserved"] == false).count(), 3);

    // An event's own data (not kept on the contact) is sampled for the workflow editor within
    // bounds: at most 50 keys a name.
    let wide = Value::Object(
        (0..1000).map(|n| (format!("e{n}"), json!({ "value": n, "persistent": false }))).collect(),
    );
    assert_eq!(track("a", wide).await.0, Status::Ok);
    let (status, fields) = app.get("/workflows/fields", &key).await;
    assert_eq!(status, Status::Ok);
    let a = fields["events"].as_array().unwrap().iter().find(|e| e["name"] == "a").unwrap().clone();
    assert_eq!(a["fields"].as_array().unwrap().len(), 50, "{}", a["fields"].as_array().unwrap().len());
}

/// A template that makes `a` and `b` of 163,840 bytes each without a loop (so no loop tick),
/// then asks for `a` with every "a" replaced by `b`: 27 GB.
pub(crate) fn amplifier(guard: Option<&str>) -> String {
    let grow = "{% assign a = a | append: a %}".repeat(14);
    let body =
        format!("{{% assign a = \"aaaaaaaaaa\" %}}{grow}{{% assign b = a %}}{{{{ a | replace: \"a\", b }}}}");
    match guard {
        Some(condition) => format!("<p>Hi</p>{{% if {condition} %}}{body}{{% endif %}}"),
        None => body,
    }
}

/// Item 2: the replace was made before its size was checked; no loop ran, so the time budget
/// never did either. The process aborted.
#[rocket::async_test]
async fn a_preview_that_multiplies_sizes_is_refused_before_it_allocates() {
    let (app, key) = project().await;
    let started = std::time::Instant::now();
    let (status, refused) =
        app.post("/templates/preview", &key, json!({ "subject": "s", "body": amplifier(None) })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert!(refused.to_string().contains("template limit"), "{refused}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let (status, refused) = app
        .post(
            "/templates",
            &key,
            json!({ "name": "t", "subject": "s",
        "body": amplifier(None), "from": "a@example.test" }),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "refused when saved too: {refused}");
    assert_eq!(app.get("/health", &key).await.0, Status::Ok);
}

/// Item 3: the same behind `{% if email %}` passed the check at queueing (nothing renders
/// without a contact) and took the delivery worker down, again at every restart. Now the render
/// meets the budget: the email fails with the reason, and delivery goes on.
#[rocket::async_test]
async fn a_body_that_multiplies_only_with_a_contact_fails_its_email_not_the_worker() {
    let room = crate::send::Mailroom::new().await;
    let body = json!({ "to": "ada@example.com", "from": "hi@example.test", "subject": "s", "body": amplifier(Some("email")) });
    let ids = room.send_ok(body).await;
    let after = room.send_ok(json!({ "to": "bob@example.com", "from": "hi@example.test", "subject": "s", "body": "<p>ok</p>" })).await;
    room.deliver(1).await;
    room.app.run_jobs_until("the amplifier failed", async || room.email(&ids[0]).status == "FAILED").await;
    let failed = room.email(&ids[0]);
    assert!(
        failed.last_error.as_deref().unwrap_or_default().contains("template limit"),
        "{:?}",
        failed.last_error
    );
    assert_eq!(room.email(&after[0]).status, "SENT", "delivery went on");
}

/// The quarantine, on the built binary: a webhook delivery the server was making when it was
/// killed, twice in a row, is failed for good at the next start, instead of being made (and, were
/// it poison, crashing the server) at every restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_that_stopped_the_process_twice_is_quarantined() {
    use std::time::Duration;
    let dir = tempfile::TempDir::new().unwrap();
    let dns = crate::common::dns_server::DnsServer::start(&["test"]).await;
    let sink = crate::common::smtp_sink::SmtpSink::start();
    let receiver = crate::common::http_receiver::HttpReceiver::start();
    receiver.delay(Duration::from_secs(60));
    let mut server = crate::common::sending::Sending::start(
        dir.path(),
        &dns,
        sink.port,
        &[("TIDINGS_WEBHOOKS__ALLOW_PRIVATE", "true")],
    )
    .await;
    let (key, public) = (server.key.clone(), server.public_key.clone());
    let hook = json!({ "url": receiver.url("/hook"), "events": ["signup"] });
    let (status, endpoint) =
        tokio::task::block_in_place(|| server.server.post_keyed("/webhooks", &key, hook));
    assert_eq!(status, 200, "{endpoint}");
    let track = json!({ "email": "ada@example.com", "event": "signup" });
    let (status, _) = tokio::task::block_in_place(|| server.server.post_keyed("/v1/track", &public, track));
    assert_eq!(status, 200);

    // Killed twice while the delivery is in flight.
    for n in 1..=2 {
        let seen = tokio::task::block_in_place(|| receiver.wait_for(n, Duration::from_secs(30)));
        assert_eq!(seen.len(), n, "the delivery was under way before kill {n}");
        tokio::task::block_in_place(|| {
            server.kill();
            server.restart();
        });
    }
    // The third process fails it at start, and never makes it again.
    let deliveries = format!("/webhooks/{}/deliveries", endpoint["id"].as_str().unwrap());
    let list = tokio::task::block_in_place(|| server.server.get_keyed(&deliveries, &key));
    let delivery = &list["data"][0];
    assert_eq!(delivery["status"], "failed", "{list}");
    assert!(
        delivery["lastError"].as_str().unwrap_or_default().contains("stopped the process twice"),
        "{list}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(receiver.requests().len(), 2, "not tried a third time");
    assert!(server.server.log().contains("stopped the process twice"), "the operator is told");
    server.server.terminate(Duration::from_secs(10));
}

/// Each kind the journal tracks is failed for good by the quarantine, as its own failures are:
/// an email with `email.failed`, a job, a workflow execution at its step; counted once, an item
/// is not failed, and an item a process finished loses its count.
#[rocket::async_test]
async fn the_quarantine_fails_each_kind_of_work_as_its_own_failures_do() {
    use tidings::scheduler::inflight::{Kind, Previous, REASON};
    use tidings::scheduler::quarantine::count_interrupted;
    let room = crate::send::Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    let email = room
        .send_ok(
            json!({ "to": "ada@example.com", "from": "hi@example.test", "subject": "s", "body": "<p>x</p>" }),
        )
        .await
        .remove(0);
    let (status, queued) = room.app.post("/contacts/bulk-subscribe", &key, json!({ "mode": "query" })).await;
    assert_eq!(status, Status::Accepted, "{queued}");
    let job: i64 = room.app.store().value("jobs", "id", &[("kind", "contacts.job".into())]);
    let (_, flow) =
        room.app.post("/workflows", &key, json!({ "name": "f", "eventName": "go", "enabled": true })).await;
    let flow = flow["id"].as_str().unwrap().to_string();
    let delay = json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } });
    assert_eq!(room.app.post(&format!("/workflows/{flow}/steps"), &key, delay).await.0, Status::Ok);
    let (status, execution) = room
        .app
        .post(&format!("/workflows/{flow}/executions"), &key, json!({ "email": "ada@example.com" }))
        .await;
    assert_eq!(status, Status::Ok, "{execution}");
    let execution = execution["id"].as_str().unwrap().to_string();
    let items = vec![
        (Kind::Email, email.clone()),
        (Kind::Job, job.to_string()),
        (Kind::Execution, execution.clone()),
    ];
    let interrupt = |done: Vec<(Kind, String)>| {
        let previous = Previous { open: items.clone(), done };
        room.app.state.db.write(move |tx| {
            count_interrupted(tx, &previous, tidings::clock::now_ms())
                .map_err(|e| tidings::error::ApiError::internal(e.to_string()))
        })
    };
    assert!(interrupt(vec![]).await.unwrap().is_empty(), "once is not twice");
    assert_eq!(room.email(&email).status, "QUEUED");
    let failed = interrupt(vec![]).await.unwrap();
    assert_eq!(failed.len(), 3, "{failed:?}");
    let email_row = room.email(&email);
    assert_eq!((email_row.status.as_str(), email_row.last_error.as_deref()), ("FAILED", Some(REASON)));
    let (events, job_row, counted) = {
        let conn = room.app.state.db.conn().unwrap();
        let events = room.app.store().count("events", &[("name", "email.failed".into())]);
        let job_row = tidings::db::jobs::get(&conn, job).unwrap().unwrap();
        // A count is forgotten when a process finishes the item.
        let counted = room.app.store().count("interrupted_work", &[]);
        (events, job_row, counted)
    };
    assert_eq!(events, 1, "email.failed is emitted, as for any failed email");
    assert_eq!((job_row.status.as_str(), job_row.last_error.as_deref()), ("failed", Some(REASON)));
    assert_eq!(counted, 0, "failed items keep no count");
    let (_, run) = room.app.get(&format!("/workflows/{flow}/executions/{execution}"), &key).await;
    assert_eq!(run["status"], "FAILED", "{run}");
}
