//! Activity and analytics: the feed with its type filters and cursor, counts and rates from the
//! per-hour rollups, time series with every bucket, top events, upcoming work, and campaign
//! figures; another project sees none of it.

use rocket::http::Status;
use serde_json::{Value, json};
use tidings::core::feedback::{self, Feedback};
use tidings::db::emails;

use crate::send::Mailroom;

async fn get(room: &Mailroom, path: &str) -> Value {
    let (status, body) = room.app.get(path, &room.keys.secret_key).await;
    assert_eq!(status, Status::Ok, "{path}: {body}");
    body
}

#[rocket::async_test]
async fn the_feed_counts_series_and_rankings_follow_what_happened() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    for n in 0..3 {
        let (status, _) = room
            .app
            .post(
                "/v1/track",
                &room.keys.public_key,
                json!({ "email": format!("t{n}@example.com"), "event": "page.viewed" }),
            )
            .await;
        assert_eq!(status, Status::Ok);
    }
    let ids = [
        room.send_ok(json!({ "to": "a@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" })).await,
        room.send_ok(json!({ "to": "b@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" })).await,
    ];
    room.deliver(2).await;
    let email = room.email(&ids[0][0]);
    room.app
        .state
        .db
        .write(move |tx| {
            let email = emails::get(tx, &email.id)?.unwrap();
            let bounce = Feedback::Bounce { hard: true, detail: None };
            feedback::apply(tx, &email, &bounce, &Default::default(), tidings::clock::now_ms())?;
            Ok::<_, tidings::error::ApiError>(())
        })
        .await
        .unwrap();
    room.app
        .run_jobs_until("two email.sent", async || {
            get(&room, "/activity?types=send").await["data"].as_array().unwrap().len() == 2
        })
        .await;

    // The feed: newest first, typed, filtered, paged.
    let feed = get(&room, "/activity").await;
    let kinds: Vec<&str> =
        feed["data"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["bounce", "send", "send", "event", "event", "event"], "newest first");
    assert!(kinds.contains(&"bounce") && kinds.contains(&"send") && kinds.contains(&"event"), "{kinds:?}");
    let tracked = get(&room, "/activity?types=event").await;
    assert!(tracked["data"].as_array().unwrap().iter().all(|i| i["name"] == "page.viewed"));
    assert_eq!(tracked["data"].as_array().unwrap().len(), 3);
    let first = get(&room, "/activity?types=event,bounce&limit=2").await;
    assert_eq!(first["data"].as_array().unwrap().len(), 2);
    let cursor = first["cursor"].as_str().unwrap();
    let rest = get(&room, &format!("/activity?types=event,bounce&limit=2&cursor={cursor}")).await;
    assert_eq!(rest["data"].as_array().unwrap().len(), 2, "4 in all: 3 tracked and 1 bounce");
    assert_eq!(rest["hasMore"], false);
    let (status, bad) = room.app.get("/activity?types=sends", &key).await;
    assert_eq!(status, Status::BadRequest, "{bad}");

    // Counts from the rollups.
    let stats = get(&room, "/activity/stats").await;
    assert_eq!(
        (stats["counts"]["send"].clone(), stats["counts"]["bounce"].clone()),
        (json!(2), json!(1)),
        "{stats}"
    );
    assert_eq!(stats["counts"]["event"], 3);
    assert_eq!(stats["rates"]["bounce"], 0.5);
    let types = get(&room, "/activity/types").await;
    let send = types["types"].as_array().unwrap().iter().find(|t| t["type"] == "send").unwrap().clone();
    assert_eq!(send, json!({ "type": "send", "event": "email.sent", "count": 2 }));
    let total_events = room.app.store().count("events", &[]);
    assert_eq!(get(&room, "/activity/recent-count").await["count"], total_events);

    // Series: every bucket there, today's holding the sends.
    let days = get(&room, "/analytics/timeseries?interval=day").await;
    let series = days["series"].as_array().unwrap();
    assert!(series.len() >= 30, "{}", series.len());
    let today = series.last().unwrap();
    assert_eq!(
        (today["sent"].clone(), today["bounced"].clone(), today["opened"].clone()),
        (json!(2), json!(1), json!(0)),
        "{today}"
    );
    let hours = get(&room, "/analytics/timeseries?interval=hour&from=2026-01-01&to=2026-01-02").await;
    assert_eq!(hours["series"].as_array().unwrap().len(), 24);
    for bad in [
        "/analytics/timeseries?interval=week",
        "/analytics/timeseries?interval=hour&from=2026-01-01&to=2026-03-01",
        "/analytics/timeseries?from=yesterday",
    ] {
        let (status, _) = room.app.get(bad, &key).await;
        assert_eq!(status, Status::BadRequest, "{bad}");
    }
    let top = get(&room, "/analytics/top-events?limit=2").await;
    assert_eq!(top["events"][0], json!({ "name": "page.viewed", "count": 3, "type": "event" }));
    assert_eq!(top["events"].as_array().unwrap().len(), 2);

    // Another project sees nothing of it.
    let (_, other) = room.app.user_with_project("other@example.com").await;
    let (_, theirs) = room.app.get("/activity/stats", &other.secret_key).await;
    assert_eq!(theirs["counts"]["send"], 0);
    let (_, theirs) = room.app.get("/activity", &other.secret_key).await;
    assert_eq!(theirs["data"], json!([]));
    let (status, _) = room.app.get("/activity", &room.keys.public_key).await;
    assert_eq!(status, Status::Unauthorized);
}

#[rocket::async_test]
async fn upcoming_work_and_campaign_figures() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    for email in ["a@example.com", "b@example.com"] {
        room.app.post("/contacts", &key, json!({ "email": email, "subscribed": true })).await;
    }
    let campaign = |name: &str| json!({ "name": name, "subject": "News", "body": "<p>news</p>", "from": "news@example.test", "audienceType": "ALL" });
    let (_, sent) = room.app.post("/campaigns", &key, campaign("Sent one")).await;
    let sent_id = sent["data"]["id"].as_str().or(sent["id"].as_str()).unwrap().to_string();
    room.app.post(&format!("/campaigns/{sent_id}/send"), &key, json!({})).await;
    let (_, later) = room.app.post("/campaigns", &key, campaign("Later one")).await;
    let later_id = later["data"]["id"].as_str().or(later["id"].as_str()).unwrap().to_string();
    let (status, scheduled) = room
        .app
        .post(&format!("/campaigns/{later_id}/send"), &key, json!({ "scheduledFor": "2099-01-01T09:00:00Z" }))
        .await;
    assert_eq!(status, Status::Ok, "{scheduled}");
    room.deliver(2).await;

    // A workflow execution waiting at a delay.
    let (_, flow) = room.app.post("/workflows", &key, json!({ "name": "Later" })).await;
    let flow_id = flow["id"].as_str().unwrap();
    // The delay follows the trigger (autoConnect, the default).
    let (status, _) = room
        .app
        .post(
            &format!("/workflows/{flow_id}/steps"),
            &key,
            json!({ "type": "DELAY", "config": { "amount": 1, "unit": "days" } }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    room.app
        .call(
            rocket::http::Method::Patch,
            &format!("/workflows/{flow_id}"),
            &key,
            Some(json!({ "enabled": true, "triggerType": "MANUAL" })),
        )
        .await;
    room.app
        .post(&format!("/workflows/{flow_id}/executions"), &key, json!({ "email": "a@example.com" }))
        .await;
    room.app
        .run_jobs_until("waiting", async || {
            get(&room, "/activity/upcoming").await["executions"].as_array().unwrap().len() == 1
        })
        .await;
    let upcoming = get(&room, "/activity/upcoming").await;
    assert_eq!(upcoming["campaigns"][0]["name"], "Later one", "{upcoming}");
    assert_eq!(upcoming["executions"][0]["workflowName"], "Later");

    room.app
        .run_jobs_until("sent", async || {
            get(&room, "/analytics/campaign-stats").await["campaigns"][0]["sent"] == 2
        })
        .await;
    let stats = get(&room, "/analytics/campaign-stats").await;
    assert_eq!(stats["campaigns"].as_array().unwrap().len(), 1, "only campaigns that went out: {stats}");
    assert_eq!(stats["campaigns"][0]["name"], "Sent one");
    let top = get(&room, "/analytics/top-campaigns?metric=sent").await;
    assert_eq!(top["campaigns"][0]["id"], sent_id.as_str());
    let (status, _) = room.app.get("/analytics/top-campaigns?metric=revenue", &key).await;
    assert_eq!(status, Status::BadRequest);
}

/// Events at fixed times, through the same insert the service uses (rollups follow by trigger).
fn events_at(room: &Mailroom, contact: Option<&str>, name: &str, times: &[i64]) {
    let conn = room.app.state.db.conn().unwrap();
    for at in times {
        tidings::db::events::insert(&conn, &room.keys.id, contact, name, &json!({}), *at, None).unwrap();
    }
}

#[rocket::async_test]
async fn lists_carry_their_total_on_the_first_page_and_narrow_by_contact_and_period() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    let (_, ada) = room.app.post("/contacts", &key, json!({ "email": "ada@example.com" })).await;
    let ada = ada["id"].as_str().unwrap().to_string();
    let hour = 3_600_000;
    let base = tidings::clock::parse_date("2026-03-01T00:00:00Z").unwrap().0;
    // Spread over five hours, with events on both sides of the hour marks a period cuts.
    let times: Vec<i64> = (0..50).map(|n| base + n * 6 * 60_000 + 1_000).collect();
    events_at(&room, None, "page.viewed", &times);
    events_at(&room, Some(&ada), "plan.upgraded", &[base + 30 * 60_000, base + 3 * hour]);
    events_at(&room, Some(&ada), "email.opened", &[base + 31 * 60_000]);

    // Every list: the total on the first page, 0 after it (api.md rule 3).
    let first = get(&room, "/activity?limit=5").await;
    assert_eq!((first["total"].clone(), first["hasMore"].clone()), (json!(53), json!(true)), "{first}");
    let second = get(&room, &format!("/activity?limit=5&cursor={}", first["cursor"].as_str().unwrap())).await;
    assert_eq!(second["total"], 0);
    assert_eq!(get(&room, "/activity?types=open").await["total"], 1);
    assert_eq!(get(&room, "/activity?types=event").await["total"], 52);

    // A period that cuts hours: the total is exact, and is what the pages hold.
    let count_in = |from: i64, to: i64| times.iter().filter(|t| **t >= from && **t < to).count() as i64;
    for (from, to) in [
        (base + 20 * 60_000, base + 4 * hour + 10 * 60_000),
        (base + 5 * 60_000, base + 50 * 60_000),
        (base + hour, base + 3 * hour),
    ] {
        let (f, t) = (tidings::clock::iso(from), tidings::clock::iso(to));
        let upgrades =
            [base + 30 * 60_000, base + 3 * hour].iter().filter(|at| **at >= from && **at < to).count();
        for (query, expected) in [
            (
                format!("/activity?types=event&startDate={f}&endDate={t}&limit=100"),
                count_in(from, to) + upgrades as i64,
            ),
            (format!("/events?name=page.viewed&from={f}&to={t}&limit=100"), count_in(from, to)),
        ] {
            let page = get(&room, &query).await;
            assert_eq!(page["total"], expected, "{query}");
            assert_eq!(page["data"].as_array().unwrap().len() as i64, expected, "{query}");
        }
    }
    let open_ended = get(
        &room,
        &format!("/events?eventName=page.viewed&startDate={}", tidings::clock::iso(base + 2 * hour)),
    )
    .await;
    assert_eq!(open_ended["total"], count_in(base + 2 * hour, i64::MAX));
    // A date-only end includes its day.
    assert_eq!(get(&room, "/events?eventName=page.viewed&endDate=2026-03-01").await["total"], 50);
    assert_eq!(get(&room, "/events?eventName=page.viewed&endDate=2026-02-28").await["total"], 0);

    // One contact's activity, and Plunk's names for the filters.
    let hers = get(&room, &format!("/activity?contactId={ada}")).await;
    let names: Vec<&str> =
        hers["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["plan.upgraded", "email.opened", "plan.upgraded"], "newest first");
    assert_eq!(hers["total"], 3);
    let window = format!(
        "/activity?contactId={ada}&startDate={}&endDate={}",
        tidings::clock::iso(base),
        tidings::clock::iso(base + hour)
    );
    assert_eq!(get(&room, &window).await["total"], 2);
    assert_eq!(get(&room, "/events?eventName=plan.upgraded").await["total"], 2);

    // Bad periods and two spellings that disagree are 400; the same value twice is fine.
    for bad in [
        "/events?startDate=yesterday",
        "/activity?startDate=2026-03-02&endDate=2026-03-01",
        "/events?name=a&eventName=b",
        "/activity?from=2026-03-01&startDate=2026-03-02",
    ] {
        let (status, body) = room.app.get(bad, &key).await;
        assert_eq!((status, &body["error"]["code"]), (Status::BadRequest, &json!("BAD_REQUEST")), "{bad}");
    }
    assert_eq!(get(&room, "/events?name=plan.upgraded&eventName=plan.upgraded").await["total"], 2);
}
