//! Campaigns: every rule of the API, the sender against the SMTP sink (audiences, subscription,
//! scheduling, cancel, tests, counters), the references they hold, and expansion run twice.

use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::clock;
use tidings::core::campaigns::{EXPAND_BATCH, Expansion, expand_step};
use tidings::db::{campaigns, emails};

use crate::common::store::Null;
use crate::send::{LINKS, Mailroom};

fn campaign(name: &str) -> Value {
    json!({ "name": name, "subject": "News for {{ firstName ?? \"you\" }}", "body": "<p>Hello {{ firstName ?? \"there\" }}</p>",
        "from": "news@example.test", "audienceType": "ALL" })
}

impl Mailroom {
    async fn contacts(&self, list: &[(&str, bool, Value)]) {
        for (email, subscribed, data) in list {
            let body = json!({ "email": email, "subscribed": subscribed, "data": data });
            let (status, _) = self.app.post("/contacts", &self.keys.secret_key, body).await;
            assert_eq!(status, Status::Ok);
        }
    }

    async fn create(&self, body: Value) -> Value {
        let (status, created) = self.app.post("/campaigns", &self.keys.secret_key, body.clone()).await;
        assert_eq!(status, Status::Ok, "{body} -> {created}");
        assert_eq!(created["success"], json!(true));
        created["data"].clone()
    }

    async fn campaign(&self, id: &str) -> Value {
        self.app.get(&format!("/campaigns/{id}"), &self.keys.secret_key).await.1
    }

    /// Runs the scheduler and the delivery worker until the campaign is in `status`.
    pub(crate) async fn until_status(&self, id: &str, status: &str) -> Value {
        let mut last = Value::Null;
        self.app
            .run_jobs_until(&format!("campaign {status}"), async || {
                last = self.campaign(id).await;
                last["status"] == json!(status)
            })
            .await;
        last
    }
}

fn item(error: &Value) -> (String, String) {
    let e = &error["error"]["errors"][0];
    (e["field"].as_str().unwrap_or("").to_string(), e["code"].as_str().unwrap_or("").to_string())
}

#[rocket::async_test]
async fn creating_checks_every_field_and_answers_a_wrapped_draft() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let created = room.create(campaign("Welcome")).await;
    assert_eq!(created["status"], json!("DRAFT"));
    assert_eq!(
        (created["type"].clone(), created["audienceType"].clone()),
        (json!("MARKETING"), json!("ALL"))
    );
    for counter in
        ["totalRecipients", "sentCount", "deliveredCount", "openedCount", "clickedCount", "bouncedCount"]
    {
        assert_eq!(created[counter], json!(0), "{counter}");
    }
    assert_eq!(created["projectId"], json!(room.keys.id));

    for (missing, field) in [
        ("name", "name"),
        ("subject", "subject"),
        ("body", "body"),
        ("from", "from"),
        ("audienceType", "audienceType"),
    ] {
        let mut body = campaign("x");
        body.as_object_mut().unwrap().remove(missing);
        let (status, error) = room.app.post("/campaigns", key, body).await;
        assert_eq!(
            (status, item(&error)),
            (Status::UnprocessableEntity, (field.into(), "required".into())),
            "{missing}"
        );
    }
    let bad = |patch: Value| {
        let mut body = campaign("x");
        body.as_object_mut().unwrap().extend(patch.as_object().unwrap().clone());
        body
    };
    let cases = [
        (json!({ "audienceType": "SOME" }), "audienceType", "invalid_enum_value"),
        (json!({ "audienceType": "SEGMENT" }), "segmentId", "required"),
        (json!({ "audienceType": "SEGMENT", "segmentId": "nope" }), "segmentId", "not_found"),
        (json!({ "audienceType": "FILTERED" }), "audienceCondition", "required"),
        (
            json!({ "audienceType": "FILTERED", "audienceCondition": { "groups": [{ "filters": [{ "field": "data.plan", "operator": "near", "value": 1 }] }] } }),
            "audienceCondition.groups[0].filters[0].operator",
            "unknown_operator",
        ),
        (json!({ "from": "not an address" }), "from", "invalid_string"),
        (json!({ "type": "LOUD" }), "type", "invalid_enum_value"),
        (json!({ "subject": "{% if %}" }), "subject", "invalid_template"),
        (json!({ "colour": "red" }), "colour", "unrecognized_key"),
    ];
    for (patch, field, code) in cases {
        let (status, error) = room.app.post("/campaigns", key, bad(patch.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{patch}: {error}");
        assert_eq!(item(&error).0, field, "{patch}: {error}");
        if code != "unknown_operator" {
            assert_eq!(item(&error).1, code, "{patch}: {error}");
        }
    }
    let (status, error) =
        room.app.post("/campaigns", key, bad(json!({ "from": "news@elsewhere.test" }))).await;
    assert_eq!(status, Status::Forbidden);
    assert_eq!(error["error"]["details"]["reason"], json!("DOMAIN_NOT_VERIFIED"));
    let (status, _) = room.app.post("/campaigns", &room.keys.public_key, campaign("x")).await;
    assert_eq!(status, Status::Unauthorized);
    let (_, list) = room.app.get("/campaigns", key).await;
    assert_eq!(list["total"], json!(1), "refused campaigns are not stored");
}

#[rocket::async_test]
async fn the_list_filters_searches_sorts_and_pages() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    for name in ["Alpha", "beta", "Gamma"] {
        room.create(campaign(name)).await;
    }
    let (_, page) = room.app.get("/campaigns?pageSize=2&sort=name&dir=asc", key).await;
    let names: Vec<_> = page["data"].as_array().unwrap().iter().map(|c| c["name"].clone()).collect();
    assert_eq!(names, [json!("Alpha"), json!("beta")]);
    assert_eq!(
        (page["total"].clone(), page["totalPages"].clone(), page["page"].clone()),
        (json!(3), json!(2), json!(1))
    );
    let (_, newest) = room.app.get("/campaigns?sort=nonsense", key).await;
    assert_eq!(
        newest["data"][0]["name"],
        json!("Gamma"),
        "unknown sort falls back to createdAt, newest first"
    );
    let (_, found) = room.app.get("/campaigns?search=AMM", key).await;
    assert_eq!(found["data"][0]["name"], json!("Gamma"));
    let (_, by_sender) = room.app.get("/campaigns?search=news@example", key).await;
    assert_eq!(by_sender["total"], json!(3));
    let (_, drafts) = room.app.get("/campaigns?status=DRAFT", key).await;
    assert_eq!(drafts["total"], json!(3));
    let (_, sent) = room.app.get("/campaigns?status=SENT", key).await;
    assert_eq!(sent["total"], json!(0));
    let (status, _) = room.app.get("/campaigns?status=LOST", key).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = room.app.get("/campaigns?page=0", key).await;
    assert_eq!(status, Status::BadRequest);
}

#[rocket::async_test]
async fn a_campaign_reaches_each_subscribed_contact_once_and_counts() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    room.contacts(&[
        ("ada@example.test", true, json!({ "firstName": "Ada" })),
        ("bob@example.test", true, json!({ "firstName": "Bob" })),
        ("cy@example.test", false, json!({ "firstName": "Cy" })),
    ])
    .await;
    let mut body = campaign("Monthly");
    body["body"] = json!(
        "<html><body><p>Hello {{ firstName }}</p><a href=\"https://example.org/x\">x</a></body></html>"
    );
    let created = room.create(body).await;
    let id = created["id"].as_str().unwrap();
    let (status, sent) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");
    assert_eq!((sent["success"].clone(), sent["data"]["status"].clone()), (json!(true), json!("SENDING")));
    assert!(sent["message"].as_str().unwrap().contains("2 contacts"), "{sent}");
    let done = room.until_status(id, "SENT").await;
    let messages = room.sink.messages();
    let mut to: Vec<String> = messages.iter().map(|m| m.to[0].clone()).collect();
    to.sort();
    assert_eq!(
        to,
        ["ada@example.test", "bob@example.test"],
        "unsubscribed contacts get no MARKETING campaign"
    );
    let parsed: Vec<_> =
        messages.iter().map(|m| mail_parser::MessageParser::default().parse(&m.data).unwrap()).collect();
    for message in &parsed {
        let name = if message.to().unwrap().first().unwrap().address().unwrap().starts_with("ada") {
            "Ada"
        } else {
            "Bob"
        };
        assert_eq!(message.subject(), Some(format!("News for {name}").as_str()), "rendered per recipient");
        assert!(message.body_html(0).unwrap().contains(&format!("Hello {name}")));
        assert!(
            message.header_raw("List-Unsubscribe").is_some()
                && message.header_raw("List-Unsubscribe-Post").is_some()
        );
    }
    assert_eq!((done["totalRecipients"].clone(), done["sentCount"].clone()), (json!(2), json!(2)));
    assert!(done["sentAt"].is_string() && done["finishedAt"].is_string());

    // Opens and clicks count once per email, however often they happen; an unsubscribe through
    // the campaign's List-Unsubscribe is credited to it.
    let html = parsed[0].body_html(0).unwrap().to_string();
    let pixel = html.split("src=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let click = html.split("href=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    for _ in 0..3 {
        room.app.client.get(pixel.strip_prefix(LINKS).unwrap()).dispatch().await;
        room.app.client.get(click.strip_prefix(LINKS).unwrap()).dispatch().await;
    }
    let unsubscribe =
        parsed[1].header_raw("List-Unsubscribe").unwrap().trim().trim_matches(['<', '>']).to_string();
    for _ in 0..2 {
        let res = room.app.client.post(unsubscribe.strip_prefix(LINKS).unwrap()).dispatch().await;
        assert_eq!(res.status(), Status::Ok);
    }
    let (_, stats) = room.app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!(
        (
            stats["sent"].clone(),
            stats["opened"].clone(),
            stats["clicked"].clone(),
            stats["unsubscribed"].clone(),
            stats["queued"].clone()
        ),
        (json!(2), json!(1), json!(1), json!(1), json!(0)),
        "{stats}"
    );
    assert_eq!(stats["rates"]["open"], json!(0.5));

    // A SENT campaign is not changed, sent again or cancelled; it can be duplicated and deleted.
    let (status, _) =
        room.app.call(Method::Put, &format!("/campaigns/{id}"), key, Some(campaign("Again"))).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = room.app.post(&format!("/campaigns/{id}/cancel"), key, json!({})).await;
    assert_eq!(status, Status::BadRequest);
    let (status, copy) = room.app.post(&format!("/campaigns/{id}/duplicate"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(
        (copy["status"].clone(), copy["name"].clone(), copy["sentCount"].clone()),
        (json!("DRAFT"), json!("Monthly (copy)"), json!(0))
    );
    let (status, _) = room.app.call(Method::Delete, &format!("/campaigns/{id}"), key, None).await;
    assert_eq!(status, Status::NoContent);
}

#[rocket::async_test]
async fn segment_and_filtered_audiences_and_an_empty_one() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    room.contacts(&[
        ("ada@example.test", true, json!({ "plan": "pro" })),
        ("bob@example.test", true, json!({ "plan": "free" })),
        ("cy@example.test", true, json!({ "plan": "pro" })),
    ])
    .await;
    let (_, segment) = room.app.post("/segments", key, json!({ "name": "VIP", "type": "STATIC" })).await;
    let sid = segment["id"].as_str().unwrap();
    room.app.post(&format!("/segments/{sid}/members"), key, json!({ "emails": ["bob@example.test"] })).await;

    let mut to_segment = campaign("To the segment");
    to_segment["audienceType"] = json!("SEGMENT");
    to_segment["segmentId"] = json!(sid);
    let a = room.create(to_segment.clone()).await;
    // The live count of an audience, as the sender will expand it.
    let (status, counted) =
        room.app.post("/campaigns/count", key, json!({ "audienceType": "SEGMENT", "segmentId": sid })).await;
    assert_eq!((status, counted), (Status::Ok, json!({ "count": 1 })));
    let pro = json!({ "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] });
    let (_, counted) = room
        .app
        .post(
            "/campaigns/count",
            key,
            json!({ "audienceType": "FILTERED", "audienceCondition": pro, "type": "TRANSACTIONAL" }),
        )
        .await;
    assert_eq!(counted["count"], json!(2));
    let (_, counted) = room.app.post("/campaigns/count", key, json!({ "audienceType": "ALL" })).await;
    assert_eq!(counted["count"], json!(3));
    let (status, _) = room.app.post("/campaigns/count", key, json!({ "audienceType": "NOBODY" })).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, _) = room
        .app
        .post("/campaigns/count", key, json!({ "audienceType": "SEGMENT", "segmentId": "nope" }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    let mut filtered = campaign("To pro");
    filtered["audienceType"] = json!("FILTERED");
    filtered["audienceCondition"] = json!({ "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] });
    filtered["type"] = json!("TRANSACTIONAL");
    let b = room.create(filtered).await;
    for c in [&a, &b] {
        let (status, sent) =
            room.app.post(&format!("/campaigns/{}/send", c["id"].as_str().unwrap()), key, Value::Null).await;
        assert_eq!(status, Status::Ok, "no body sends at once: {sent}");
    }
    room.until_status(b["id"].as_str().unwrap(), "SENT").await;
    room.until_status(a["id"].as_str().unwrap(), "SENT").await;
    let mut to: Vec<String> = room.sink.messages().iter().map(|m| m.to[0].clone()).collect();
    to.sort();
    assert_eq!(to, ["ada@example.test", "bob@example.test", "cy@example.test"]);

    // Nobody matches: 400, and the campaign stays a draft.
    let mut nobody = campaign("Nobody");
    nobody["audienceType"] = json!("FILTERED");
    nobody["audienceCondition"] = json!({ "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "gold" }] }] });
    let c = room.create(nobody).await;
    let (status, error) =
        room.app.post(&format!("/campaigns/{}/send", c["id"].as_str().unwrap()), key, json!({})).await;
    assert_eq!(status, Status::BadRequest, "{error}");
    assert_eq!(room.campaign(c["id"].as_str().unwrap()).await["status"], json!("DRAFT"));
}

#[rocket::async_test]
async fn scheduling_starts_on_time_and_cancelling_stops_it() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    room.contacts(&[("ada@example.test", true, json!({}))]).await;
    let c = room.create(campaign("Later")).await;
    let id = c["id"].as_str().unwrap();
    for bad in
        [json!({ "scheduledFor": "next tuesday" }), json!({ "scheduledFor": true }), json!({ "when": "now" })]
    {
        let (status, _) = room.app.post(&format!("/campaigns/{id}/send"), key, bad.clone()).await;
        assert!(status == Status::BadRequest || status == Status::UnprocessableEntity, "{bad}: {status}");
    }
    let at = clock::now_ms() + 1500;
    let (status, scheduled) =
        room.app.post(&format!("/campaigns/{id}/send"), key, json!({ "scheduledFor": clock::iso(at) })).await;
    assert_eq!(status, Status::Ok, "{scheduled}");
    assert_eq!(scheduled["data"]["status"], json!("SCHEDULED"));
    assert_eq!(scheduled["data"]["scheduledFor"], json!(clock::iso(at)));
    assert!(scheduled["message"].as_str().unwrap().contains(&clock::iso(at)));
    // A scheduled campaign can still be edited.
    let mut edited = campaign("Later, edited");
    edited["subject"] = json!("Edited subject");
    let (status, changed) = room.app.call(Method::Put, &format!("/campaigns/{id}"), key, Some(edited)).await;
    assert_eq!(
        (status, changed["status"].clone(), changed["subject"].clone()),
        (Status::Ok, json!("SCHEDULED"), json!("Edited subject"))
    );
    let done = room.until_status(id, "SENT").await;
    let sent_at = tidings::clock::parse_date(done["sentAt"].as_str().unwrap()).unwrap().0;
    assert!(sent_at >= at && sent_at - at < 1000, "started {} ms after its time", sent_at - at);
    assert_eq!(room.sink.messages().len(), 1);

    // Scheduled far ahead, then cancelled: nothing is sent, and it cannot be cancelled twice.
    let c = room.create(campaign("Never")).await;
    let id = c["id"].as_str().unwrap();
    room.app.post(&format!("/campaigns/{id}/send"), key, json!({ "scheduledFor": "2099-01-01" })).await;
    let (status, cancelled) = room.app.post(&format!("/campaigns/{id}/cancel"), key, json!({})).await;
    assert_eq!((status, cancelled["status"].clone()), (Status::Ok, json!("CANCELLED")));
    let (status, _) = room.app.post(&format!("/campaigns/{id}/cancel"), key, json!({})).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = room.app.post("/campaigns/x/cancel", key, json!({})).await;
    assert_eq!(status, Status::NotFound);
}

#[rocket::async_test]
async fn cancelling_a_sending_campaign_takes_its_queued_mail_out() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let emails: Vec<String> = (0..40).map(|n| format!("u{n}@example.test")).collect();
    let (status, _) = room.app.post("/segments", key, json!({ "name": "all", "type": "STATIC" })).await;
    assert_eq!(status, Status::Ok);
    for email in &emails {
        room.app.post("/contacts", key, json!({ "email": email })).await;
    }
    let c = room.create(campaign("Stopped")).await;
    let id = c["id"].as_str().unwrap().to_string();
    room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    // Expand without delivering, then cancel: no message leaves.
    let db = room.app.state.db.clone();
    let step = db
        .write({
            let id = id.clone();
            move |tx| expand_step(tx, &id, EXPAND_BATCH, clock::now_ms())
        })
        .await
        .unwrap();
    assert_eq!(step, Expansion::Done);
    let (status, cancelled) = room.app.post(&format!("/campaigns/{id}/cancel"), key, json!({})).await;
    assert_eq!((status, cancelled["status"].clone()), (Status::Ok, json!("CANCELLED")));
    let (status, _) = room.app.call(Method::Delete, &format!("/campaigns/{id}"), key, None).await;
    assert_eq!(status, Status::NoContent, "a cancelled campaign can be deleted");
    room.app
        .run_jobs_until("the queue to empty", async || {
            room.app.store().count("emails", &[("status", "QUEUED".into())]) == 0
        })
        .await;
    assert!(room.sink.messages().is_empty(), "nothing of a cancelled campaign is sent");
}

#[rocket::async_test]
async fn a_test_send_goes_to_one_address_and_counts_nothing() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    room.contacts(&[("ada@example.test", false, json!({ "firstName": "Ada" }))]).await;
    let c = room.create(campaign("Tested")).await;
    let id = c["id"].as_str().unwrap();
    for to in ["ada@example.test", "boss@example.test"] {
        let (status, queued) =
            room.app.post(&format!("/campaigns/{id}/test"), key, json!({ "email": to })).await;
        assert_eq!((status, queued["to"].clone()), (Status::Ok, json!(to)), "{queued}");
    }
    let (status, _) = room.app.post(&format!("/campaigns/{id}/test"), key, json!({ "email": "nope" })).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let messages = room.deliver(2).await;
    let subjects: Vec<String> = messages
        .iter()
        .map(|m| mail_parser::MessageParser::default().parse(&m.data).unwrap().subject().unwrap().to_string())
        .collect();
    assert!(
        subjects.contains(&"[Test] News for Ada".to_string()),
        "rendered for the contact, unsubscribed or not: {subjects:?}"
    );
    assert!(subjects.contains(&"[Test] News for you".to_string()), "{subjects:?}");
    let after = room.campaign(id).await;
    assert_eq!(
        (after["status"].clone(), after["sentCount"].clone(), after["totalRecipients"].clone()),
        (json!("DRAFT"), json!(0), json!(0))
    );
}

#[rocket::async_test]
async fn what_a_campaign_uses_reports_it_and_stays_while_it_may_send() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    room.contacts(&[("ada@example.test", true, json!({ "plan": "pro" }))]).await;
    let (_, template) = room
        .app
        .post(
            "/templates",
            key,
            json!({ "name": "T", "subject": "s", "body": "b", "from": "news@example.test" }),
        )
        .await;
    let (_, segment) = room
        .app
        .post("/segments", key, json!({ "name": "Pro", "condition": { "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] } }))
        .await;
    let mut body = campaign("Uses things");
    body["audienceType"] = json!("FILTERED");
    body["templateId"] = template["id"].clone();
    body["audienceCondition"] = json!({ "groups": [{ "filters": [
        { "field": "data.plan", "operator": "exists" },
        { "field": "signed_up", "operator": "notTriggered" },
        { "operator": "memberOfSegment", "value": segment["id"] },
    ] }] });
    let c = room.create(body).await;
    let id = c["id"].as_str().unwrap();
    let listed =
        |v: &Value| v["campaigns"].as_array().unwrap().iter().map(|c| c["id"].clone()).collect::<Vec<_>>();
    let (_, field) = room.app.get("/contacts/fields/data.plan/usage", key).await;
    assert_eq!(listed(&field), [json!(id)]);
    let (_, event) = room.app.get("/events/signed_up/usage", key).await;
    assert_eq!(listed(&event), [json!(id)]);
    let (_, used) =
        room.app.get(&format!("/templates/{}/usage", template["id"].as_str().unwrap()), key).await;
    assert_eq!(listed(&used), [json!(id)]);

    // Scheduled: the segment and the sender domain cannot go.
    room.app
        .post(&format!("/campaigns/{id}/send"), key, json!({ "scheduledFor": "2099-01-01T00:00:00Z" }))
        .await;
    let (status, _) = room
        .app
        .call(Method::Delete, &format!("/segments/{}", segment["id"].as_str().unwrap()), key, None)
        .await;
    assert_eq!(status, Status::Conflict);
    let (_, domains) = room.app.get(&format!("/domains/project/{}", room.keys.id), key).await;
    let domain = domains[0]["id"].as_str().unwrap().to_string();
    // (The template also sends from it; move the template away first to see the campaign's hold.)
    room.verify_domain("other.test").await;
    room.app
        .call(
            Method::Patch,
            &format!("/templates/{}", template["id"].as_str().unwrap()),
            key,
            Some(json!({ "from": "a@other.test" })),
        )
        .await;
    let (status, held) = room.app.call(Method::Delete, &format!("/domains/{domain}"), key, None).await;
    assert_eq!(status, Status::Conflict, "{held}");
    assert!(held["error"]["message"].as_str().unwrap().contains("Uses things"));
    // Cancelled: both can go; deleting the campaign drops its references.
    room.app.post(&format!("/campaigns/{id}/cancel"), key, json!({})).await;
    room.app.call(Method::Delete, &format!("/campaigns/{id}"), key, None).await;
    let (_, field) = room.app.get("/contacts/fields/data.plan/usage", key).await;
    assert_eq!(field["campaigns"], json!([]));
    let (status, _) = room
        .app
        .call(Method::Delete, &format!("/segments/{}", segment["id"].as_str().unwrap()), key, None)
        .await;
    assert_eq!(status, Status::NoContent);
}

#[rocket::async_test]
async fn expansion_run_again_queues_nobody_twice_and_transactional_mail_goes_first() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    for n in 0..25 {
        room.app.post("/contacts", key, json!({ "email": format!("u{n}@example.test") })).await;
    }
    let c = room.create(campaign("Twice")).await;
    let id = c["id"].as_str().unwrap().to_string();
    room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    let db = room.app.state.db.clone();
    let step = |batch: usize| {
        let (db, id) = (db.clone(), id.clone());
        async move { db.write(move |tx| expand_step(tx, &id, batch, clock::now_ms())).await.unwrap() }
    };
    assert_eq!(step(10).await, Expansion::Running);
    // A crash after the first batch committed and the job starting over from the beginning (the
    // cursor put back) still adds nobody twice.
    room.app.store().set("campaigns", &[("expand_cursor", 0.into())], &[]);
    while step(10).await == Expansion::Running {}
    let store = room.app.store();
    let mine = [("campaign_id", id.as_str().into())];
    let (rows, distinct) = (store.count("emails", &mine), store.distinct("emails", "contact_id", &mine));
    assert_eq!((rows, distinct), (25, 25));
    let stored = campaigns::by_id(&db.conn().unwrap(), &id).unwrap().unwrap();
    assert!(stored.expanded);

    // A transactional send queued after the campaign's 25 rows is claimed first.
    let sent = room.send_ok(json!({ "to": "first@example.test", "from": "h@example.test", "subject": "Now", "body": "<p>n</p>" })).await;
    let claimed = db
        .write(|tx| {
            emails::claim(
                tx,
                clock::now_ms() + 1,
                1,
                60_000,
                &[],
                &mut tidings::db::fair::Turns::new(usize::MAX),
            )
        })
        .await
        .unwrap();
    assert_eq!(claimed[0].id, sent[0]);
    room.app.store().set("emails", &[("locked_until", Null.into())], &[]);
    let done = room.until_status(&id, "SENT").await;
    assert_eq!((done["totalRecipients"].clone(), done["sentCount"].clone()), (json!(25), json!(25)));
    assert_eq!(room.sink.messages().len(), 26);
}
