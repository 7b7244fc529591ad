//! A first hour without DNS (issue 33, item 1): while the server captures mail, each project's
//! sandbox sender domain is verified, and a template draft, a send, a campaign with its test send
//! and a workflow's mail all go from it into the outbox; it is the project's alone, cannot be
//! added as a domain, and stops being verified once a relay is configured. The instance's owner
//! reads the server's own mail in the outbox then, and no one else does.

use rocket::http::{ContentType, Header, Status};
use serde_json::{Value, json};

use crate::common::TestApp;
use crate::send::Mailroom;
use crate::workflow_runs::workflow;

async fn sandbox_of(app: &TestApp, key: &str) -> Value {
    let (status, sandbox) = app.get("/domains/sandbox", key).await;
    assert_eq!(status, Status::Ok, "{sandbox}");
    sandbox
}

#[rocket::async_test]
async fn while_mail_is_captured_the_sandbox_sends_everything_into_the_outbox() {
    let app = TestApp::new().await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    let key = keys.secret_key.clone();
    let sandbox = sandbox_of(&app, &key).await;
    assert_eq!(sandbox["verified"], json!(true), "{sandbox}");
    let domain = sandbox["domain"].as_str().unwrap().to_string();
    assert!(domain.ends_with(".sandbox.invalid"), "{domain}");
    let from = format!("hello@{domain}");

    // A template draft, a transactional send, a campaign and its test send, a workflow's mail.
    let (status, _) = app.post("/contacts", &key, json!({ "email": "ada@example.org" })).await;
    assert_eq!(status, Status::Ok);
    let (status, template) = app
        .post(
            "/templates",
            &key,
            json!({ "name": "Welcome", "subject": "Welcome {{ firstName }}",
            "body": "<p>Hi</p>", "from": from, "type": "TRANSACTIONAL" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{template}");
    let (status, sent) = app
        .post(
            "/v1/send",
            &key,
            json!({ "to": "ada@example.org", "from": from, "subject": "Hi", "body": "<p>Hi</p>" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{sent}");
    let (status, made) = app
        .post(
            "/campaigns",
            &key,
            json!({ "name": "News", "subject": "News", "body": "<p>News</p>",
            "from": from, "audienceType": "ALL" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{made}");
    let campaign = made["data"]["id"].as_str().unwrap().to_string();
    let (status, tested) =
        app.post(&format!("/campaigns/{campaign}/test"), &key, json!({ "email": "me@example.org" })).await;
    assert_eq!(status, Status::Ok, "{tested}");
    let (status, started) = app.post(&format!("/campaigns/{campaign}/send"), &key, json!({})).await;
    assert_eq!(status, Status::Ok, "{started}");
    let outbox = async || app.get("/outbox?limit=100", &key).await.1;
    // Ada's send and campaign mail, and the test.
    app.run_jobs_until("the first mail in the outbox", async || {
        outbox().await["total"].as_i64().unwrap_or(0) >= 3
    })
    .await;
    let steps = [("mail", "SEND_EMAIL", json!({ "templateId": template["id"] }))];
    workflow(&app, &key, Some("signed-up"), &steps, &[("trigger", "mail", None)]).await;
    let (status, _) = app
        .post("/v1/track", &keys.public_key, json!({ "email": "bob@example.org", "event": "signed-up" }))
        .await;
    assert_eq!(status, Status::Ok);

    // And Bob's workflow mail.
    app.run_jobs_until("the sandbox's mail in the outbox", async || {
        outbox().await["total"].as_i64().unwrap_or(0) >= 4
    })
    .await;
    let listed = outbox().await;
    let mut subjects: Vec<(String, String)> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["to"].as_str().unwrap().to_string(), m["subject"].as_str().unwrap().to_string()))
        .collect();
    subjects.sort();
    assert_eq!(
        subjects,
        [
            ("ada@example.org".to_string(), "Hi".to_string()),
            ("ada@example.org".to_string(), "News".to_string()),
            ("bob@example.org".to_string(), "Welcome ".to_string()),
            ("me@example.org".to_string(), "[Test] News".to_string()),
        ],
        "{listed}"
    );
    assert!(
        listed["data"].as_array().unwrap().iter().all(|m| m["from"].as_str().unwrap().ends_with(&domain))
    );

    // Another project's sandbox is not ours: refused, and the suggestion names our own.
    let (_, other) = app.user_with_project("other@example.com").await;
    let theirs = sandbox_of(&app, &other.secret_key).await["domain"].as_str().unwrap().to_string();
    assert_ne!(theirs, domain);
    let (status, refused) = app
        .post("/v1/send", &key, json!({ "to": "ada@example.org", "from": format!("x@{theirs}"), "subject": "Hi", "body": "<p>Hi</p>" }))
        .await;
    assert_eq!(status, Status::Forbidden, "{refused}");
    assert_eq!(refused["error"]["details"], json!({ "domain": theirs, "reason": "DOMAIN_NOT_VERIFIED" }));
    let suggestion = refused["error"]["suggestion"].as_str().unwrap();
    assert!(suggestion.contains(&domain) && suggestion.contains("Domains page"), "{suggestion}");

    // No one adds a sandbox name as a domain of their own.
    for name in [domain.clone(), "sandbox.invalid".to_string()] {
        let (status, refused) = app.post("/domains", &key, json!({ "domain": name })).await;
        assert_eq!(status, Status::UnprocessableEntity, "{name}: {refused}");
    }
}

#[rocket::async_test]
async fn once_a_relay_is_configured_the_sandbox_no_longer_sends() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let sandbox = sandbox_of(app, &key).await;
    assert_eq!(sandbox["verified"], json!(false), "{sandbox}");
    let from = format!("hello@{}", sandbox["domain"].as_str().unwrap());
    let (status, refused) = app
        .post(
            "/templates",
            &key,
            json!({ "name": "Welcome", "subject": "Hi", "body": "<p>Hi</p>", "from": from }),
        )
        .await;
    assert_eq!(status, Status::Forbidden, "{refused}");
    assert!(!refused["error"]["suggestion"].as_str().unwrap().contains("captures mail"), "{refused}");
    let res = app.client.get("/config").dispatch().await;
    let config: Value = serde_json::from_str(&res.into_string().await.unwrap()).unwrap();
    assert_eq!(config["features"]["captured"], json!(false), "the dashboard reads it: {config}");
    // Nor does the server's own mail show in the outbox: it went to its recipients.
    let res = app.client.get("/outbox/system").cookie(room.session.clone()).dispatch().await;
    assert_eq!(res.status(), Status::Forbidden);
}

#[rocket::async_test]
async fn the_instance_owner_reads_the_servers_own_mail_while_it_is_captured() {
    let app = TestApp::new().await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    let (member, _) = app.user_with_project("member@example.com").await;
    // A password reset for the member: with mail captured, it reaches no one but the outbox.
    let res = app
        .client
        .post("/auth/request-password-reset")
        .header(ContentType::JSON)
        .body(json!({ "email": "member@example.com" }).to_string())
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let is_reset =
        |m: &Value| m["to"] == "member@example.com" && m["subject"].as_str().unwrap().contains("eset");
    let list = async || {
        let res = app.client.get("/outbox/system?limit=100").cookie(owner.clone()).dispatch().await;
        assert_eq!(res.status(), Status::Ok);
        serde_json::from_str::<Value>(&res.into_string().await.unwrap()).unwrap()
    };
    app.run_jobs_until("the reset in the outbox", async || {
        list().await["data"].as_array().unwrap().iter().any(is_reset)
    })
    .await;
    let listed = list().await;
    let reset = listed["data"].as_array().unwrap().iter().find(|m| is_reset(m)).unwrap();
    let id = reset["id"].as_i64().unwrap();
    let res = app.client.get(format!("/outbox/system/{id}")).cookie(owner.clone()).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    let read: Value = serde_json::from_str(&res.into_string().await.unwrap()).unwrap();
    assert!(read["html"].as_str().unwrap_or_default().contains("reset-password"), "{read}");

    // Only the instance's owner: not another account, not a key, not through a project's outbox.
    for path in ["/outbox/system".to_string(), format!("/outbox/system/{id}")] {
        let res = app.client.get(path.clone()).cookie(member.clone()).dispatch().await;
        assert_eq!(res.status(), Status::Forbidden, "{path}");
    }
    let res = app
        .client
        .get(format!("/outbox/system/{id}"))
        .header(Header::new("Authorization", format!("Bearer {}", keys.secret_key)))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Unauthorized, "a key is no account");
    let res = app
        .client
        .get(format!("/outbox/{id}"))
        .cookie(owner.clone())
        .header(Header::new("X-Project-Id", keys.id.clone()))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::NotFound, "a system message is no project's");
}
