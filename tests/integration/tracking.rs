//! Opens, clicks, List-Unsubscribe and the public pages, with forged tokens.

use rocket::http::{ContentType, Status};
use serde_json::json;
use tidings::core::links::{self, Link};
use tidings::db::{emails, events};

use crate::send::{LINKS, Mailroom};

fn path_of(url: &str) -> String {
    url.strip_prefix(LINKS).unwrap_or(url).to_string()
}

fn names(room: &Mailroom, contact: &str) -> Vec<String> {
    events::names_for_contact(&room.app.state.db.conn().unwrap(), contact).unwrap()
}

#[rocket::async_test]
async fn opens_and_clicks_move_the_email_forward() {
    let room = Mailroom::new().await;
    let ids = room
        .send_ok(json!({ "to": "ada@example.test", "from": "h@example.test", "subject": "Links",
            "body": "<html><body><a href=\"https://example.org/page?a=1&amp;b=2\">go</a></body></html>" }))
        .await;
    let messages = room.deliver(1).await;
    let html = mail_parser::MessageParser::default()
        .parse(&messages[0].data)
        .unwrap()
        .body_html(0)
        .unwrap()
        .to_string();
    let pixel = html.split("src=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let click = html.split("href=\"").nth(1).unwrap().split('"').next().unwrap().to_string();
    let contact = room.email(&ids[0]).contact_id.unwrap();

    let res = room.app.client.get(path_of(&pixel)).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(res.content_type(), Some(ContentType::GIF));
    assert_eq!(room.email(&ids[0]).status, "OPENED");
    room.app.client.get(path_of(&pixel)).dispatch().await;
    assert_eq!(names(&room, &contact), ["email.sent", "email.opened"], "one open event per email");

    let res = room.app.client.get(path_of(&click.replace("&amp;", "&"))).dispatch().await;
    assert_eq!(res.status(), Status::Found);
    assert_eq!(res.headers().get_one("Location"), Some("https://example.org/page?a=1&b=2"));
    let email = room.email(&ids[0]);
    assert_eq!(email.status, "CLICKED");
    assert!(email.clicked_at.is_some());
    assert_eq!(names(&room, &contact), ["email.sent", "email.opened", "email.clicked"]);
    let clicked: String = room.app.store().value("events", "data", &[("name", "email.clicked".into())]);
    assert!(clicked.contains("https://example.org/page?a=1&b=2") && clicked.contains(&ids[0]), "{clicked}");

    // An open after a click does not move the status back.
    room.app.client.get(path_of(&pixel)).dispatch().await;
    assert_eq!(room.email(&ids[0]).status, "CLICKED");

    // Forged and altered tokens: 404, nothing recorded.
    let forged_click = links::token(
        "not the secret",
        &Link::Click { email: ids[0].clone(), url: "https://evil.example".into() },
    );
    let altered = format!("{}x", pixel.rsplit('/').next().unwrap());
    for path in [format!("/t/c/{forged_click}"), format!("/t/o/{altered}"), "/t/o/garbage".to_string()] {
        let res = room.app.client.get(path.clone()).dispatch().await;
        assert_eq!(res.status(), Status::NotFound, "{path}");
    }
    assert_eq!(names(&room, &contact).len(), 3);
}

#[rocket::async_test]
async fn marketing_mail_offers_one_click_unsubscribe() {
    let room = Mailroom::new().await;
    room.app
        .post("/contacts", &room.keys.secret_key, json!({ "email": "ada@example.test", "subscribed": true }))
        .await;
    let (_, template) = room
        .app
        .post("/templates", &room.keys.secret_key, json!({ "name": "News", "subject": "News", "type": "MARKETING",
            "body": "<p>News</p><a href=\"{{ unsubscribeUrl }}\">unsubscribe</a> <a href=\"{{ manageUrl }}\">manage</a>", "from": "news@example.test" }))
        .await;
    let ids = room.send_ok(json!({ "to": "ada@example.test", "template": template["id"] })).await;
    let messages = room.deliver(1).await;
    let message = mail_parser::MessageParser::default().parse(&messages[0].data).unwrap();
    let list = message.header_raw("List-Unsubscribe").unwrap().trim().to_string();
    assert!(list.starts_with(&format!("<{LINKS}/unsubscribe/")) && list.ends_with('>'), "{list}");
    assert_eq!(
        message.header_raw("List-Unsubscribe-Post").map(str::trim),
        Some("List-Unsubscribe=One-Click")
    );
    let html = message.body_html(0).unwrap().to_string();
    assert!(
        html.contains(&format!("{LINKS}/unsubscribe/")),
        "unsubscribeUrl rendered and not click-tracked: {html}"
    );
    let unsubscribe = path_of(list.trim_start_matches('<').trim_end_matches('>'));
    let contact = room.email(&ids[0]).contact_id.unwrap();

    let page = room.app.client.get(unsubscribe.clone()).dispatch().await;
    assert_eq!(page.status(), Status::Ok);
    assert_eq!(page.content_type(), Some(ContentType::HTML));
    let text = page.into_string().await.unwrap();
    assert!(text.contains("ada@example.test") && text.contains("<form method=\"post\""), "{text}");
    let (_, before) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert_eq!(before["subscribed"], json!(true), "viewing the page changes nothing");

    // RFC 8058 one-click POST.
    let res = room
        .app
        .client
        .post(unsubscribe.clone())
        .header(ContentType::Form)
        .body("List-Unsubscribe=One-Click")
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    assert!(res.into_string().await.unwrap().contains("will get no more email from"));
    let (_, after) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert_eq!(after["subscribed"], json!(false));
    assert!(names(&room, &contact).contains(&"contact.unsubscribed".to_string()));

    // Further marketing mail is not sent to them.
    let again = room.send_ok(json!({ "to": "ada@example.test", "template": template["id"] })).await;
    let email = room.email(&again[0]);
    assert_eq!(email.status, "FAILED");
    assert!(email.last_error.unwrap().contains("unsubscribed"));

    // The subscribe and manage pages flip it back and forth.
    let secret = &room.app.state.secrets.link;
    let subscribe =
        format!("/subscribe/{}", links::token(secret, &Link::Subscribe { contact: contact.clone() }));
    assert_eq!(room.app.client.get(subscribe.clone()).dispatch().await.status(), Status::Ok);
    let res = room.app.client.post(subscribe).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert!(res.into_string().await.unwrap().contains("is subscribed to"));
    let (_, resubscribed) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert_eq!(resubscribed["subscribed"], json!(true));
    let manage = format!("/manage/{}", links::token(secret, &Link::Manage { contact: contact.clone() }));
    let page = room.app.client.get(manage.clone()).dispatch().await.into_string().await.unwrap();
    assert!(page.contains("is subscribed"), "{page}");
    let res = room
        .app
        .client
        .post(manage.clone())
        .header(ContentType::Form)
        .body("action=unsubscribe")
        .dispatch()
        .await;
    assert!(res.into_string().await.unwrap().contains("not subscribed"));
    let (_, managed) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert_eq!(managed["subscribed"], json!(false));

    // Forged tokens change nothing.
    let forged = links::token("wrong secret", &Link::Subscribe { contact: contact.clone() });
    for (method, path) in [
        ("GET", format!("/subscribe/{forged}")),
        ("POST", format!("/subscribe/{forged}")),
        ("POST", format!("/unsubscribe/{forged}x")),
    ] {
        let res = if method == "GET" {
            room.app.client.get(path.clone()).dispatch().await
        } else {
            room.app.client.post(path.clone()).dispatch().await
        };
        assert_eq!(res.status(), Status::NotFound, "{method} {path}");
    }
    let (_, unchanged) = room.app.get(&format!("/contacts/{contact}"), &room.keys.secret_key).await;
    assert_eq!(unchanged["subscribed"], json!(false));
    let _ = emails::rank("SENT");
}
