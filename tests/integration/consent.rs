//! Double opt-in and proof of consent (issue 32, item 3): `confirm: true` holds a subscription
//! until the mailed link's page button is pressed (a link scanner's GET changes nothing), the
//! grant is recorded with how, when and from where, shown on the contact and exported as CSV.

use rocket::http::{ContentType, Header, Method, Status};
use serde_json::{Value, json};
use tidings::core::links::{self, Link};

use crate::send::{LINKS, Mailroom};

/// The confirmation link of a delivered confirmation mail, as a path.
fn confirm_path(message: &[u8]) -> String {
    let parsed = crate::send::parse(message);
    let html = parsed.body_html(0).unwrap().to_string();
    let prefix = format!("{LINKS}/confirm/");
    let start = html.find(&prefix).unwrap_or_else(|| panic!("no confirmation link in {html}"));
    let token: String = html[start + prefix.len()..].chars().take_while(|c| *c != '"' && *c != '<').collect();
    format!("/confirm/{token}")
}

fn names(events: &Value) -> Vec<String> {
    events["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap().to_string()).collect()
}

async fn track_from_a_browser(room: &Mailroom, body: Value) -> (Status, Value) {
    let res = room
        .app
        .client
        .post("/v1/track")
        .header(ContentType::JSON)
        .header(Header::new("Authorization", format!("Bearer {}", room.keys.public_key)))
        .header(Header::new("User-Agent", "Mozilla/5.0 (Signup test)"))
        .body(body.to_string())
        .dispatch()
        .await;
    let status = res.status();
    (status, res.into_json().await.unwrap_or(Value::Null))
}

#[rocket::async_test]
async fn a_subscription_asked_with_confirm_waits_for_the_button_and_is_recorded_as_proof() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let body = json!({ "email": "ada@example.org", "event": "signed-up", "confirm": true,
        "consent": { "text": "Send me the monthly newsletter" } });
    let (status, tracked) = track_from_a_browser(&room, body.clone()).await;
    assert_eq!(status, Status::Ok, "{tracked}");
    let id = tracked["data"]["contact"].as_str().unwrap().to_string();
    let (_, contact) = app.get(&format!("/contacts/{id}"), &key).await;
    assert_eq!(contact["subscribed"], false, "pending until confirmed: {contact}");
    assert_eq!(contact["pending"]["method"], "api", "{contact}");

    // A pending contact gets no marketing mail.
    let (_, counted) = app.post("/campaigns/count", &key, json!({ "audienceType": "ALL" })).await;
    assert_eq!(counted["count"], 0, "{counted}");

    // Asking again within the cool-down joins the open request: one mail.
    assert_eq!(track_from_a_browser(&room, body).await.0, Status::Ok);
    let got = room.deliver(1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].to, ["ada@example.org"]);
    let parsed = crate::send::parse(&got[0].data);
    let subject = parsed.subject().unwrap().to_string();
    assert!(subject.starts_with("Confirm your subscription"), "{subject}");
    let from = parsed.from().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_string);
    assert_eq!(from.as_deref(), Some("noreply@example.test"), "from the project's verified domain");
    let path = confirm_path(&got[0].data);

    // A link scanner's GETs show the button and change nothing.
    for _ in 0..2 {
        let res = app.client.get(path.clone()).dispatch().await;
        assert_eq!(res.status(), Status::Ok);
        let page = res.into_string().await.unwrap();
        assert!(page.contains("Confirm my subscription") && page.contains("ada@example.org"), "{page}");
    }
    let (_, contact) = app.get(&format!("/contacts/{id}"), &key).await;
    assert_eq!(contact["subscribed"], false);
    let (_, events) = app.get(&format!("/events/contact/{id}"), &key).await;
    assert!(!names(&events).contains(&"contact.confirmed".to_string()), "{events}");

    let res = app
        .client
        .post(path.clone())
        .header(ContentType::Form)
        .header(Header::new("User-Agent", "Mozilla/5.0 (Confirming)"))
        .body("action=confirm")
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    assert!(res.into_string().await.unwrap().contains("Subscription confirmed"));
    let (_, contact) = app.get(&format!("/contacts/{id}"), &key).await;
    assert_eq!(contact["subscribed"], true, "{contact}");
    assert!(contact.get("pending").is_none(), "{contact}");
    let (_, events) = app.get(&format!("/events/contact/{id}"), &key).await;
    let names = names(&events);
    for name in ["contact.confirmation_requested", "contact.confirmed", "contact.subscribed"] {
        assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name}: {names:?}");
    }

    let (_, record) = app.get(&format!("/contacts/{id}/consents"), &key).await;
    let grant = &record["records"][0];
    assert_eq!(grant["method"], "api", "{record}");
    assert_eq!(grant["consentText"], "Send me the monthly newsletter");
    assert_eq!(grant["userAgent"], "Mozilla/5.0 (Signup test)");
    assert_eq!(grant["confirmUserAgent"], "Mozilla/5.0 (Confirming)");
    assert!(grant["confirmedAt"].is_string() && grant["requestedAt"].is_string(), "{grant}");
    assert_eq!(record["pending"], Value::Null);

    // A second press, and a forged link, change nothing.
    let again = app.client.post(path.clone()).dispatch().await;
    assert!(again.into_string().await.unwrap().contains("Already confirmed"));
    let forged = links::token(&app.state.secrets.link, &Link::Confirm { confirmation: "nope".into() });
    assert_eq!(app.client.post(format!("/confirm/{forged}")).dispatch().await.status(), Status::NotFound);
    assert_eq!(app.client.get("/confirm/garbage.x").dispatch().await.status(), Status::NotFound);
    assert_eq!(
        app.get(&format!("/contacts/{id}/consents"), &key).await.1["records"].as_array().unwrap().len(),
        1
    );

    // The project's record as CSV.
    let res = app
        .client
        .get("/consents/export")
        .header(Header::new("Authorization", format!("Bearer {key}")))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(res.content_type(), Some(ContentType::CSV));
    let csv = res.into_string().await.unwrap();
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let rows: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1, "{csv}");
    assert_eq!(&rows[0][1], "ada@example.org");
    assert_eq!(&rows[0][8], "Send me the monthly newsletter");
}

#[rocket::async_test]
async fn bad_consent_requests_are_refused_and_store_nothing() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    for (bad, field) in [
        (json!({ "email": "x@example.org", "confirm": true, "subscribed": false }), "confirm"),
        (json!({ "email": "x@example.org", "consent": { "text": "a".repeat(2_001) } }), "consent.text"),
        (json!({ "email": "x@example.org", "consent": { "ip": "not an address" } }), "consent.ip"),
    ] {
        let (status, refused) = app.post("/contacts", &key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    let (_, lookup) = app.post("/contacts/lookup", &key, json!({ "emails": ["x@example.org"] })).await;
    assert_eq!(lookup["found"], 0, "{lookup}");

    // A project with no verified domain has no sender for the mail: refused, nothing stored.
    let bare = app.project(&room.session, "Bare").await.secret_key;
    let (status, refused) = app
        .post("/events/track", &bare, json!({ "email": "x@example.org", "event": "e", "confirm": true }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["code"], "no_sender", "{refused}");
    let (_, lookup) = app.post("/contacts/lookup", &bare, json!({ "emails": ["x@example.org"] })).await;
    assert_eq!(lookup["found"], 0, "{lookup}");

    // A subscribed contact asked to confirm gets no mail and stays as it is.
    let (_, made) = app.post("/contacts", &key, json!({ "email": "in@example.org" })).await;
    let (_, again) = app.post("/contacts", &key, json!({ "email": "in@example.org", "confirm": true })).await;
    assert_eq!(again["subscribed"], true, "{again}");
    let (_, contact) = app.get(&format!("/contacts/{}", made["id"].as_str().unwrap()), &key).await;
    assert!(contact.get("pending").is_none(), "{contact}");

    // Without confirm, the proof given is kept for the subscription as it is.
    let body =
        json!({ "email": "single@example.org", "consent": { "text": "Yes please", "ip": "203.0.113.9" } });
    let (_, single) = app.post("/contacts", &key, body).await;
    let (_, record) = app.get(&format!("/contacts/{}/consents", single["id"].as_str().unwrap()), &key).await;
    assert_eq!(record["records"][0]["ip"], "203.0.113.9", "{record}");
    assert_eq!(record["records"][0]["confirmedAt"], Value::Null);

    let queued = app.store().count("emails", &[("to_email", crate::common::store::prefix("in@"))])
        + app.store().count("emails", &[("to_email", "single@example.org".into())]);
    assert_eq!(queued, 0, "no confirmation mail was queued");
}

#[rocket::async_test]
async fn an_expired_link_confirms_nothing_and_a_new_request_renews_it() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, made) =
        app.post("/contacts", &key, json!({ "email": "late@example.org", "confirm": true })).await;
    let id = made["id"].as_str().unwrap().to_string();
    let path = confirm_path(&room.deliver(1).await[0].data);
    app.store().set("confirmations", &[("expires_at", 1.into()), ("mailed_at", 1.into())], &[]);
    let res = app.client.post(path.clone()).dispatch().await;
    assert_eq!(res.status(), Status::Gone);
    assert_eq!(app.get(&format!("/contacts/{id}"), &key).await.1["subscribed"], false);

    app.post("/contacts", &key, json!({ "email": "late@example.org", "confirm": true })).await;
    let got = room.deliver(2).await;
    assert_eq!(confirm_path(&got[1].data), path, "the request keeps its link");
    assert_eq!(app.client.post(path).dispatch().await.status(), Status::Ok);
    assert_eq!(app.get(&format!("/contacts/{id}"), &key).await.1["subscribed"], true);
}

#[rocket::async_test]
async fn the_project_chooses_the_confirmation_template() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, settings) = app.get("/audience-settings", &key).await;
    assert_eq!(
        settings,
        json!({ "doubleOptIn": false, "confirmationTemplateId": null, "confirmationFrom": null })
    );
    let (status, refused) = app
        .call(Method::Patch, "/audience-settings", &key, Some(json!({ "confirmationTemplateId": "nope" })))
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    let elsewhere = json!({ "confirmationFrom": "hello@not-ours.example" });
    let (status, refused) = app.call(Method::Patch, "/audience-settings", &key, Some(elsewhere)).await;
    assert_eq!(status, Status::Forbidden, "a sender at a domain the project has not verified: {refused}");

    // The built-in mail from the sender chosen.
    let ours = json!({ "confirmationFrom": "Hello@Example.test" });
    let (status, settings) = app.call(Method::Patch, "/audience-settings", &key, Some(ours)).await;
    assert_eq!((status, settings["confirmationFrom"].clone()), (Status::Ok, json!("hello@example.test")));
    app.post("/contacts", &key, json!({ "email": "al@example.org", "confirm": true })).await;
    let got = room.deliver(1).await;
    let parsed = crate::send::parse(&got[0].data);
    assert_eq!(parsed.from().unwrap().first().unwrap().address(), Some("hello@example.test"));

    let template = json!({ "name": "Confirm", "subject": "Please confirm, {{ name }}", "type": "TRANSACTIONAL",
        "body": "<p>Hi {{ name }}, <a href=\"{{ confirmUrl }}\">confirm</a> for {{ projectName }}</p>", "from": "hello@example.test" });
    let (_, template) = app.post("/templates", &key, template).await;
    let change = json!({ "doubleOptIn": true, "confirmationTemplateId": template["id"] });
    let (status, settings) = app.call(Method::Patch, "/audience-settings", &key, Some(change)).await;
    assert_eq!(status, Status::Ok, "{settings}");
    assert_eq!(settings["doubleOptIn"], true);

    app.post(
        "/contacts",
        &key,
        json!({ "email": "bo@example.org", "confirm": true, "data": { "name": "Bo" } }),
    )
    .await;
    let got = room.deliver(2).await;
    let parsed = crate::send::parse(&got[1].data);
    assert_eq!(parsed.subject(), Some("Please confirm, Bo"));
    let from = parsed.from().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_string);
    assert_eq!(from.as_deref(), Some("hello@example.test"), "from the template's sender");
    confirm_path(&got[1].data);

    // Deleting the template goes back to the built-in mail.
    let (status, _) = app
        .call(Method::Delete, &format!("/templates/{}", template["id"].as_str().unwrap()), &key, None)
        .await;
    assert!(status.code < 300, "{status}");
    assert_eq!(app.get("/audience-settings", &key).await.1["confirmationTemplateId"], Value::Null);
}
