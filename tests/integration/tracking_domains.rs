//! A custom tracking domain (issue 34, item 6): set, published (a CNAME to the server's host and
//! a TXT record with the project's token, found by the loopback DNS server), verified, and then
//! used by the tracked links and open pixel of the project's mail; links left untracked per
//! link and per campaign; one project per host; removed, mail goes back to the server's URL.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::common::store::Set;
use crate::send::{LINKS, Mailroom};

const BODY: &str = "<p><a href=\"https://example.org/offer\">Offer</a> \
    <a data-notrack href=\"https://example.org/private\">Private</a> \
    <a clicktracking=\"off\" href=\"https://example.org/legal\">Legal</a></p>";

/// Sends a campaign of [`BODY`] to everyone, with `extra` fields; the HTML of the mail.
async fn sent_html(room: &Mailroom, name: &str, extra: Value, seen: usize) -> String {
    let key = &room.keys.secret_key;
    let mut fields = json!({ "name": name, "subject": "News", "body": BODY,
        "from": "news@example.test", "audienceType": "ALL" });
    fields.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let (status, made) = room.app.post("/campaigns", key, fields).await;
    assert_eq!(status, Status::Ok, "{made}");
    let id = made["data"]["id"].as_str().unwrap();
    let (status, _) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(seen + 1).await;
    crate::send::parse(&got[seen].data).body_html(0).unwrap().to_string()
}

#[rocket::async_test]
async fn tracked_links_use_the_projects_own_domain_once_it_is_proven() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let (status, _) = app.post("/contacts", key, json!({ "email": "ada@example.org" })).await;
    assert_eq!(status, Status::Ok);

    let (status, _) = app.get("/tracking-domain", key).await;
    assert_eq!(status, Status::NotFound);
    for bad in ["https://track.example.test", "not a domain", "10.0.0.1", ""] {
        let (status, refused) =
            app.call(Method::Put, "/tracking-domain", key, Some(json!({ "domain": bad }))).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
    }
    let (status, set) = app
        .call(Method::Put, "/tracking-domain", key, Some(json!({ "domain": "Track.Example.Test." })))
        .await;
    assert_eq!(status, Status::Ok, "{set}");
    assert_eq!((set["domain"].clone(), set["verified"].clone()), (json!("track.example.test"), json!(false)));
    let records = set["records"].as_array().unwrap().clone();
    assert_eq!(
        records[0],
        json!({ "type": "CNAME", "name": "track.example.test", "value": "links.example.test" })
    );
    assert_eq!(records[1]["name"], json!("_tidings-tracking.track.example.test"));
    let txt = records[1]["value"].as_str().unwrap().to_string();
    assert!(txt.starts_with("tidings-tracking="), "{txt}");

    // Until both records are found it is not verified, and mail uses the server's URL.
    let (_, checked) = app.post("/tracking-domain/verify", key, json!({})).await;
    assert_eq!(checked["verified"], json!(false));
    assert!(checked["lastError"].as_str().unwrap().contains("CNAME"), "{checked}");
    let html = sent_html(&room, "Before", json!({}), 0).await;
    assert!(html.contains(&format!("{LINKS}/t/c/")), "{html}");
    room.dns.cname("track.example.test", "links.example.test").await;
    let (_, checked) = app.post("/tracking-domain/verify", key, json!({})).await;
    assert!(checked["lastError"].as_str().unwrap().contains("TXT"), "{checked}");
    room.dns.txt("_tidings-tracking.track.example.test", &txt).await;
    let (_, checked) = app.post("/tracking-domain/verify", key, json!({})).await;
    assert_eq!(
        (checked["verified"].clone(), checked["lastError"].clone()),
        (json!(true), Value::Null),
        "{checked}"
    );

    // Another project cannot claim the host, even though it points here.
    let other = app.project(&room.session, "Other").await;
    let (status, _) = app
        .call(
            Method::Put,
            "/tracking-domain",
            &other.secret_key,
            Some(json!({ "domain": "track.example.test" })),
        )
        .await;
    assert_eq!(status, Status::Conflict);

    // Mail now tracks on the project's host; links marked untracked stay as written.
    app.store().set("emails", &[("sent_at", Set::Less(60_000))], &[]);
    let html = sent_html(&room, "After", json!({}), 1).await;
    let tracked: Vec<&str> =
        html.match_indices("https://track.example.test/t/c/").map(|(i, _)| &html[i..]).collect();
    assert_eq!(tracked.len(), 1, "only the tracked link: {html}");
    assert!(html.contains("https://track.example.test/t/o/"), "the open pixel: {html}");
    assert!(
        html.contains("href=\"https://example.org/private\"")
            && html.contains("href=\"https://example.org/legal\"")
    );
    assert!(!html.contains(LINKS), "nothing on the server's own URL: {html}");
    // The reverse proxy sends the host to this server, which answers the link as any other.
    let link = tracked[0].split('"').next().unwrap();
    let path = link.trim_start_matches("https://track.example.test");
    let response = app.client.get(path.to_string()).dispatch().await;
    assert_eq!(response.status(), Status::Found);
    assert_eq!(response.headers().get_one("Location"), Some("https://example.org/offer"));

    // A campaign may leave all its links untracked; the pixel stays.
    let html = sent_html(&room, "Untracked", json!({ "trackLinks": false }), 2).await;
    assert!(!html.contains("/t/c/") && html.contains("href=\"https://example.org/offer\""), "{html}");
    assert!(html.contains("https://track.example.test/t/o/"));

    // Removed, mail goes back to the server's URL.
    let (status, _) = app.call(Method::Delete, "/tracking-domain", key, None).await;
    assert_eq!(status, Status::NoContent);
    let html = sent_html(&room, "Removed", json!({}), 3).await;
    assert!(html.contains(&format!("{LINKS}/t/c/")), "{html}");
    let (status, _) = app.call(Method::Delete, "/tracking-domain", key, None).await;
    assert_eq!(status, Status::NotFound);
}
