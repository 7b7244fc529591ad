//! Monthly caps: the limits API, consumption, and refusals that are exact however many requests
//! race (the triggers count in the transaction that queues or records).

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::accounts::add_member;
use crate::common::TestApp;
use crate::common::http_receiver::HttpReceiver;
use crate::common::store::Cond;
use crate::send::Mailroom;

async fn set_limits(room: &Mailroom, body: Value) -> (Status, Value) {
    let path = format!("/users/@me/projects/{}/billing-limits", room.keys.id);
    let (status, answer, _) = room.app.as_user(Method::Put, &path, Some(&room.session), Some(body)).await;
    (status, answer)
}

async fn consumption(room: &Mailroom) -> Value {
    let path = format!("/users/@me/projects/{}/billing-consumption", room.keys.id);
    room.app.as_user(Method::Get, &path, Some(&room.session), None).await.1
}

#[rocket::async_test]
async fn limits_are_read_by_members_and_set_by_admins() {
    let room = Mailroom::new().await;
    let app = &room.app;
    let path = format!("/users/@me/projects/{}/billing-limits", room.keys.id);
    let member = app.signup("member@example.com").await;
    add_member(app, &room.session, &room.keys.id, "member@example.com", "MEMBER").await;

    let none = json!({ "transactional": null, "marketing": null, "workflow": null, "events": null });
    let (status, limits, _) = app.as_user(Method::Get, &path, Some(&member), None).await;
    assert_eq!((status, limits), (Status::Ok, none.clone()));
    let (status, _, _) = app.as_user(Method::Put, &path, Some(&member), Some(json!({ "events": 1 }))).await;
    assert_eq!(status, Status::Forbidden, "members do not change limits");

    let (status, saved) = set_limits(&room, json!({ "transactional": 3, "events": 0 })).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(saved, json!({ "transactional": 3, "marketing": null, "workflow": null, "events": 0 }));
    for bad in [json!({ "sms": 1 }), json!({ "marketing": -1 }), json!({ "marketing": "5" }), json!([])] {
        let (status, error) = set_limits(&room, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad} -> {error}");
    }
    let (_, limits, _) = app.as_user(Method::Get, &path, Some(&member), None).await;
    assert_eq!(limits["transactional"], json!(3), "refused changes leave the limits as they were");

    let used = consumption(&room).await;
    assert_eq!(used["usage"]["transactional"], json!({ "used": 0, "limit": 3, "remaining": 3 }));
    assert!(used["period"]["start"].as_str().unwrap().ends_with("-01T00:00:00.000Z"), "{used}");
    let (status, _, _) = app
        .as_user(
            Method::Get,
            &format!("/users/@me/projects/{}/billing-consumption", room.keys.id),
            None,
            None,
        )
        .await;
    assert_eq!(status, Status::Unauthorized);
}

#[rocket::async_test]
async fn concurrent_sends_never_go_one_over_the_cap() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    set_limits(&room, json!({ "transactional": 5 })).await;
    let answers = rocket::futures::future::join_all((0..24).map(|n| {
        let body = json!({ "to": format!("r{n}@example.org"), "from": "hi@example.test", "subject": "Hi", "body": "<p>Hi</p>" });
        let key = key.clone();
        async move { app.post("/v1/send", &key, body).await }
    }))
    .await;
    let ok = answers.iter().filter(|(status, _)| *status == Status::Ok).count();
    assert_eq!(ok, 5, "exactly the cap is queued");
    for (status, error) in answers.iter().filter(|(status, _)| *status != Status::Ok) {
        assert_eq!(*status, Status::PaymentRequired, "{error}");
        assert_eq!(error["error"]["code"], json!("BILLING_LIMIT_EXCEEDED"), "{error}");
        assert_eq!(error["error"]["details"]["category"], json!("transactional"));
    }
    let project = ("project_id", Cond::from(&room.keys.id));
    let queued = || app.store().count("emails", &[project.clone(), ("source_type", "TRANSACTIONAL".into())]);
    assert_eq!(queued(), 5);
    assert_eq!(
        app.store().count("contacts", std::slice::from_ref(&project)),
        5,
        "a refused send makes no contact either"
    );
    assert_eq!(
        consumption(&room).await["usage"]["transactional"],
        json!({ "used": 5, "limit": 5, "remaining": 0 })
    );

    // A send to several recipients that would cross the cap is refused whole.
    set_limits(&room, json!({ "transactional": 7 })).await;
    let three = json!({ "to": ["a@example.org", "b@example.org", "c@example.org"], "from": "hi@example.test", "subject": "Hi", "body": "x" });
    let (status, _) = room.send(three).await;
    assert_eq!(status, Status::PaymentRequired);
    assert_eq!(queued(), 5, "nothing of it was queued");
    // Raising the cap lets sending go on.
    set_limits(&room, json!({ "transactional": 8 })).await;
    let three = json!({ "to": ["a@example.org", "b@example.org", "c@example.org"], "from": "hi@example.test", "subject": "Hi", "body": "x" });
    room.send_ok(three).await;
    assert_eq!(queued(), 8);
}

#[rocket::async_test]
async fn tracked_events_are_capped_and_service_events_are_not_counted() {
    let room = Mailroom::new().await;
    let (app, keys) = (&room.app, &room.keys);
    set_limits(&room, json!({ "events": 2 })).await;
    for n in 0..2 {
        let (status, _) = app
            .post(
                "/v1/track",
                &keys.public_key,
                json!({ "event": "signed-up", "email": format!("t{n}@example.org") }),
            )
            .await;
        assert_eq!(status, Status::Ok);
    }
    let (status, error) = app
        .post("/v1/track", &keys.public_key, json!({ "event": "signed-up", "email": "late@example.org" }))
        .await;
    assert_eq!(
        (status, error["error"]["details"]["category"].clone()),
        (Status::PaymentRequired, json!("events"))
    );
    let late = app
        .store()
        .count("contacts", &[("project_id", (&keys.id).into()), ("email", "late@example.org".into())]);
    assert_eq!(late, 0, "nothing of the refused event was kept");

    // Mail still goes out and records its email.sent events, which are the service's own.
    room.send_ok(json!({ "to": "t0@example.org", "from": "hi@example.test", "subject": "Hi", "body": "x" }))
        .await;
    room.deliver(1).await;
    let sent =
        app.store().count("events", &[("project_id", (&keys.id).into()), ("name", "email.sent".into())]);
    assert_eq!(sent, 1);
    assert_eq!(consumption(&room).await["usage"]["events"]["used"], json!(2));
}

/// Tracks that arrive together share the writer's transactions, where they run without
/// savepoints: one refused after writing its contact rolls the others back and they run again.
#[rocket::async_test]
async fn concurrent_tracks_never_go_one_over_the_cap_and_a_refused_one_keeps_nothing() {
    let room = Mailroom::new().await;
    let (app, keys) = (&room.app, &room.keys);
    set_limits(&room, json!({ "events": 5 })).await;
    let answers = rocket::futures::future::join_all((0..24).map(|n| {
        let body = json!({ "event": "signed-up", "email": format!("c{n}@example.org") });
        async move { app.post("/v1/track", &keys.public_key, body).await }
    }))
    .await;
    let ok = answers.iter().filter(|(status, _)| *status == Status::Ok).count();
    assert_eq!(ok, 5, "exactly the cap is recorded");
    for (status, error) in answers.iter().filter(|(status, _)| *status != Status::Ok) {
        assert_eq!(*status, Status::PaymentRequired, "{error}");
        assert_eq!(error["error"]["details"]["category"], json!("events"), "{error}");
    }
    let project = ("project_id", Cond::from(&keys.id));
    assert_eq!(
        app.store().count("contacts", std::slice::from_ref(&project)),
        5,
        "no contact of a refused one"
    );
    assert_eq!(app.store().count("events", &[project, ("name", "signed-up".into())]), 5);
    assert_eq!(consumption(&room).await["usage"]["events"]["used"], json!(5));
}

#[rocket::async_test]
async fn a_campaign_stops_at_the_marketing_cap() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, &room.keys.secret_key);
    for n in 0..5 {
        app.post("/contacts", key, json!({ "email": format!("c{n}@example.org"), "subscribed": true })).await;
    }
    set_limits(&room, json!({ "marketing": 2 })).await;
    let campaign = json!({ "name": "News", "subject": "News", "body": "<p>n</p>", "from": "news@example.test", "audienceType": "ALL" });
    let (_, created) = app.post("/campaigns", key, campaign).await;
    let id = created["data"]["id"].as_str().unwrap().to_string();
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    room.deliver(2).await;
    let (_, stats) = app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!(stats["totalRecipients"], json!(2), "{stats}");
    assert!(stats["stoppedReason"].as_str().unwrap().contains("monthly limit of campaign emails"), "{stats}");
    assert_eq!(consumption(&room).await["usage"]["marketing"]["used"], json!(2));
}

pub const WEBHOOK_SECRET: &str = "whsec_loopback";

/// Stripe on `receiver` for a browser: a checkout session's page completes at once, the way a
/// paid checkout does (Stripe sends the signed `checkout.session.completed` event to the
/// server, then the browser to the session's `success_url`); the billing portal is a page of
/// its own; the customer has one invoice.
pub fn stripe_for_browsers(receiver: &HttpReceiver) {
    let pay = receiver.url("/pay/cs_browser");
    receiver.handle("/v1/checkout/sessions", move |_, _| {
        (200, Vec::new(), json!({ "id": "cs_browser", "url": pay }).to_string())
    });
    receiver.handle("/pay/cs_browser", |_, earlier| {
        let session = earlier.iter().rfind(|r| r.path == "/v1/checkout/sessions").expect("a checkout session");
        let asked = crate::sso::form(&session.body);
        let back = asked["success_url"].clone();
        let server = back.split("/app/").next().unwrap_or_default();
        let event = json!({
            "id": "evt_browser", "type": "checkout.session.completed", "created": tidings::clock::now_ms() / 1000,
            "data": { "object": { "id": "cs_browser", "client_reference_id": asked["client_reference_id"],
                "customer": "cus_browser", "subscription": "sub_browser" } },
        })
        .to_string();
        let signature = tidings::adapters::stripe::sign(event.as_bytes(), WEBHOOK_SECRET, tidings::clock::now_ms() / 1000);
        let sent = crate::common::binary::agent()
            .post(&format!("{server}/webhooks/incoming/stripe"))
            .header("Stripe-Signature", &signature)
            .header("Content-Type", "application/json")
            .send(event.as_str());
        match sent.map(|r| r.status().as_u16()) {
            Ok(200) => (302, vec![("Location".into(), back)], String::new()),
            other => (500, vec![("Content-Type".into(), "text/plain".into())], format!("the server refused the event: {other:?}")),
        }
    });
    let portal = receiver.url("/portal/bps_browser");
    receiver.handle("/v1/billing_portal/sessions", move |_, _| {
        (200, Vec::new(), json!({ "id": "bps_browser", "url": portal }).to_string())
    });
    receiver.handle("/portal/bps_browser", |_, _| {
        let page = "<!doctype html><title>Billing portal</title><h1>Loopback billing portal</h1>";
        (200, vec![("Content-Type".into(), "text/html".into())], page.into())
    });
    receiver.respond(
        "/v1/invoices",
        r#"{"object":"list","data":[{"id":"in_browser","number":"LOOP-0001","status":"paid","currency":"usd","amount_due":2900,"amount_paid":2900,"created":1795510800,"hosted_invoice_url":"https://invoice.stripe.com/i/browser","invoice_pdf":"https://pay.stripe.com/invoice/browser/pdf"}]}"#,
    );
}

/// An app with Stripe configured, its API a receiver on loopback that answers as Stripe would.
async fn with_stripe() -> (TestApp, HttpReceiver, rocket::http::Cookie<'static>, crate::common::Keys) {
    let stripe = HttpReceiver::start();
    stripe.respond(
        "/v1/checkout/sessions",
        r#"{"id":"cs_test_1","url":"https://checkout.stripe.com/c/pay/cs_test_1"}"#,
    );
    stripe.respond(
        "/v1/billing_portal/sessions",
        r#"{"id":"bps_1","url":"https://billing.stripe.com/p/session/bps_1"}"#,
    );
    stripe.respond(
        "/v1/invoices",
        r#"{"object":"list","data":[{"id":"in_1","number":"ABC-0001","status":"paid","currency":"eur","amount_due":900,"amount_paid":900,"created":1795510800,"hosted_invoice_url":"https://invoice.stripe.com/i/1","invoice_pdf":"https://pay.stripe.com/invoice/1/pdf"}]}"#,
    );
    let base = stripe.url("");
    let app = TestApp::with(|c| {
        c.billing.stripe_secret_key = Some("sk_test_loopback".into());
        c.billing.stripe_webhook_secret = Some(WEBHOOK_SECRET.into());
        c.billing.price_ids = vec!["price_basic".into(), "price_pro".into()];
        c.billing.stripe_api_base = base;
    })
    .await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    (app, stripe, session, keys)
}

async fn stripe_event(app: &TestApp, event: &Value, signature: Option<String>) -> (Status, Value) {
    let body = event.to_string();
    let mut req =
        app.client.post("/webhooks/incoming/stripe").header(rocket::http::ContentType::JSON).body(body);
    if let Some(signature) = signature {
        req = req.header(rocket::http::Header::new("Stripe-Signature", signature));
    }
    let res = req.dispatch().await;
    let status = res.status();
    (status, crate::common::body(res).await)
}

fn signed(event: &Value) -> Option<String> {
    Some(tidings::adapters::stripe::sign(
        event.to_string().as_bytes(),
        WEBHOOK_SECRET,
        tidings::clock::now_ms() / 1000,
    ))
}

#[rocket::async_test]
async fn without_stripe_the_billing_endpoints_say_so() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let (_, config, _) = app.as_user(Method::Get, "/config", None, None).await;
    assert_eq!(config["features"]["billing"], json!(false));
    for (method, path) in
        [(Method::Post, "checkout"), (Method::Post, "billing-portal"), (Method::Get, "billing-invoices")]
    {
        let (status, error, _) = app
            .as_user(method, &format!("/users/@me/projects/{}/{path}", keys.id), Some(&session), None)
            .await;
        assert_eq!(status, Status::NotFound, "{path}");
        assert!(error["error"]["message"].as_str().unwrap().contains("not configured"), "{error}");
    }
    let (status, _) = stripe_event(&app, &json!({ "type": "ping" }), None).await;
    assert_eq!(status, Status::NotFound);
    let path = format!("/users/@me/projects/{}/billing-consumption", keys.id);
    let (_, usage, _) = app.as_user(Method::Get, &path, Some(&session), None).await;
    assert!(usage.get("subscription").is_none(), "{usage}");
}

#[rocket::async_test]
async fn checkout_events_portal_and_invoices_through_stripe() {
    let (app, stripe, session, keys) = with_stripe().await;
    let project = format!("/users/@me/projects/{}", keys.id);
    let (_, config, _) = app.as_user(Method::Get, "/config", None, None).await;
    assert_eq!(config["features"]["billing"], json!(true));

    // Before any checkout: no portal, no invoices.
    let (status, _, _) =
        app.as_user(Method::Post, &format!("{project}/billing-portal"), Some(&session), None).await;
    assert_eq!(status, Status::Conflict);
    let (_, invoices, _) =
        app.as_user(Method::Get, &format!("{project}/billing-invoices"), Some(&session), None).await;
    assert_eq!(invoices, json!({ "data": [] }));

    let (status, _, _) = app
        .as_user(
            Method::Post,
            &format!("{project}/checkout"),
            Some(&session),
            Some(json!({ "priceId": "price_other" })),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "only configured prices");
    let (status, started, _) = app
        .as_user(
            Method::Post,
            &format!("{project}/checkout"),
            Some(&session),
            Some(json!({ "priceId": "price_pro" })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{started}");
    assert_eq!(started, json!({ "id": "cs_test_1", "url": "https://checkout.stripe.com/c/pay/cs_test_1" }));
    let call = stripe.requests().pop().unwrap();
    assert_eq!((call.method.as_str(), call.path.as_str()), ("POST", "/v1/checkout/sessions"));
    assert_eq!(call.headers["authorization"], "Bearer sk_test_loopback");
    for part in [
        "mode=subscription",
        "line_items%5B0%5D%5Bprice%5D=price_pro",
        &format!("client_reference_id={}", keys.id),
        "customer_email=owner%40example.com",
    ] {
        assert!(call.body.contains(part), "{part} in {}", call.body);
    }

    // Stripe's event: refused unsigned, badly signed or stale; taken when signed.
    let completed = json!({ "id": "evt_1", "type": "checkout.session.completed", "created": tidings::clock::now_ms() / 1000,
        "data": { "object": { "client_reference_id": keys.id, "customer": "cus_1", "subscription": "sub_1" } } });
    assert_eq!(stripe_event(&app, &completed, None).await.0, Status::BadRequest);
    let forged = tidings::adapters::stripe::sign(
        completed.to_string().as_bytes(),
        "whsec_guess",
        tidings::clock::now_ms() / 1000,
    );
    assert_eq!(stripe_event(&app, &completed, Some(forged)).await.0, Status::BadRequest);
    let stale = tidings::adapters::stripe::sign(
        completed.to_string().as_bytes(),
        WEBHOOK_SECRET,
        tidings::clock::now_ms() / 1000 - 301,
    );
    assert_eq!(stripe_event(&app, &completed, Some(stale)).await.0, Status::BadRequest);
    let (_, usage, _) =
        app.as_user(Method::Get, &format!("{project}/billing-consumption"), Some(&session), None).await;
    assert_eq!(usage["subscription"], Value::Null, "refused events change nothing");
    let (status, answer) = stripe_event(&app, &completed, signed(&completed)).await;
    assert_eq!((status, answer), (Status::Ok, json!({ "received": true, "applied": true })));
    let (_, usage, _) =
        app.as_user(Method::Get, &format!("{project}/billing-consumption"), Some(&session), None).await;
    assert_eq!(usage["subscription"], json!({ "status": "active" }));

    // A later change of the subscription is kept; an older event arriving late is not.
    let at = tidings::clock::now_ms() / 1000 + 10;
    let past_due = json!({ "id": "evt_2", "type": "customer.subscription.updated", "created": at,
        "data": { "object": { "id": "sub_1", "customer": "cus_1", "status": "past_due" } } });
    assert_eq!(stripe_event(&app, &past_due, signed(&past_due)).await.1["applied"], json!(true));
    let older = json!({ "id": "evt_0", "type": "customer.subscription.updated", "created": at - 60,
        "data": { "object": { "id": "sub_1", "customer": "cus_1", "status": "incomplete" } } });
    assert_eq!(stripe_event(&app, &older, signed(&older)).await.1["applied"], json!(false));
    let other = json!({ "id": "evt_3", "type": "invoice.paid", "created": at, "data": { "object": {} } });
    assert_eq!(
        stripe_event(&app, &other, signed(&other)).await,
        (Status::Ok, json!({ "received": true, "applied": false }))
    );
    let (_, usage, _) =
        app.as_user(Method::Get, &format!("{project}/billing-consumption"), Some(&session), None).await;
    assert_eq!(usage["subscription"], json!({ "status": "past_due" }));

    let (status, opened, _) =
        app.as_user(Method::Post, &format!("{project}/billing-portal"), Some(&session), None).await;
    assert_eq!(
        (status, opened),
        (Status::Ok, json!({ "url": "https://billing.stripe.com/p/session/bps_1" }))
    );
    let call = stripe.requests().pop().unwrap();
    assert_eq!(call.path, "/v1/billing_portal/sessions");
    assert!(call.body.contains("customer=cus_1"), "{}", call.body);
    let (_, invoices, _) =
        app.as_user(Method::Get, &format!("{project}/billing-invoices"), Some(&session), None).await;
    assert_eq!(invoices["data"][0]["number"], json!("ABC-0001"));
    assert_eq!(invoices["data"][0]["amountPaid"], json!(900));
    assert_eq!(stripe.requests().pop().unwrap().path, "/v1/invoices?customer=cus_1&limit=24");

    // Stripe refusing is a 502 naming its answer; members do not reach billing.
    stripe.answer(400);
    let (status, error, _) =
        app.as_user(Method::Post, &format!("{project}/checkout"), Some(&session), None).await;
    assert_eq!(status.code, 502, "{error}");
    let member = app.signup("member2@example.com").await;
    add_member(&app, &session, &keys.id, "member2@example.com", "MEMBER").await;
    let (status, _, _) = app.as_user(Method::Post, &format!("{project}/checkout"), Some(&member), None).await;
    assert_eq!(status, Status::Forbidden);
}
