//! Bounces and complaints, whatever their source: the one code path (`core::feedback`) that the
//! SNS receiver and the bounce listener hand their reports to. Statuses only move forward,
//! events are emitted once, campaign counters follow, and a hard bounce or a complaint
//! unsubscribes and suppresses the contact for marketing mail.

use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::core::feedback::{self, Feedback};
use tidings::db::emails;

use crate::send::Mailroom;

async fn template(room: &Mailroom, kind: &str) -> String {
    let (status, t) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": kind, "subject": format!("{kind} news"), "body": "<p>hi</p>", "from": "news@example.test", "type": kind }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{t}");
    t["id"].as_str().unwrap().to_string()
}

/// Applies `report` to the email that went out with `message_id`, as a receiver does.
async fn report(room: &Mailroom, message_id: &str, report: Feedback) -> Option<&'static str> {
    let message_id = message_id.to_string();
    let reputation = room.app.state.config.reputation.clone();
    room.app
        .state
        .db
        .write(move |tx| {
            let email = emails::by_message_id(tx, &message_id)?.expect("the email of this Message-ID");
            Ok::<_, tidings::error::ApiError>(
                feedback::apply(tx, &email, &report, &reputation, tidings::clock::now_ms())?.event,
            )
        })
        .await
        .unwrap()
}

async fn contact(room: &Mailroom, email: &str) -> Value {
    let (_, found) =
        room.app.post("/contacts/lookup", &room.keys.secret_key, json!({ "emails": [email] })).await;
    let id = found["data"][0]["id"].as_str().unwrap();
    room.app.get(&format!("/contacts/{id}"), &room.keys.secret_key).await.1
}

async fn event_names(room: &Mailroom, email: &str) -> Vec<String> {
    let id = contact(room, email).await["id"].as_str().unwrap().to_string();
    let conn = room.app.state.db.conn().unwrap();
    tidings::db::events::names_for_contact(&conn, &id).unwrap()
}

#[rocket::async_test]
async fn bounces_move_the_email_forward_once_and_a_hard_one_suppresses_the_contact() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let (marketing, transactional) =
        (template(&room, "MARKETING").await, template(&room, "TRANSACTIONAL").await);
    room.app.post("/contacts", key, json!({ "email": "ada@example.com", "subscribed": true })).await;
    let ids = room.send_ok(json!({ "to": "ada@example.com", "template": marketing })).await;
    room.deliver(1).await;
    let sent = room.email(&ids[0]);
    assert_eq!(sent.status, "SENT");

    // Delivered, twice: one event.
    assert_eq!(report(&room, &sent.message_id, Feedback::Delivered).await, Some("email.delivered"));
    let bare = sent.message_id.trim_matches(['<', '>']).to_string();
    assert_eq!(
        report(&room, &bare, Feedback::Delivered).await,
        None,
        "found without its brackets, and only once"
    );
    assert_eq!(room.email(&ids[0]).status, "DELIVERED");

    // A soft bounce: BOUNCED, soft; the contact stays.
    let soft = Feedback::Bounce { hard: false, detail: Some("4.2.2 mailbox full".into()) };
    assert_eq!(report(&room, &sent.message_id, soft.clone()).await, Some("email.bounced"));
    assert_eq!(report(&room, &sent.message_id, soft).await, None);
    assert_eq!(room.email(&ids[0]).status, "BOUNCED");
    let ada = contact(&room, "ada@example.com").await;
    assert_eq!((ada["subscribed"].clone(), ada["suppression"].clone()), (json!(true), Value::Null));

    // Then a hard one: emitted again as hard, the contact unsubscribed and suppressed.
    let hard = Feedback::Bounce { hard: true, detail: Some("5.1.1 user unknown".into()) };
    assert_eq!(report(&room, &sent.message_id, hard.clone()).await, Some("email.bounced"));
    assert_eq!(report(&room, &sent.message_id, hard).await, None, "a hard bounce is recorded once");
    let ada = contact(&room, "ada@example.com").await;
    assert_eq!(ada["subscribed"], false);
    assert_eq!(ada["suppression"]["reason"], "hard_bounce", "{ada}");
    assert_eq!(ada["suppression"]["emailId"], ids[0].as_str());
    assert_eq!(ada["suppression"]["detail"], "5.1.1 user unknown");
    let (_, listed) = room.app.get("/contacts?search=ada%40example.com", key).await;
    assert_eq!(listed["data"][0]["suppression"]["reason"], "hard_bounce", "the list shows it too: {listed}");
    let names = event_names(&room, "ada@example.com").await;
    let tail: Vec<&str> = names.iter().map(String::as_str).skip_while(|n| *n != "email.delivered").collect();
    assert_eq!(tail, ["email.delivered", "email.bounced", "email.bounced", "contact.unsubscribed"]);
    let (_, events) = room.app.get("/events?name=email.bounced", key).await;
    let kinds: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["bounceType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hard", "soft"], "newest first");

    // Subscribed again, it still gets no marketing mail, but transactional mail goes.
    let (status, _) = room
        .app
        .call(
            Method::Patch,
            &format!("/contacts/{}", ada["id"].as_str().unwrap()),
            key,
            Some(json!({ "subscribed": true })),
        )
        .await;
    assert_eq!(status, Status::Ok);
    let refused = room.send_ok(json!({ "to": "ada@example.com", "template": marketing })).await;
    let allowed = room.send_ok(json!({ "to": "ada@example.com", "template": transactional })).await;
    room.deliver(2).await;
    room.app
        .run_jobs_until("the marketing mail is refused", async || room.email(&refused[0]).status == "FAILED")
        .await;
    let refused = room.email(&refused[0]);
    assert!(refused.last_error.as_deref().unwrap().contains("suppressed"), "{:?}", refused.last_error);
    assert_eq!(room.email(&allowed[0]).status, "SENT");
    assert_eq!(room.sink.messages().len(), 2, "the first marketing mail and the transactional one");
}

#[rocket::async_test]
async fn a_complaint_outranks_a_bounce_and_campaign_counters_follow() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    for email in ["bob@example.com", "cy@example.com"] {
        room.app.post("/contacts", key, json!({ "email": email, "subscribed": true })).await;
    }
    let (status, campaign) = room
        .app
        .post(
            "/campaigns",
            key,
            json!({ "name": "News", "subject": "News", "body": "<p>news</p>", "from": "news@example.test", "audienceType": "ALL" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{campaign}");
    let id = campaign["data"]["id"].as_str().or(campaign["id"].as_str()).unwrap().to_string();
    let (status, sent) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");
    room.deliver(2).await;
    let message_of =
        |to: &str| room.app.store().value::<String>("emails", "message_id", &[("to_email", to.into())]);
    let (bob, cy) = (message_of("bob@example.com"), message_of("cy@example.com"));
    room.app
        .run_jobs_until("both sent", async || {
            room.app.get(&format!("/campaigns/{id}"), key).await.1["sentCount"] == 2
        })
        .await;

    let complaint = Feedback::Complaint { detail: Some("abuse".into()) };
    assert_eq!(report(&room, &bob, complaint.clone()).await, Some("email.complained"));
    assert_eq!(report(&room, &bob, complaint).await, None);
    // A bounce arriving after the complaint moves nothing back, and the reason stays.
    assert_eq!(
        report(&room, &bob, Feedback::Bounce { hard: true, detail: None }).await,
        Some("email.bounced")
    );
    let bob_contact = contact(&room, "bob@example.com").await;
    assert_eq!(bob_contact["suppression"]["reason"], "complaint", "{bob_contact}");
    assert_eq!(bob_contact["subscribed"], false);
    assert_eq!(
        report(&room, &cy, Feedback::Bounce { hard: false, detail: None }).await,
        Some("email.bounced")
    );

    let (_, counted) = room.app.get(&format!("/campaigns/{id}"), key).await;
    let counted = if counted["data"].is_object() { counted["data"].clone() } else { counted };
    assert_eq!(
        (counted["complainedCount"].clone(), counted["bouncedCount"].clone()),
        (json!(1), json!(1)),
        "{counted}"
    );
    let bob_status: String =
        room.app.store().value("emails", "status", &[("to_email", "bob@example.com".into())]);
    assert_eq!(bob_status, "COMPLAINED");
}

/// The owner's session (the Mailroom's owner signed up with the test password).
async fn owner_session(room: &Mailroom) -> rocket::http::Cookie<'static> {
    let res = room
        .app
        .post_json("/auth/login", &json!({ "email": "owner@example.com", "password": "password123" }))
        .await;
    assert_eq!(res.status(), Status::Ok);
    crate::common::session_cookie(&res)
}

#[rocket::async_test]
async fn a_bounce_rate_above_the_threshold_suspends_the_project_until_it_is_enabled_again() {
    let room = Mailroom::with(|c| {
        c.reputation.min_sent = 4;
        c.reputation.bounce_rate = 0.2;
    })
    .await;
    let (key, project) = (room.keys.secret_key.clone(), room.keys.id.clone());
    let session = owner_session(&room).await;
    let security = async || {
        let res = room
            .app
            .client
            .get(format!("/users/@me/projects/{project}/security"))
            .cookie(session.clone())
            .dispatch()
            .await;
        assert_eq!(res.status(), Status::Ok);
        res.into_json::<Value>().await.unwrap()
    };
    let mut ids = Vec::new();
    for n in 0..4 {
        let to = format!("r{n}@example.com");
        ids.extend(
            room.send_ok(
                json!({ "to": to, "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }),
            )
            .await,
        );
    }
    room.deliver(4).await;
    let message = |i: usize| room.email(&ids[i]).message_id;
    let state = security().await;
    assert_eq!((state["status"].clone(), state["sent"].clone()), (json!("ok"), json!(4)), "{state}");

    // A soft bounce does not count; one hard bounce in four sent (25 %) is above 20 %.
    assert_eq!(
        report(&room, &message(0), Feedback::Bounce { hard: false, detail: None }).await,
        Some("email.bounced")
    );
    assert_eq!(security().await["status"], "ok");
    assert_eq!(
        report(&room, &message(1), Feedback::Bounce { hard: true, detail: None }).await,
        Some("email.bounced")
    );
    let state = security().await;
    assert_eq!(state["status"], "suspended", "{state}");
    assert_eq!((state["hardBounces"].clone(), state["bounceRate"].clone()), (json!(1), json!(0.25)));
    let reason = state["suspension"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("hard-bounce rate 25.00 % over the last 7 days (1 of 4 sent)"), "{reason}");
    let (status, refused) = room.send(json!({ "to": "x@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" })).await;
    assert_eq!(status, Status::Forbidden, "{refused}");
    assert_eq!(refused["error"]["code"], "PROJECT_DISABLED");
    let res =
        room.app.client.get(format!("/projects/{project}/security")).cookie(session.clone()).dispatch().await;
    assert_eq!(
        res.into_json::<Value>().await.unwrap()["status"],
        "suspended",
        "the same state under /projects"
    );

    // An admin enables it again: the suspension is lifted, kept in the history.
    let res = room
        .app
        .client
        .patch(format!("/users/@me/projects/{project}"))
        .cookie(session.clone())
        .header(rocket::http::ContentType::JSON)
        .body(r#"{"disabled": false}"#)
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let state = security().await;
    assert_eq!(state["suspension"], Value::Null);
    assert!(state["suspensions"][0]["liftedAt"].is_string(), "{state}");
    assert_eq!(state["status"], "warning", "still above half the threshold");
    room.send_ok(
        json!({ "to": "x@example.com", "subject": "Hi", "body": "<p>hi</p>", "from": "news@example.test" }),
    )
    .await;
    // Another member's view is refused to outsiders.
    let (other, _) = room.app.user_with_project("mallory@example.com").await;
    let res =
        room.app.client.get(format!("/users/@me/projects/{project}/security")).cookie(other).dispatch().await;
    assert!(matches!(res.status().code, 403 | 404), "{}", res.status());
    let _ = key;
}
