//! Signup forms (issue 32, item 4): made and checked through `/forms`; submitted through the
//! hosted page's form post or JSON from an allowed origin, behind a proof-of-work challenge, a
//! honeypot, a minimum fill time and rate limits; a submission answers the same whether the
//! address was a contact, and records the consent with the form's words.

use base64::Engine;
use rocket::http::{ContentType, Header, Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

const SITE: &str = "https://www.shop.example";

async fn room_with(min_fill_ms: u32, per_address: u32) -> Mailroom {
    Mailroom::with(|c| {
        c.limits.form_min_fill_ms = min_fill_ms;
        c.limits.form_submissions_per_address_hour = per_address;
    })
    .await
}

/// A form of the room's project with a name field and the topic `News`.
async fn newsletter(room: &Mailroom, extra: Value) -> (Value, String) {
    let key = &room.keys.secret_key;
    let (_, topic) = room.app.post("/topics", key, json!({ "name": "News" })).await;
    let mut body = json!({ "name": "Newsletter", "consentText": "Send me the newsletter",
        "fields": [{ "key": "firstName", "label": "First name", "type": "string", "required": true },
                   { "key": "age", "label": "Age", "type": "number" }],
        "topics": [topic["id"]], "allowedOrigins": [SITE] });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let (status, form) = room.app.post("/forms", key, body).await;
    assert_eq!(status, Status::Ok, "{form}");
    (form, topic["id"].as_str().unwrap().to_string())
}

/// Solves the form's current challenge, as the page's script does.
async fn solved(room: &Mailroom, form: &str) -> String {
    let res = room.app.client.get(format!("/f/{form}/challenge")).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let challenge: altcha::Challenge = serde_json::from_str(&res.into_string().await.unwrap()).unwrap();
    let solution = altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge)).unwrap().unwrap();
    let payload = serde_json::to_vec(&json!({ "challenge": challenge, "solution": solution })).unwrap();
    base64::engine::general_purpose::STANDARD.encode(payload)
}

async fn post_json(
    room: &Mailroom,
    form: &str,
    origin: Option<&str>,
    body: Value,
) -> (Status, Option<String>, Value) {
    let mut request = room.app.client.post(format!("/f/{form}/submit")).header(ContentType::JSON);
    if let Some(origin) = origin {
        request = request.header(Header::new("Origin", origin.to_string()));
    }
    let visitor: std::net::SocketAddr = "198.51.100.7:40000".parse().unwrap();
    let res = request
        .remote(visitor)
        .header(Header::new("User-Agent", "FormTest/1"))
        .body(body.to_string())
        .dispatch()
        .await;
    let cors = res.headers().get_one("Access-Control-Allow-Origin").map(str::to_string);
    (res.status(), cors, res.into_json().await.unwrap_or(Value::Null))
}

#[rocket::async_test]
async fn forms_are_checked_and_a_topic_a_form_offers_cannot_be_deleted() {
    let room = room_with(0, 20).await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    for (bad, field) in [
        (
            json!({ "name": "x", "fields": [{ "key": "email", "label": "E", "type": "string" }] }),
            "fields[0].key",
        ),
        (json!({ "name": "x", "fields": [{ "key": "a", "label": "A", "type": "color" }] }), "fields[0].type"),
        (json!({ "name": "x", "topics": ["nope"] }), "topics[0]"),
        (json!({ "name": "x", "allowedOrigins": ["https://a.example/path"] }), "allowedOrigins[0]"),
        (json!({ "name": "x", "redirectUrl": "javascript:alert(1)" }), "redirectUrl"),
        (json!({}), "name"),
    ] {
        let (status, refused) = app.post("/forms", &key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    assert_eq!(app.get("/forms", &key).await.1, json!([]), "nothing stored");
    let (form, topic) = newsletter(&room, json!({})).await;
    assert!(form["embed"].as_str().unwrap().contains("/embed.js"), "{form}");
    let (status, refused) = app.call(Method::Delete, &format!("/topics/{topic}"), &key, None).await;
    assert_eq!(status, Status::Conflict, "{refused}");
    let id = form["id"].as_str().unwrap();
    let (status, changed) =
        app.call(Method::Patch, &format!("/forms/{id}"), &key, Some(json!({ "doubleOptIn": true }))).await;
    assert_eq!((status, changed["doubleOptIn"].clone()), (Status::Ok, json!(true)));
    assert_eq!(app.call(Method::Delete, &format!("/forms/{id}"), &key, None).await.0, Status::NoContent);
    assert_eq!(app.client.get(format!("/f/{id}")).dispatch().await.status(), Status::NotFound);
}

#[rocket::async_test]
async fn a_scripted_submitter_is_refused_by_the_proof_of_work_the_honeypot_and_the_fill_time() {
    let room = room_with(3_000, 50).await;
    let (form, _) = newsletter(&room, json!({})).await;
    let id = form["id"].as_str().unwrap();
    let person = json!({ "email": "bot@example.org", "firstName": "Bot" });
    let (status, _, refused) = post_json(&room, id, None, person.clone()).await;
    assert_eq!(status, Status::Forbidden, "no proof of work: {refused}");
    // The visitor reads a plain refusal; whoever builds a front reads why.
    assert_eq!(refused["error"]["message"], "The form could not be sent. Please try again.", "{refused}");
    assert!(refused["error"]["details"]["reason"].as_str().unwrap().contains("proof of work is missing"));
    let forged = base64::engine::general_purpose::STANDARD.encode(b"{\"challenge\":{},\"solution\":{}}");
    let mut body = person.clone();
    body["altcha"] = json!(forged);
    assert_eq!(post_json(&room, id, None, body).await.0, Status::Forbidden, "a forged proof");
    let mut body = person.clone();
    body["altcha"] = json!(solved(&room, id).await);
    let (status, _, refused) = post_json(&room, id, None, body.clone()).await;
    assert_eq!(status, Status::Forbidden, "sent the moment the form loaded: {refused}");
    assert!(refused["error"]["details"]["reason"].as_str().unwrap().contains("too fast"), "{refused}");
    body["_hp"] = json!("http://spam.example");
    let (status, _, refused) = post_json(&room, id, None, body).await;
    assert!(status == Status::Forbidden && refused.to_string().contains("people do not see"), "{refused}");
    let (_, lookup) = room
        .app
        .post("/contacts/lookup", &room.keys.secret_key, json!({ "emails": ["bot@example.org"] }))
        .await;
    assert_eq!(lookup["found"], 0, "no contact was made: {lookup}");
}

#[rocket::async_test]
async fn a_submission_subscribes_records_consent_and_answers_the_same_for_a_known_address() {
    let room = room_with(0, 50).await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (form, topic) = newsletter(&room, json!({})).await;
    let id = form["id"].as_str().unwrap();
    let (_, known) = app
        .post(
            "/contacts",
            &key,
            json!({ "email": "known@example.org", "subscribed": false, "data": { "firstName": "Kim" } }),
        )
        .await;

    let mut answers = Vec::new();
    for email in ["new@example.org", "known@example.org"] {
        let body = json!({ "email": email, "firstName": "Mallory", "age": "41", "topics": [topic], "altcha": solved(&room, id).await });
        let (status, cors, answer) = post_json(&room, id, Some(SITE), body.clone()).await;
        assert_eq!(status, Status::Ok, "{answer}");
        assert_eq!(cors.as_deref(), Some(SITE));
        answers.push(answer);
        // The same solved challenge twice is refused.
        assert_eq!(post_json(&room, id, Some(SITE), body).await.0, Status::Forbidden);
    }
    assert_eq!(answers[0], answers[1], "the answer does not tell a known address");

    let (_, lookup) = app.post("/contacts/lookup", &key, json!({ "emails": ["new@example.org"] })).await;
    let new_id = lookup["data"][0]["id"].as_str().unwrap().to_string();
    let (_, new) = app.get(&format!("/contacts/{new_id}"), &key).await;
    assert_eq!(
        (new["subscribed"].clone(), new["topics"][&topic].clone()),
        (json!(true), json!(true)),
        "{new}"
    );
    assert_eq!(new["data"], json!({ "firstName": "Mallory", "age": 41.0 }));
    let (_, kim) = app.get(&format!("/contacts/{}", known["id"].as_str().unwrap()), &key).await;
    assert_eq!(kim["data"]["firstName"], "Kim", "a stranger cannot overwrite what a contact said: {kim}");
    assert_eq!(kim["data"]["age"], 41.0, "an empty field is filled");

    let (_, record) = app.get(&format!("/contacts/{new_id}/consents"), &key).await;
    let grants = record["records"].as_array().unwrap();
    assert_eq!(grants.len(), 2, "marketing and the topic: {record}");
    for grant in grants {
        assert_eq!((grant["method"].clone(), grant["formId"].clone()), (json!("form"), json!(id)));
        assert_eq!(grant["consentText"], "Send me the newsletter");
        assert_eq!(grant["userAgent"], "FormTest/1");
    }
    assert_eq!(app.get(&format!("/forms/{id}"), &key).await.1["submissions"], 2);

    // Another site's page: refused, and told nothing through CORS.
    let body = json!({ "email": "x@example.org", "firstName": "X", "altcha": solved(&room, id).await });
    let (status, cors, _) = post_json(&room, id, Some("https://evil.example"), body).await;
    assert_eq!((status, cors), (Status::Forbidden, None));
    let preflight =
        app.client.options(format!("/f/{id}/submit")).header(Header::new("Origin", SITE)).dispatch().await;
    assert_eq!(preflight.headers().get_one("Access-Control-Allow-Origin"), Some(SITE));
    let preflight = app
        .client
        .options(format!("/f/{id}/submit"))
        .header(Header::new("Origin", "https://evil.example"))
        .dispatch()
        .await;
    assert_eq!(preflight.headers().get_one("Access-Control-Allow-Origin"), None);
    // A missing required field is a clear 422, nothing stored.
    let body = json!({ "email": "y@example.org", "altcha": solved(&room, id).await });
    let (status, _, refused) = post_json(&room, id, None, body).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    assert_eq!(refused["error"]["errors"][0]["field"], "firstName");
}

#[rocket::async_test]
async fn the_hosted_page_posts_a_form_and_double_opt_in_waits_for_the_mail() {
    let room = room_with(0, 50).await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (form, topic) =
        newsletter(&room, json!({ "doubleOptIn": true, "successMessage": "Almost there: check your inbox" }))
            .await;
    let id = form["id"].as_str().unwrap();
    let page = app.client.get(format!("/f/{id}")).dispatch().await.into_string().await.unwrap();
    for part in [
        "name=\"firstName\"",
        "name=\"_hp\"",
        "name=\"altcha\"",
        "Send me the newsletter",
        "News",
        "/f/form.js",
    ] {
        assert!(page.contains(part), "{part}: {page}");
    }
    let proof = solved(&room, id).await;
    let body = format!(
        "email=dee%40example.org&firstName=Dee&age=&topic={topic}&_hp=&altcha={}",
        proof.replace('+', "%2B").replace('/', "%2F").replace('=', "%3D")
    );
    let res =
        app.client.post(format!("/f/{id}/submit")).header(ContentType::Form).body(body).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert!(res.into_string().await.unwrap().contains("Almost there"));
    let (_, lookup) = app.post("/contacts/lookup", &key, json!({ "emails": ["dee@example.org"] })).await;
    let dee = lookup["data"][0]["id"].as_str().unwrap().to_string();
    let (_, contact) = app.get(&format!("/contacts/{dee}"), &key).await;
    assert_eq!(contact["subscribed"], false, "waits for the confirmation: {contact}");
    assert_eq!(contact["pending"]["topics"], json!([topic]));
    assert_eq!(contact["pending"]["formId"], json!(id));

    let got = room.deliver(1).await;
    let html = crate::send::parse(&got[0].data).body_html(0).unwrap().to_string();
    let start = html.find("/confirm/").unwrap();
    let path: String = html[start..].chars().take_while(|c| *c != '"').collect();
    assert_eq!(app.client.post(path).dispatch().await.status(), Status::Ok);
    let (_, contact) = app.get(&format!("/contacts/{dee}"), &key).await;
    assert_eq!(
        (contact["subscribed"].clone(), contact["topics"][&topic].clone()),
        (json!(true), json!(true))
    );

    // A form post that misses a field gets the page again with what to fix.
    let res = app
        .client
        .post(format!("/f/{id}/submit"))
        .header(ContentType::Form)
        .body("email=&firstName=")
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::UnprocessableEntity);
    assert!(res.into_string().await.unwrap().contains("role=\"alert\""));
}

#[rocket::async_test]
async fn submissions_from_one_address_are_limited() {
    let room = room_with(0, 2).await;
    let (form, _) = newsletter(&room, json!({})).await;
    let id = form["id"].as_str().unwrap();
    let mut statuses = Vec::new();
    for i in 0..3 {
        let body = json!({ "email": format!("p{i}@example.org"), "firstName": "P", "altcha": solved(&room, id).await });
        statuses.push(post_json(&room, id, None, body).await.0);
    }
    assert_eq!(statuses, [Status::Ok, Status::Ok, Status::TooManyRequests]);
}
