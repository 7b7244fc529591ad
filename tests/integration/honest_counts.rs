//! Honest counts (issue 34, item 5): opens and clicks a machine made (a privacy proxy's fetch,
//! a link checker's `HEAD`, a scanner network, a burst on every link) are kept apart from a
//! person's: marked in the report and on their events, left out of `email.opened` and
//! `email.clicked` conditions unless a filter asks, and never starting a workflow, while a
//! person's open and click do all of it.

use rocket::http::{Header, Status};
use serde_json::{Value, json};

use crate::campaign_report::{CHROME, campaign, hit, links_of};
use crate::common::store::Set;
use crate::workflow_runs::{executions, room, workflow};

/// How many contacts a tree with one event filter on `event` matches.
async fn matching(room: &crate::send::Mailroom, event: &str, include_machine: Value) -> i64 {
    let filter = json!({ "field": event, "operator": "triggered", "includeMachine": include_machine });
    let tree = json!({ "logic": "AND", "groups": [{ "filters": [filter] }] });
    let (status, count) =
        room.app.post("/segments/count", &room.keys.secret_key, json!({ "condition": tree })).await;
    assert_eq!(status, Status::Ok, "{count}");
    count["count"].as_i64().unwrap()
}

#[rocket::async_test]
async fn machines_are_kept_apart_and_never_act_for_a_person() {
    let room = room().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    for email in ["ada@example.org", "bob@example.org", "cy@example.org", "di@example.org"] {
        let (status, _) = app.post("/contacts", key, json!({ "email": email })).await;
        assert_eq!(status, Status::Ok);
    }
    let (on_open, _) = workflow(app, key, Some("email.opened"), &[], &[]).await;
    let (on_click, _) = workflow(app, key, Some("email.clicked"), &[], &[]).await;
    let id = campaign(&room, "Honest").await;
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(4).await;
    // Sent a minute ago: a click now is a person's pace.
    app.store().set("emails", &[("sent_at", Set::Less(60_000))], &[("campaign_id", id.as_str().into())]);

    // Ada's mail is fetched by Apple's privacy proxy on delivery; later she opens it and
    // follows one link herself.
    let (ada_open, ada_clicks) = links_of(&got, "ada@example.org");
    assert_eq!(hit(&room, &ada_open, "Mozilla/5.0").await, Status::Ok);
    assert_eq!(hit(&room, &ada_open, CHROME).await, Status::Ok);
    assert_eq!(hit(&room, &ada_clicks[0], CHROME).await, Status::Found);
    // Bob's company filter follows every link at once, with a browser's User-Agent.
    let (_, bob_clicks) = links_of(&got, "bob@example.org");
    assert_eq!(hit(&room, &bob_clicks[0], CHROME).await, Status::Found);
    assert_eq!(hit(&room, &bob_clicks[1], CHROME).await, Status::Found);
    // Cy's mail goes through Microsoft's filter, which checks a link from its network.
    let (_, cy_clicks) = links_of(&got, "cy@example.org");
    let path = cy_clicks[0].split_once("/t/").map(|(_, rest)| format!("/t/{rest}")).unwrap();
    let scanned = app
        .client
        .get(path)
        .remote("40.93.12.7:443".parse().unwrap())
        .header(Header::new("User-Agent", CHROME))
        .dispatch()
        .await;
    assert_eq!(scanned.status(), Status::Found, "the scanner is sent on: it must not learn otherwise");
    // Di's pixel is fetched by a crawler, and her link checked with a HEAD.
    let (di_open, di_clicks) = links_of(&got, "di@example.org");
    assert_eq!(hit(&room, &di_open, "python-requests/2.31").await, Status::Ok);
    let path = di_clicks[0].split_once("/t/").map(|(_, rest)| format!("/t/{rest}")).unwrap();
    let checked = app.client.head(path).header(Header::new("User-Agent", CHROME)).dispatch().await;
    assert_eq!(checked.status(), Status::Found);

    // A person's click is emitted once no second link followed it; then the workflows have
    // run for Ada alone.
    app.run_jobs_until("the held clicks are emitted", async || {
        app.store().count("events", &[("name", "email.clicked".into())]) == 5
    })
    .await;
    app.run_jobs_until("the workflows ran", async || {
        executions(app, key, &on_click, "?status=COMPLETED").await.len() == 1
            && executions(app, key, &on_open, "?status=COMPLETED").await.len() == 1
    })
    .await;
    for workflow in [&on_open, &on_click] {
        let all = executions(app, key, workflow, "").await;
        let who: Vec<&Value> = all.iter().map(|e| &e["contactEmail"]).collect();
        assert_eq!(who, [&json!("ada@example.org")], "only a person's activity starts a workflow");
    }

    // The events are all there for webhooks and the API, machines' marked with why.
    let events = |name: &'static str| async move {
        let (status, list) = app.get(&format!("/events?name={name}&limit=100"), key).await;
        assert_eq!(status, Status::Ok, "{list}");
        let mut seen: Vec<(String, Value)> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["data"]["emailId"].as_str().map(|_| e["contactId"].to_string()).unwrap(),
                    e["data"]["machine"].clone(),
                )
            })
            .collect();
        seen.sort_by_key(|(contact, why)| format!("{contact}{why}"));
        seen.into_iter().map(|(_, why)| why).collect::<Vec<Value>>()
    };
    let mut opened = events("email.opened").await;
    opened.sort_by_key(Value::to_string);
    assert_eq!(
        opened,
        [json!("crawler"), json!("privacy_proxy"), Value::Null],
        "Ada's proxy open and her own, Di's crawler: one event each"
    );
    let mut clicked = events("email.clicked").await;
    clicked.sort_by_key(Value::to_string);
    assert_eq!(
        clicked,
        [json!("scanner"), json!("scanner"), json!("scanner"), json!("scanner"), Value::Null]
    );

    // Conditions count people unless they ask for machines too.
    assert_eq!(matching(&room, "email.opened", Value::Null).await, 1);
    assert_eq!(matching(&room, "email.opened", json!(true)).await, 2);
    assert_eq!(matching(&room, "email.clicked", json!(false)).await, 1);
    assert_eq!(matching(&room, "email.clicked", json!(true)).await, 4);

    // The report keeps machines apart: Bob's two links and Cy's and Di's checks.
    let (_, report) = app.get(&format!("/campaigns/{id}/report"), key).await;
    assert_eq!(
        (report["opened"].clone(), report["clicked"].clone()),
        (json!({ "people": 1, "machinesOnly": 1 }), json!({ "people": 1, "machinesOnly": 3 })),
        "{report}"
    );
    // The stats count every email opened and clicked as before, and people's apart: Bob's
    // first click, held, was taken back out when his second showed the scanner.
    let (_, stats) = app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!((stats["opened"].clone(), stats["clicked"].clone()), (json!(4), json!(4)), "{stats}");
    assert_eq!(
        (stats["openedByPeople"].clone(), stats["clickedByPeople"].clone()),
        (json!(1), json!(1)),
        "{stats}"
    );
    assert_eq!(
        (stats["rates"]["peopleOpen"].clone(), stats["rates"]["open"].clone()),
        (json!(0.25), json!(1.0))
    );

    // A filter that is not a boolean is refused, naming the key.
    let tree = json!({ "groups": [{ "filters": [
        { "field": "email.opened", "operator": "triggered", "includeMachine": "yes" }] }] });
    let (status, refused) = app.post("/segments/count", key, json!({ "condition": tree })).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert!(refused.to_string().contains("includeMachine"), "{refused}");
    let tree = json!({ "groups": [{ "filters": [
        { "field": "data.plan", "operator": "equals", "value": "x", "includeMachine": true }] }] });
    let (status, _) = app.post("/segments/count", key, json!({ "condition": tree })).await;
    assert_eq!(status, Status::UnprocessableEntity, "only event filters take includeMachine");
}

/// A person's click is held before its event goes out; the hold is a row, so a server killed
/// with SIGKILL during it emits the event after its restart, once, and the workflow runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_click_outlives_a_kill_and_is_emitted_once() {
    use std::time::{Duration, Instant};

    use crate::common::dns_server::DnsServer;
    use crate::common::sending::Sending;
    use crate::common::smtp_sink::SmtpSink;

    let dir = tempfile::TempDir::new().unwrap();
    let dns = DnsServer::start(&["test"]).await;
    let sink = SmtpSink::start();
    let mut sending = Sending::start(dir.path(), &dns, sink.port, &[]).await;
    let key = sending.key.clone();
    let workflow = tokio::task::block_in_place(|| {
        let server = &sending.server;
        let (status, _) = server.post_keyed("/contacts", &key, json!({ "email": "ada@example.test" }));
        assert_eq!(status, 200);
        let (status, flow) = server.post_keyed("/workflows", &key, json!({ "name": "On a click" }));
        assert_eq!(status, 200, "{flow}");
        let id = flow["id"].as_str().unwrap().to_string();
        let enable = json!({ "enabled": true, "triggerConfig": { "eventName": "email.clicked" } });
        let (status, enabled) = server.patch_keyed(&format!("/workflows/{id}"), &key, enable);
        assert_eq!(status, 200, "{enabled}");
        let (status, made) = server.post_keyed(
            "/campaigns",
            &key,
            json!({ "name": "Offer", "subject": "An offer", "body": "<p><a href=\"https://example.org/offer\">Offer</a></p>",
                    "from": "news@example.test", "audienceType": "ALL" }),
        );
        assert_eq!(status, 200, "{made}");
        let campaign = made["data"]["id"].as_str().unwrap();
        let (status, _) = server.post_keyed(&format!("/campaigns/{campaign}/send"), &key, json!({}));
        assert_eq!(status, 200);
        id
    });
    let got = sink.wait_for(1, Duration::from_secs(60));
    let html = crate::send::parse(&got[0].data).body_html(0).unwrap().to_string();
    let at = html.find("/t/c/").expect("a tracked link");
    let path = html[at..].split('"').next().unwrap().to_string();

    // A minute on (the clock moved forward): a person's pace. The click is held, and the server
    // is killed before the hold ends.
    tokio::task::block_in_place(|| sending.restart_with(&[("TIDINGS_SCHEDULER__CLOCK_OFFSET_SECS", "60")]));
    let no_redirects: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let clicked = tokio::task::block_in_place(|| {
        no_redirects.get(&sending.server.url(&path)).header("User-Agent", CHROME).call().unwrap()
    });
    assert_eq!(clicked.status().as_u16(), 302);
    tokio::task::block_in_place(|| sending.kill());
    tokio::task::block_in_place(|| sending.restart());

    let clicked_events = |sending: &Sending| {
        sending.server.get_keyed("/events?name=email.clicked", &key)["data"].as_array().map_or(0, Vec::len)
    };
    let started = Instant::now();
    while tokio::task::block_in_place(|| clicked_events(&sending)) == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the held click was never emitted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let executions = tokio::task::block_in_place(|| {
        assert_eq!(clicked_events(&sending), 1, "emitted once");
        sending.server.get_keyed(&format!("/workflows/{workflow}/executions"), &key)
    });
    assert_eq!(executions["data"].as_array().map(Vec::len), Some(1), "the workflow ran once: {executions}");
    tokio::task::block_in_place(|| sending.server.terminate(Duration::from_secs(15)));
}

#[rocket::async_test]
async fn a_persons_first_open_is_theirs_unless_their_click_came_first() {
    let room = crate::send::Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    for email in ["eve@example.org", "fay@example.org"] {
        let (status, _) = app.post("/contacts", key, json!({ "email": email })).await;
        assert_eq!(status, Status::Ok);
    }
    let id = campaign(&room, "Opens").await;
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(2).await;
    app.store().set("emails", &[("sent_at", Set::Less(60_000))], &[("campaign_id", id.as_str().into())]);
    // Eve's link is checked by a scanner, then she opens the mail herself: her open is an open.
    let (eve_open, eve_clicks) = links_of(&got, "eve@example.org");
    assert_eq!(hit(&room, &eve_clicks[0], "python-requests/2.31").await, Status::Found);
    assert_eq!(hit(&room, &eve_open, CHROME).await, Status::Ok);
    // Fay clicks first, then her mail's images load: the click was her open.
    let (fay_open, fay_clicks) = links_of(&got, "fay@example.org");
    assert_eq!(hit(&room, &fay_clicks[0], CHROME).await, Status::Found);
    assert_eq!(hit(&room, &fay_open, CHROME).await, Status::Ok);
    assert_eq!(hit(&room, &fay_open, CHROME).await, Status::Ok);
    let (_, opened) = app.get("/events?name=email.opened&limit=100", key).await;
    let opened = opened["data"].as_array().unwrap();
    assert_eq!(opened.len(), 1, "Eve's open only: {opened:?}");
    assert_eq!(opened[0]["data"]["machine"], Value::Null);
    assert_eq!(matching(&room, "email.opened", Value::Null).await, 1);
}
