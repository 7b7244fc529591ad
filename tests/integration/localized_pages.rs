//! Localized and branded public pages (issue 32, item 7): every page a contact or visitor sees,
//! and the confirmation mail, in each shipped language, picked from the contact's `locale`, the
//! link's `?lang=`, the browser and the project's default; a project's own wording, name, logo
//! and colour on them; and `/branding` refusing what it cannot take, storing nothing.

use rocket::http::{ContentType, Header, Method, Status};
use serde_json::{Value, json};
use tidings::core::i18n::{Lang, shipped};
use tidings::core::links::{self, Link, escape_html};

use crate::send::{LINKS, Mailroom};
use crate::uploads::PNG;

/// The shipped text of `key` in `lang`, as a page prints it (before its variables are filled,
/// so only texts without variables are compared whole).
fn text(lang: Lang, key: &str) -> String {
    escape_html(shipped(lang, key).unwrap())
}

async fn page(room: &Mailroom, path: &str, accept: Option<&str>) -> (Status, String) {
    let mut req = room.app.client.get(path.to_string());
    if let Some(accept) = accept {
        req = req.header(Header::new("Accept-Language", accept.to_string()));
    }
    let res = req.dispatch().await;
    (res.status(), res.into_string().await.unwrap())
}

fn token(room: &Mailroom, link: &Link) -> String {
    links::token(&room.app.state.secrets.link, link)
}

/// `<html lang>` and `<h1>` of a page.
fn lang_and_title(html: &str) -> (String, String) {
    let lang = html.split("<html lang=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or("").to_string();
    let title = html.split("<h1>").nth(1).and_then(|r| r.split("</h1>").next()).unwrap_or("").to_string();
    (lang, title)
}

#[rocket::async_test]
async fn every_page_and_the_confirmation_mail_come_in_each_shipped_language() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, form) = app.post("/forms", &key, json!({ "name": "Signup", "doubleOptIn": true })).await;
    let form = form["id"].as_str().unwrap().to_string();
    // Tags as people write them: a region, an underscore, capitals.
    let tags =
        [("en", "en-GB"), ("de", "de_AT"), ("fr", "fr"), ("es", "ES"), ("pt", "pt-BR"), ("nl", "nl-BE")];
    for (n, (lang, (code, tag))) in Lang::ALL.into_iter().zip(tags).enumerate() {
        assert_eq!(lang.code(), code);
        let email = format!("reader-{code}@example.org");
        let body = json!({ "email": email, "data": { "locale": tag }, "confirm": true });
        let (status, contact) = app.post("/contacts", &key, body).await;
        assert_eq!(status, Status::Ok, "{contact}");
        let id = contact["id"].as_str().unwrap().to_string();

        // The confirmation mail, then its page, in the contact's language.
        let got = room.deliver(n + 1).await;
        let mail = crate::send::parse(&got[n].data);
        let subject = shipped(lang, "mail.confirm_subject").unwrap().replace("{{ project }}", "Test project");
        assert_eq!(mail.subject(), Some(subject.as_str()), "{code}: {contact}");
        let html = mail.body_html(0).unwrap().to_string();
        assert!(html.contains(&text(lang, "mail.confirm_button")), "{code}: {html}");
        let prefix = format!("{LINKS}/confirm/");
        let start = html.find(&prefix).unwrap() + prefix.len();
        let confirm: String = html[start..].chars().take_while(|c| *c != '"').collect();
        // The browser says English; the contact's locale wins.
        let (status, shown) = page(&room, &format!("/confirm/{confirm}"), Some("en-US,en;q=0.9")).await;
        assert_eq!(status, Status::Ok);
        assert_eq!(lang_and_title(&shown), (code.to_string(), text(lang, "confirm.title")), "{shown}");
        assert!(shown.contains(&text(lang, "confirm.button")), "{shown}");
        let res = app.client.post(format!("/confirm/{confirm}")).dispatch().await;
        let done = res.into_string().await.unwrap();
        assert_eq!(lang_and_title(&done), (code.to_string(), text(lang, "confirm.done_title")), "{done}");

        let paths = [
            (
                format!(
                    "/unsubscribe/{}",
                    token(&room, &Link::Unsubscribe { contact: id.clone(), email: None })
                ),
                "unsubscribe.title",
            ),
            (format!("/manage/{}", token(&room, &Link::Manage { contact: id.clone() })), "manage.title"),
            (
                format!("/subscribe/{}", token(&room, &Link::Subscribe { contact: id.clone() })),
                "subscribe.title",
            ),
        ];
        for (path, title) in paths {
            let (status, shown) = page(&room, &path, None).await;
            assert_eq!(status, Status::Ok, "{path}");
            assert_eq!(lang_and_title(&shown), (code.to_string(), text(lang, title)), "{path}: {shown}");
        }
        let (_, manage) =
            page(&room, &format!("/manage/{}", token(&room, &Link::Manage { contact: id })), None).await;
        assert!(manage.contains(&text(lang, "manage.pause_heading")), "{manage}");

        // A visitor has no contact: the browser's language, then the link's.
        let (_, hosted) = page(&room, &format!("/f/{form}"), Some(&format!("ja, {tag};q=0.8"))).await;
        assert_eq!(lang_and_title(&hosted).0, code, "{hosted}");
        assert!(hosted.contains(&format!(">{}</button>", text(lang, "form.submit"))), "{hosted}");
        let (_, chosen) = page(&room, &format!("/f/{form}?lang={code}"), Some("ja")).await;
        assert_eq!(lang_and_title(&chosen).0, code);
        let (status, missing) = page(&room, "/manage/forged", Some(tag)).await;
        assert_eq!(status, Status::NotFound);
        assert_eq!(lang_and_title(&missing), (code.to_string(), text(lang, "page.not_found_title")));
    }
    // The embed carries the reader's words into another site's page.
    let res = app
        .client
        .get(format!("/f/{form}/embed.js"))
        .header(Header::new("Accept-Language", "nl"))
        .dispatch()
        .await;
    let script = res.into_string().await.unwrap();
    assert!(
        script.contains(&format!("\"submit\":\"{}\"", shipped(Lang::Nl, "form.submit").unwrap())),
        "embed"
    );
    assert!(script.contains("/submit?lang=nl"), "its submissions say which language they were read in");
}

/// The archive of public campaigns (item 8) in each shipped language, from the browser's.
#[rocket::async_test]
async fn the_archive_comes_in_each_shipped_language() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    app.post("/contacts", &key, json!({ "email": "kim@example.org" })).await;
    let body = json!({ "name": "News", "subject": "News", "body": "<p>News</p>", "from": "news@example.test",
        "audienceType": "ALL", "public": true });
    let (_, made) = app.post("/campaigns", &key, body).await;
    let id = made["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(app.post(&format!("/campaigns/{id}/send"), &key, json!({})).await.0, Status::Ok);
    room.deliver(1).await;
    let tags = ["en-GB", "de_AT", "fr", "ES", "pt-BR", "nl-BE"];
    for (lang, tag) in Lang::ALL.into_iter().zip(tags) {
        let (status, shown) = page(&room, &format!("/archive/{}", room.keys.id), Some(tag)).await;
        assert_eq!(status, Status::Ok, "{tag}");
        assert_eq!(lang_and_title(&shown), (lang.code().to_string(), text(lang, "archive.title")), "{shown}");
        assert!(shown.contains(&text(lang, "archive.feed")), "{shown}");
    }
}

#[rocket::async_test]
async fn a_project_words_names_and_colours_its_pages_and_sets_their_default_language() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (_, contact) = app.post("/contacts", &key, json!({ "email": "kim@example.org" })).await;
    let manage = format!(
        "/manage/{}",
        token(&room, &Link::Manage { contact: contact["id"].as_str().unwrap().into() })
    );

    // A contact without a locale and a browser that names no shipped language: English, until
    // the project picks a default (here as Plunk's clients set it, on the project).
    let (_, shown) = page(&room, &manage, Some("ja")).await;
    assert_eq!(lang_and_title(&shown).0, "en");
    let project = format!("/users/@me/projects/{}", room.keys.id);
    let res = app
        .client
        .patch(project)
        .cookie(room.session.clone())
        .header(ContentType::JSON)
        .body(json!({ "language": "fr" }).to_string())
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let (_, shown) = page(&room, &manage, Some("ja")).await;
    assert_eq!(lang_and_title(&shown), ("fr".into(), text(Lang::Fr, "manage.title")));
    let (_, shown) = page(&room, &manage, Some("de")).await;
    assert_eq!(lang_and_title(&shown).0, "de", "the reader's browser comes before the project's default");

    // A logo the project uploaded, a name, a colour and its own words.
    let (_, logo) = app.upload_csv_to("/uploads/image", &key, PNG).await;
    let (status, saved) = app
        .call(
            Method::Patch,
            "/branding",
            &key,
            Some(json!({ "name": "Acme <News>", "logo": logo["id"], "color": "#FFD500",
                "texts": { "fr": { "manage.title": "Vos envois de {{ project }}" } } })),
        )
        .await;
    assert_eq!(status, Status::Ok, "{saved}");
    assert_eq!(saved["color"], "#ffd500");
    assert_eq!(saved["logoUrl"], logo["url"].as_str().unwrap().replace(LINKS, ""));
    let (_, shown) = page(&room, &manage, Some("ja")).await;
    assert_eq!(lang_and_title(&shown).1, "Vos envois de Acme &lt;News&gt;", "escaped once: {shown}");
    // A project's words are text: markup in them is shown, never run, on every page.
    let hostile = json!({ "texts": { "fr": { "manage.subscribed": "<img src=x onerror=alert(1)> {{ email | raw }}" } } });
    assert_eq!(app.call(Method::Patch, "/branding", &key, Some(hostile)).await.0, Status::Ok);
    let (_, shown) = page(&room, &manage, Some("ja")).await;
    assert!(
        !shown.contains("<img src=x") && shown.contains("&lt;img src=x onerror=alert(1)&gt; kim@example.org"),
        "{shown}"
    );
    let undo = json!({ "texts": { "fr": { "manage.subscribed": null } } });
    let (_, saved) = app.call(Method::Patch, "/branding", &key, Some(undo)).await;
    assert!(shown.contains(&format!(
        "<img src=\"{}\" alt=\"Acme &lt;News&gt;\">",
        saved["logoUrl"].as_str().unwrap()
    )));
    assert!(shown.contains("--accent:#ffd500;--on-accent:#000000"), "dark text on a light accent: {shown}");

    // What cannot be taken is refused, naming the field, and nothing changes.
    let (_, other) = app.user_with_project("eve@example.com").await;
    let (_, foreign) = app.upload_csv_to("/uploads/image", &other.secret_key, PNG).await;
    for (body, field) in [
        (json!({ "logo": foreign["id"] }), "logo"),
        (json!({ "color": "red" }), "color"),
        (json!({ "language": "ja" }), "language"),
        (json!({ "name": "a\nb" }), "name"),
        (json!({ "texts": { "ja": { "manage.title": "x" } } }), "texts.ja"),
        (json!({ "texts": { "de": { "manage.nope": "x" } } }), "texts.de.manage.nope"),
        (json!({ "texts": { "de": { "manage.title": "{% if %}" } } }), "texts.de.manage.title"),
        (json!({ "texts": { "de": { "manage.title": "x".repeat(501) } } }), "texts.de.manage.title"),
    ] {
        let (status, refused) = app.call(Method::Patch, "/branding", &key, Some(body.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{body}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], field, "{refused}");
    }
    let (_, after) = app.get("/branding", &key).await;
    assert_eq!(after, saved, "nothing refused was stored");

    // A null text goes back to the shipped one; the preview shows unsaved changes.
    let cleared = json!({ "texts": { "fr": { "manage.title": null } } });
    assert_eq!(app.call(Method::Patch, "/branding", &key, Some(cleared)).await.0, Status::Ok);
    let (_, shown) = page(&room, &manage, Some("ja")).await;
    assert_eq!(lang_and_title(&shown).1, text(Lang::Fr, "manage.title"));
    let res = app
        .client
        .post("/branding/preview")
        .header(Header::new("Authorization", format!("Bearer {key}")))
        .header(ContentType::JSON)
        .body(json!({ "page": "confirm", "language": "es", "changes": { "color": "#123456" } }).to_string())
        .dispatch()
        .await;
    let preview = res.into_string().await.unwrap();
    assert_eq!(lang_and_title(&preview), ("es".into(), text(Lang::Es, "confirm.title")));
    assert!(preview.contains("--accent:#123456"), "{preview}");
    let (_, after) = app.get("/branding", &key).await;
    assert_eq!(after["color"], "#ffd500", "a preview saves nothing");
    let (_, catalogue) = app.get("/branding/texts", &key).await;
    let languages: Vec<Value> =
        catalogue["languages"].as_array().unwrap().iter().map(|l| l["code"].clone()).collect();
    assert_eq!(languages, vec![json!("en"), json!("de"), json!("fr"), json!("es"), json!("pt"), json!("nl")]);
    let title =
        catalogue["texts"].as_array().unwrap().iter().find(|t| t["key"] == "unsubscribe.topic_ask").unwrap();
    assert_eq!(title["variables"], json!(["topic", "project", "email"]));
}
