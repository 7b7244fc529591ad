//! The plain-text part of real mail (issue 28): every link in it is the same URL as in the HTML
//! part, whole, and opens: an address verification link, a password reset link, a campaign's
//! signed unsubscribe link and its tracked links.

use rocket::http::{Method, Status};
use serde_json::json;

use crate::send::{LINKS, Mailroom};

const SYSTEM_FROM: &str = "system@example.test";
/// A link longer than any wrap width, as apps put in their mail.
const LONG: &str = "https://app.example.org/onboarding/step-two?utm_source=newsletter&utm_medium=email&utm_campaign=spring-launch-2026&ref=abcdefghijklmnopqrstuvwxyz";

/// The links of a message: its HTML part's `href`s and its text part's URLs, each once, in
/// the order they first appear.
fn links(raw: &[u8]) -> (Vec<String>, Vec<String>, String) {
    fn once(mut list: Vec<String>) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        list.retain(|url| seen.insert(url.clone()));
        list
    }
    let parsed = mail_parser::MessageParser::default().parse(raw).unwrap();
    let html = parsed.body_html(0).unwrap().to_string();
    let text = parsed.body_text(0).unwrap().to_string();
    let hrefs =
        html.split("href=\"").skip(1).map(|s| s.split('"').next().unwrap().replace("&amp;", "&")).collect();
    // A link written `<url>`, or a bare URL ending a sentence.
    let urls = text
        .split_whitespace()
        .map(|w| match w.strip_prefix('<') {
            Some(delimited) => delimited.split('>').next().unwrap(),
            None => w.trim_end_matches(['.', ',', ';', ')']),
        })
        .filter(|w| w.starts_with("https://") || w.starts_with("http://"))
        .map(str::to_string)
        .collect();
    (once(hrefs), once(urls), text)
}

/// The message at the sink to `to` whose subject contains `subject`, once delivered.
async fn message(room: &Mailroom, to: &str, subject: &str) -> Vec<u8> {
    let find = || {
        room.sink.messages().into_iter().rev().find(|m| {
            m.to == [to.to_string()]
                && mail_parser::MessageParser::default()
                    .parse(&m.data)
                    .and_then(|p| p.subject().map(|s| s.contains(subject)))
                    .unwrap_or(false)
        })
    };
    room.app.run_jobs_until(&format!("{subject:?} to {to}"), async || find().is_some()).await;
    find().unwrap().data
}

/// Asserts the text part names exactly the HTML part's links, each whole, and that no line of
/// the message is longer than RFC 5322 allows.
fn same_links(raw: &[u8], expected: usize) -> Vec<String> {
    let (hrefs, urls, text) = links(raw);
    assert_eq!(urls, hrefs, "the text part's links are the HTML part's, in order:\n{text}");
    assert_eq!(urls.len(), expected, "{text}");
    let wire = String::from_utf8_lossy(raw);
    assert!(wire.lines().all(|l| l.len() <= 998), "no line of the message is over 998 characters");
    urls
}

fn path_of(url: &str) -> String {
    url.strip_prefix(LINKS).unwrap_or_else(|| panic!("{url} is not under {LINKS}")).to_string()
}

fn token_of(url: &str) -> String {
    url.split("token=").nth(1).unwrap().to_string()
}

#[rocket::async_test]
async fn account_links_in_the_text_part_open_as_they_are() {
    let room = Mailroom::with(|c| c.server.system_from = Some(format!("Tidings <{SYSTEM_FROM}>"))).await;
    let app = &room.app;
    let body = json!({ "email": "ada@example.com", "password": "password123" });
    let (status, _, _) = app.as_user(Method::Post, "/auth/signup", None, Some(body)).await;
    assert_eq!(status, Status::Ok);

    let raw = message(&room, "ada@example.com", "Confirm your email").await;
    let verify = same_links(&raw, 1).remove(0);
    assert!(verify.starts_with(&format!("{LINKS}/verify-email?token=")), "{verify}");
    let page = app.client.get(path_of(&verify)).dispatch().await;
    assert_eq!(page.status(), Status::Ok, "the link's page opens");
    let body = json!({ "token": token_of(&verify) });
    let (status, user, _) = app.as_user(Method::Post, "/auth/verify-email", None, Some(body)).await;
    assert_eq!((status, &user["emailVerified"]), (Status::Ok, &json!(true)), "{user}");

    let body = json!({ "email": "ada@example.com" });
    let (status, _, _) = app.as_user(Method::Post, "/auth/request-password-reset", None, Some(body)).await;
    assert_eq!(status, Status::Ok);
    let raw = message(&room, "ada@example.com", "Reset").await;
    let reset = same_links(&raw, 1).remove(0);
    assert!(reset.starts_with(&format!("{LINKS}/reset-password?token=")), "{reset}");
    assert_eq!(app.client.get(path_of(&reset)).dispatch().await.status(), Status::Ok);
    let body = json!({ "token": token_of(&reset), "password": "a new password" });
    let (status, reset, _) = app.as_user(Method::Post, "/auth/reset-password", None, Some(body)).await;
    assert_eq!(status, Status::Ok, "the token read from the text part resets the password: {reset}");
}

#[rocket::async_test]
async fn campaign_links_in_the_text_part_are_the_tracked_and_signed_ones() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (status, _) = room.app.post("/contacts", key, json!({ "email": "ada@example.test" })).await;
    assert_eq!(status, Status::Ok);
    let body = format!(
        "<table><tr><td><p>Our spring launch is here, with everything you asked for over the winter and a few \
         things you did not.</p><p><a href=\"{LONG}\">Start step two</a> or read <a href=\"https://example.org/notes\">the notes</a>.</p>\
         <p style=\"font-size:11px\"><a href=\"{{{{ unsubscribeUrl }}}}\">Unsubscribe</a></p></td></tr></table>"
    );
    let campaign = json!({ "name": "Spring", "subject": "Spring launch", "body": body,
        "from": "news@example.test", "audienceType": "ALL" });
    let (status, created) = room.app.post("/campaigns", key, campaign).await;
    assert_eq!(status, Status::Ok, "{created}");
    let id = created["data"]["id"].as_str().unwrap();
    let (status, sent) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");

    let raw = message(&room, "ada@example.test", "Spring launch").await;
    let urls = same_links(&raw, 3);
    assert!(urls[0].starts_with(&format!("{LINKS}/t/c/")) && urls[1].starts_with(&format!("{LINKS}/t/c/")));
    assert!(urls[2].starts_with(&format!("{LINKS}/unsubscribe/")), "{urls:?}");
    let (_, _, text) = links(&raw);
    assert!(text.contains("Start step two"), "{text}");

    // Each opens as it is: the tracked links redirect to where the HTML's links lead, the
    // unsubscribe link shows its page.
    for (url, target) in urls.iter().zip([LONG, "https://example.org/notes"]) {
        let res = room.app.client.get(path_of(url)).dispatch().await;
        assert_eq!(res.status(), Status::Found, "{url}");
        assert_eq!(res.headers().get_one("Location"), Some(target));
    }
    let page = room.app.client.get(path_of(&urls[2])).dispatch().await;
    assert_eq!(page.status(), Status::Ok);
    assert!(page.into_string().await.unwrap().contains("ada@example.test"));
}
