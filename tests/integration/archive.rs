//! The campaign archive and web version (issue 32, item 8): `{{ viewInBrowserUrl }}` in a
//! campaign's mail opens the copy its contact got, without tracking; a public campaign that went
//! out is listed at `/archive/<slug>`, shown there and in the Atom feed rendered for no one; a
//! campaign that went out can be published and withdrawn, and nothing else about it changes; the
//! slug is the project's alone; renders are charged to the project and served from memory after.

use std::str::FromStr;

use rocket::http::{Method, Status};
use serde_json::{Value, json};
use tidings::core::links::{self, Link};

use crate::send::{LINKS, Mailroom};

const BODY: &str = "<html><body><p>Hello {{ firstName | default: \"there\" }} ({{ email }})</p>\
    <p><a href=\"https://example.org/read\">Read more</a> · <a href=\"{{ viewInBrowserUrl }}\">View in browser</a>\
    · <a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a></p><script>document.title = 'ran'</script></body></html>";

/// A campaign made and sent to every subscribed contact; its id.
async fn sent_campaign(room: &Mailroom, extra: Value) -> String {
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let mut body = json!({ "name": "November", "subject": "News for {{ firstName | default: \"you\" }}",
        "body": BODY, "from": "news@example.test", "audienceType": "ALL" });
    body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let (status, made) = app.post("/campaigns", &key, body).await;
    assert_eq!(status, Status::Ok, "{made}");
    let id = made["data"]["id"].as_str().unwrap().to_string();
    let (status, sent) = app.post(&format!("/campaigns/{id}/send"), &key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");
    id
}

/// A page's status, body and the headers named in [`HEADERS`] (absent ones empty).
async fn page(room: &Mailroom, path: &str) -> (Status, String, Headers) {
    let res = room.app.client.get(path.to_string()).dispatch().await;
    let status = res.status();
    let headers = HEADERS.map(|h| res.headers().get_one(h).unwrap_or_default().to_string());
    (status, res.into_string().await.unwrap_or_default(), Headers(headers))
}

const HEADERS: [&str; 5] =
    ["Content-Security-Policy", "Referrer-Policy", "Cache-Control", "Content-Type", "Vary"];

struct Headers([String; 5]);

impl Headers {
    fn get_one(&self, name: &str) -> Option<&str> {
        let at = HEADERS.iter().position(|h| *h == name)?;
        Some(self.0[at].as_str()).filter(|v| !v.is_empty())
    }
}

/// The first link in `html` that starts with `prefix`.
fn link_in(html: &str, prefix: &str) -> String {
    let start = html.find(prefix).unwrap_or_else(|| panic!("no {prefix} in {html}")) + prefix.len();
    html[start..].chars().take_while(|c| *c != '"').collect()
}

#[rocket::async_test]
async fn the_web_version_is_the_contacts_copy_without_tracking() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, ada) = app
        .post("/contacts", &key, json!({ "email": "ada@example.org", "data": { "firstName": "Ada" } }))
        .await;
    let ada = ada["id"].as_str().unwrap().to_string();
    let campaign = sent_campaign(&room, json!({})).await;
    let got = room.deliver(1).await;
    let mail = crate::send::parse(&got[0].data);
    let html = mail.body_html(0).unwrap().to_string();
    // The mail itself is tracked; its web version link is the signed one of this contact.
    assert!(html.contains(&format!("{LINKS}/t/c/")) && html.contains(&format!("{LINKS}/t/o/")), "{html}");
    let token = link_in(&html, &format!("{LINKS}/c/{campaign}/"));
    assert_eq!(
        links::verify(&app.state.secrets.link, &token),
        Some(Link::View { campaign: campaign.clone(), contact: ada.clone() })
    );

    let path = format!("/c/{campaign}/{token}");
    let (status, shown, headers) = page(&room, &path).await;
    assert_eq!(status, Status::Ok, "{shown}");
    assert!(shown.contains("Hello Ada (ada@example.org)"), "{shown}");
    assert!(
        shown.contains("href=\"https://example.org/read\""),
        "links go straight to their target: {shown}"
    );
    assert!(!shown.contains("/t/o/") && !shown.contains("/t/c/"), "no tracking: {shown}");
    assert!(shown.contains(&format!("{LINKS}{path}")), "it links to itself: {shown}");
    let csp = headers.get_one("Content-Security-Policy").unwrap();
    assert!(csp.starts_with("sandbox") && !csp.contains("allow-scripts"), "{csp}");
    assert_eq!(headers.get_one("Referrer-Policy"), Some("no-referrer"));
    assert_eq!(headers.get_one("Cache-Control"), Some("no-store"));

    // Its unsubscribe link is the contact's, credited to the campaign.
    let unsubscribe = link_in(&shown, &format!("{LINKS}/unsubscribe/"));
    assert_eq!(
        links::verify(&app.state.secrets.link, &unsubscribe),
        Some(Link::Unsubscribe {
            contact: ada.clone(),
            email: Some(room.app.store().value("emails", "id", &[("campaign_id", campaign.clone().into())]))
        })
    );

    // A forged token, or one moved to another campaign's path, finds nothing.
    for bad in [format!("/c/{campaign}/{token}x"), format!("/c/0190aaaa-0000-7000-8000-000000000000/{token}")]
    {
        let (status, _, _) = page(&room, &bad).await;
        assert_eq!(status, Status::NotFound, "{bad}");
    }
    // Viewing it changed nothing: no open, no click was recorded.
    let (_, stats) = app.get(&format!("/campaigns/{campaign}/stats"), &key).await;
    assert_eq!((stats["opened"].clone(), stats["clicked"].clone()), (json!(0), json!(0)), "{stats}");

    // A contact who has since gone gets the copy rendered for no one.
    let (status, _) = app.call(Method::Delete, &format!("/contacts/{ada}"), &key, None).await;
    assert_eq!(status, Status::NoContent);
    let (status, shown, _) = page(&room, &path).await;
    assert_eq!(status, Status::Ok);
    assert!(shown.contains("Hello there ()") && !shown.contains("ada@example.org"), "{shown}");
}

#[rocket::async_test]
async fn a_public_campaign_is_archived_without_personal_data_and_in_the_feed() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let project = room.keys.id.clone();
    for (email, name) in [("ada@example.org", "Ada"), ("bob@example.org", "Bob")] {
        app.post("/contacts", &key, json!({ "email": email, "data": { "firstName": name } })).await;
    }
    // Nothing public yet: no archive.
    let (status, _, _) = page(&room, &format!("/archive/{project}")).await;
    assert_eq!(status, Status::NotFound);

    let private = sent_campaign(&room, json!({ "name": "Private" })).await;
    let public =
        sent_campaign(&room, json!({ "public": true, "archiveData": { "firstName": "reader" } })).await;
    room.deliver(4).await;
    let (_, read) = app.get(&format!("/campaigns/{public}"), &key).await;
    assert_eq!(
        (read["public"].clone(), read["archiveData"].clone()),
        (json!(true), json!({ "firstName": "reader" }))
    );

    let (status, list, _) = page(&room, &format!("/archive/{project}")).await;
    assert_eq!(status, Status::Ok, "{list}");
    assert!(list.contains("News for reader"), "{list}");
    assert!(list.contains(&format!("href=\"/archive/{project}/{public}\"")), "{list}");
    assert!(!list.contains(&private), "only public campaigns: {list}");
    assert!(list.contains(&format!("href=\"/archive/{project}/feed.atom\"")), "{list}");

    let (status, copy, headers) = page(&room, &format!("/archive/{project}/{public}")).await;
    assert_eq!(status, Status::Ok, "{copy}");
    assert!(copy.contains("Hello reader ()"), "{copy}");
    for personal in ["Ada", "Bob", "@example.org", "/unsubscribe/", "/t/o/", "/t/c/"] {
        assert!(!copy.contains(personal), "{personal} in {copy}");
    }
    assert!(copy.contains(&format!("{LINKS}/archive/{project}/{public}")), "{copy}");
    assert!(headers.get_one("Content-Security-Policy").unwrap().starts_with("sandbox"));
    assert_eq!(headers.get_one("Cache-Control"), Some("public, max-age=300"));
    let (status, _, _) = page(&room, &format!("/archive/{project}/{private}")).await;
    assert_eq!(status, Status::NotFound, "a private campaign is not in the archive");

    let (status, xml, headers) = page(&room, &format!("/archive/{project}/feed.atom")).await;
    assert_eq!(status, Status::Ok);
    assert_eq!(headers.get_one("Content-Type"), Some("application/atom+xml"));
    assert!(headers.get_one("Content-Security-Policy").unwrap().contains("sandbox"));
    assert_eq!(headers.get_one("Vary"), Some("Accept-Language"), "cached once per language");
    let feed = atom_syndication::Feed::from_str(&xml).expect("a valid Atom feed");
    assert_eq!(feed.title.value, "Test project");
    assert_eq!(feed.entries.len(), 1);
    let entry = &feed.entries[0];
    assert_eq!(entry.title.value, "News for reader");
    assert_eq!(entry.id, format!("urn:uuid:{public}"));
    assert_eq!(entry.links[0].href, format!("{LINKS}/archive/{project}/{public}"));
    assert!(entry.content.as_ref().unwrap().value.as_deref().unwrap().contains("Hello reader"));

    // A slug gives the archive an address of its own; links follow it.
    let (status, branding) =
        app.call(Method::Patch, "/branding", &key, Some(json!({ "slug": "Acme-News" }))).await;
    assert_eq!(status, Status::Ok, "{branding}");
    assert_eq!(
        (branding["slug"].clone(), branding["archiveUrl"].clone()),
        (json!("acme-news"), json!(format!("{LINKS}/archive/acme-news")))
    );
    let (status, list, _) = page(&room, "/archive/acme-news").await;
    assert_eq!(status, Status::Ok);
    assert!(list.contains(&format!("href=\"/archive/acme-news/{public}\"")), "{list}");

    // A slug is one project's; one shaped like an id, or not a slug at all, is refused; nothing
    // is stored.
    let (_, other) = app.user_with_project("other@example.com").await;
    let (status, refused) =
        app.call(Method::Patch, "/branding", &other.secret_key, Some(json!({ "slug": "acme-news" }))).await;
    assert_eq!(status, Status::Conflict, "{refused}");
    for bad in
        [json!("0190aaaa-0000-7000-8000-000000000000"), json!("a b"), json!("x"), json!("-ab"), json!(7)]
    {
        let (status, refused) =
            app.call(Method::Patch, "/branding", &other.secret_key, Some(json!({ "slug": bad }))).await;
        assert!(status == Status::UnprocessableEntity || status == Status::BadRequest, "{bad}: {refused}");
    }
    let (_, theirs) = app.get("/branding", &other.secret_key).await;
    assert_eq!(theirs["slug"], Value::Null, "{theirs}");

    // A campaign that went out takes publication changes, and only those.
    let (status, refused) = app
        .call(
            Method::Put,
            &format!("/campaigns/{public}"),
            &key,
            Some(json!({ "public": false, "name": "x" })),
        )
        .await;
    assert_eq!(status, Status::BadRequest, "{refused}");
    let (status, refused) = app
        .call(Method::Put, &format!("/campaigns/{public}"), &key, Some(json!({ "archiveData": [1] })))
        .await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");
    let (_, read) = app.get(&format!("/campaigns/{public}"), &key).await;
    assert_eq!((read["name"].clone(), read["public"].clone()), (json!("November"), json!(true)));
    let (status, withdrawn) =
        app.call(Method::Put, &format!("/campaigns/{public}"), &key, Some(json!({ "public": false }))).await;
    assert_eq!((status, withdrawn["public"].clone()), (Status::Ok, json!(false)), "{withdrawn}");
    let (status, _, _) = page(&room, "/archive/acme-news").await;
    assert_eq!(status, Status::NotFound, "an archive with nothing public is not there");
    let (status, _, _) = page(&room, &format!("/archive/acme-news/{public}")).await;
    assert_eq!(status, Status::NotFound);
    let (status, published) =
        app.call(Method::Put, &format!("/campaigns/{private}"), &key, Some(json!({ "public": true }))).await;
    assert_eq!(status, Status::Ok, "{published}");
    let (_, list, _) = page(&room, "/archive/acme-news").await;
    assert!(
        list.contains(&format!("/archive/acme-news/{private}")) && list.contains("News for you"),
        "{list}"
    );
}

#[rocket::async_test]
async fn renders_are_charged_to_the_project_and_served_from_memory_after() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let project = room.keys.id.clone();
    app.post("/contacts", &key, json!({ "email": "ada@example.org" })).await;
    let first = sent_campaign(&room, json!({ "public": true })).await;
    let second = sent_campaign(&room, json!({ "public": true, "name": "December" })).await;
    room.deliver(2).await;
    let (status, _, _) = page(&room, &format!("/archive/{project}/{first}")).await;
    assert_eq!(status, Status::Ok);

    // Browsers spend the project's public share of the limit.
    let limiter = app.state.limiter.clone();
    while limiter.check_public(&project).is_ok() {}
    let (status, _, _) = page(&room, &format!("/archive/{project}/{first}")).await;
    assert_eq!(status, Status::Ok, "a copy already made costs nothing");
    let (status, busy, _) = page(&room, &format!("/archive/{project}/{second}")).await;
    assert_eq!(status, Status::TooManyRequests, "{busy}");
    let res = app.client.get(format!("/archive/{project}/{second}")).dispatch().await;
    assert_eq!(res.headers().get_one("Retry-After"), Some("60"));
    assert!(busy.contains("Too many requests"), "{busy}");
    // Another project's pages are not held up: its first render is made and served.
    let (_, other) = app.user_with_project("other@example.com").await;
    let (_, domain) = app.post("/domains", &other.secret_key, json!({ "domain": "other.test" })).await;
    for record in domain["records"].as_array().unwrap() {
        room.dns.txt(record["name"].as_str().unwrap(), record["value"].as_str().unwrap()).await;
    }
    app.get(&format!("/domains/{}/verify", domain["id"].as_str().unwrap()), &other.secret_key).await;
    app.post("/contacts", &other.secret_key, json!({ "email": "bob@example.org" })).await;
    let body = json!({ "name": "Theirs", "subject": "Their news", "body": "<p>Theirs</p>",
        "from": "news@other.test", "audienceType": "ALL", "public": true });
    let (_, made) = app.post("/campaigns", &other.secret_key, body).await;
    let theirs = made["data"]["id"].as_str().unwrap().to_string();
    let (status, sent) = app.post(&format!("/campaigns/{theirs}/send"), &other.secret_key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");
    room.deliver(3).await;
    let (status, copy, _) = page(&room, &format!("/archive/{}/{theirs}", other.id)).await;
    assert_eq!(status, Status::Ok, "{copy}");
    assert!(copy.contains("Theirs"), "{copy}");
}
