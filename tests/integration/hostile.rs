//! Hostile templates and contact data (issue: hardening): inputs that once crashed the process,
//! spun a delivery worker forever, or put a contact's data into mail as live HTML.

use std::time::{Duration, Instant};

use rocket::http::Status;
use serde_json::json;
use tidings::db::emails;

use crate::send::Mailroom;

/// The server still answers after a hostile request.
async fn still_answers(room: &Mailroom) {
    let (status, _) = room.app.get("/health", &room.keys.secret_key).await;
    assert_eq!(status, Status::Ok, "the server answers after the hostile request");
}

#[rocket::async_test]
async fn deeply_nested_blocks_are_refused_and_the_server_answers() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    // 12,000 nested ifs: 252 KB, under every size limit; this used to overflow the stack.
    let deep = format!("{}x{}", "{% if a %}".repeat(12_000), "{% endif %}".repeat(12_000));
    let template = json!({ "name": "t", "subject": "s", "body": deep, "from": "a@example.test" });
    let (status, error) = room.app.post("/templates", &key, template).await;
    assert_eq!(status, Status::UnprocessableEntity, "{error}");
    assert!(error["error"]["errors"][0]["message"].as_str().unwrap().contains("nest at most 32"), "{error}");
    let (status, _) = room
        .send(json!({ "to": "a@example.test", "from": "a@example.test", "subject": "s", "body": deep }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    // Hidden from a text scan inside a comment, still counted by the parser itself.
    let hidden = format!(
        "{{% comment %}}{{{{ {{% endcomment %}}{} }}}}{{% endcomment %}}",
        "{% if a %}".repeat(12_000)
    );
    let (status, _) = room
        .send(json!({ "to": "a@example.test", "from": "a@example.test", "subject": "s", "body": hidden }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    let lookups = format!("{{{{ {}a{} }}}}", "a[".repeat(5000), "]".repeat(5000));
    let (status, _) = room
        .send(json!({ "to": "a@example.test", "from": "a@example.test", "subject": lookups, "body": "b" }))
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    still_answers(&room).await;
    assert_eq!(room.app.store().count("emails", &[]), 0);
}

#[rocket::async_test]
async fn a_template_that_would_run_forever_is_refused_or_fails_its_email() {
    let room = Mailroom::new().await;
    let key = room.keys.secret_key.clone();
    // The reproduced input: loops with huge limits over a 100,000-item literal. Limits are
    // clamped to 1,000 steps, so it ends; forty of them run past the 1 s budget without any
    // data, so the template is refused when it is made.
    let list = (0..100_000).map(|i| (i % 10).to_string()).collect::<Vec<_>>().join(",");
    let pair = "{% for a in xs limit:999999 %}{% for b in xs limit:999999 %}{% endfor %}{% endfor %}";
    let body = format!("{{% assign xs = \"{list}\" | split: \",\" %}}{}", pair.repeat(40));
    let started = Instant::now();
    let (status, error) = room
        .app
        .post(
            "/templates",
            &key,
            json!({ "name": "spin", "subject": "s", "body": body, "from": "a@example.test" }),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{error}");
    assert_eq!(error["error"]["errors"][0]["code"], json!("template_limit"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10), "refused in {:?}", started.elapsed());

    // Loops over the contact's own data parse fine; the render stops at the budget and the
    // email fails with the reason, while the next email still leaves.
    let xs: Vec<i64> = (0..1000).collect();
    let slow = "{% for a in xs %}{% for b in xs %}{% endfor %}{% endfor %}".repeat(40);
    let failed = room
        .send_ok(json!({ "to": "a@example.test", "from": "a@example.test", "subject": "s", "body": slow,
            "data": { "xs": { "value": xs, "persistent": false } } }))
        .await;
    let fine = room
        .send_ok(
            json!({ "to": "b@example.test", "from": "a@example.test", "subject": "ok", "body": "<p>ok</p>" }),
        )
        .await;
    room.deliver(1).await;
    let db = room.app.state.db.clone();
    let id = failed[0].clone();
    room.app
        .run_jobs_until("the slow render to fail", async || {
            emails::get(&db.conn().unwrap(), &id).unwrap().unwrap().status == "FAILED"
        })
        .await;
    let email = room.email(&failed[0]);
    assert!(
        email.last_error.as_deref().unwrap_or("").contains("longer than 1000 ms"),
        "{:?}",
        email.last_error
    );
    assert_eq!(room.email(&fine[0]).status, "SENT");
    assert_eq!(room.sink.messages().len(), 1);
}

#[rocket::async_test]
async fn contact_data_is_escaped_in_html_mail() {
    let room = Mailroom::new().await;
    // Anyone holding the public key can set a contact's fields.
    let link = r#"<a href="https://evil.example/reset">Reset password</a>"#;
    let (status, _) = room
        .app
        .post(
            "/v1/track",
            &room.keys.public_key,
            json!({ "event": "visit", "email": "ada@example.test", "data": { "firstName": link } }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    let (_, template) = room
        .app
        .post(
            "/templates",
            &room.keys.secret_key,
            json!({ "name": "hi", "subject": "Hi {{ firstName }}", "from": "a@example.test",
                "body": "<p>Hi {{ firstName }}</p><div>{{ firstName | raw }}</div>" }),
        )
        .await;
    room.send_ok(json!({ "to": "ada@example.test", "template": template["id"] })).await;
    let messages = room.deliver(1).await;
    let message = mail_parser::MessageParser::default().parse(&messages[0].data).unwrap();
    let html = message.body_html(0).unwrap().to_string();
    assert!(
        html.contains(
            "<p>Hi &lt;a href=&quot;https://evil.example/reset&quot;&gt;Reset password&lt;/a&gt;</p>"
        ),
        "{html}"
    );
    // `| raw` is the author's explicit opt-out: the link is live there (and goes through the
    // click redirect like every link).
    assert_eq!(html.matches("<a href=").count(), 1, "{html}");
    // Subjects are plain text, not HTML.
    assert_eq!(message.subject(), Some(format!("Hi {link}").as_str()));
}
