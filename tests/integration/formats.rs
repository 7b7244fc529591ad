//! Bodies written in MJML, Markdown and the block editor's blocks (issue 33, item 2): kept as
//! written and compiled once to the HTML mail is rendered from; refusals that name the line,
//! column, text and block and leave the stored body as it was; test sends of templates and
//! campaigns rendered as a chosen contact; the starter layouts.

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::send::Mailroom;

fn blocks() -> String {
    json!({ "style": { "accentColor": "#0f766e" }, "blocks": [
        { "type": "heading", "text": "Hello {{ firstName ?? \"there\" }}" },
        { "type": "text", "html": "<p>Our <b>November</b> news.</p>" },
        { "type": "button", "label": "Read it", "href": "https://example.org/read" },
        { "type": "footer", "html": "Acme, 1 Road" }
    ]})
    .to_string()
}

async fn template(room: &Mailroom, format: &str, body: &str) -> (Status, Value) {
    let fields = json!({ "name": format, "subject": "Hi {{ firstName ?? \"you\" }}", "body": body,
        "from": "news@example.test", "format": format });
    room.app.post("/templates", &room.keys.secret_key, fields).await
}

#[rocket::async_test]
async fn each_format_is_kept_as_written_and_compiled_to_mail_html() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let sources = [
        ("markdown", "# Hi {{ firstName ?? \"there\" }}\n\n[Read]({{ readUrl ?? \"https://example.org\" }})".to_string()),
        (
            "mjml",
            "<mjml><mj-body><mj-section><mj-column><mj-text>Hi {{ firstName }}</mj-text></mj-column></mj-section></mj-body></mjml>"
                .to_string(),
        ),
        ("blocks", blocks()),
    ];
    for (format, source) in &sources {
        let (status, made) = template(&room, format, source).await;
        assert_eq!(status, Status::Ok, "{format}: {made}");
        assert_eq!((made["format"].as_str(), made["body"].as_str()), (Some(*format), Some(source.as_str())));
        let html = made["html"].as_str().expect("the compiled HTML is shown");
        assert!(html.contains("max-width:600px") && html.contains("{{ firstName"), "{format}: {html}");
        let (_, read) = room.app.get(&format!("/templates/{}", made["id"].as_str().unwrap()), key).await;
        assert_eq!(read, made);
    }
    // An HTML template shows no separate `html`, and says its format.
    let (_, plain) = template(&room, "html", "<p>Hi</p>").await;
    assert_eq!((plain["format"].clone(), plain.get("html")), (json!("html"), None));

    // A new format alone recompiles what was written.
    let (_, md) = template(&room, "markdown", "**bold** move").await;
    let id = md["id"].as_str().unwrap();
    let (status, as_html) = room
        .app
        .call(Method::Patch, &format!("/templates/{id}"), key, Some(json!({ "format": "html" })))
        .await;
    assert_eq!(status, Status::Ok, "{as_html}");
    assert_eq!((as_html["body"].clone(), as_html.get("html")), (json!("**bold** move"), None));

    // The preview compiles the format it is given.
    let (status, preview) = room
        .app
        .post(
            "/templates/preview",
            key,
            json!({ "subject": "s", "body": blocks(), "format": "blocks",
            "data": { "firstName": "Grace" } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{preview}");
    assert!(preview["html"].as_str().unwrap().contains("Hello Grace"), "{preview}");
}

#[rocket::async_test]
async fn refusals_name_the_place_and_leave_the_body_as_it_was() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (_, made) = template(&room, "blocks", &blocks()).await;
    let path = format!("/templates/{}", made["id"].as_str().unwrap());

    let liquid = "<p>Hello</p>\n<p>{{ name }} {% iff plan %}pro{% endif %}</p>";
    let mut broken_block: Value = serde_json::from_str(&blocks()).unwrap();
    broken_block["blocks"][2]["href"] = json!("javascript:alert(1)");
    let cases = [
        (json!({ "body": liquid, "format": "html" }), "invalid_template"),
        (json!({ "body": "<mjml><mj-body>", "format": "mjml" }), "invalid_template"),
        (json!({ "body": broken_block.to_string() }), "invalid_url"),
        (json!({ "body": "{\"blocks\": [{\"type\": \"marquee\"}]}" }), "invalid_blocks"),
        (json!({ "format": "rtf" }), "invalid_enum_value"),
        (json!({ "format": "mjml" }), "invalid_template"),
    ];
    for (change, code) in cases {
        let (status, refused) = room.app.call(Method::Patch, &path, key, Some(change.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{change}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["code"], json!(code), "{change}: {refused}");
        let (_, now) = room.app.get(&path, key).await;
        assert_eq!(now, made, "{change} changed nothing");
    }
    // A Liquid error says where, what and what to do.
    let (_, refused) =
        room.app.call(Method::Patch, &path, key, Some(json!({ "body": liquid, "format": "html" }))).await;
    let detail = &refused["error"]["errors"][0];
    assert_eq!(
        detail["received"],
        json!({ "line": 2, "column": 15, "text": "{% iff plan %}", "hint": "Did you mean `{% if %}`?" }),
        "{refused}"
    );
    assert!(detail["message"].as_str().unwrap().contains("line 2, column 15"), "{refused}");
    // ...and in a block, which block.
    let mut bad_liquid: Value = serde_json::from_str(&blocks()).unwrap();
    bad_liquid["blocks"][1]["html"] = json!("<p>{{ name | upcasee }}</p>");
    let (_, refused) =
        room.app.call(Method::Patch, &path, key, Some(json!({ "body": bad_liquid.to_string() }))).await;
    let received = &refused["error"]["errors"][0]["received"];
    assert_eq!(
        (received["block"].as_str(), received["hint"].as_str()),
        (Some("blocks[1].html"), Some("Did you mean `upcase`?"))
    );
}

#[rocket::async_test]
async fn test_sends_are_rendered_as_the_chosen_contact() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (_, ada) = room
        .app
        .post("/contacts", key, json!({ "email": "ada@example.org", "data": { "firstName": "Ada" } }))
        .await;
    let ada = ada["id"].as_str().unwrap().to_string();
    let (_, made) = template(&room, "blocks", &blocks()).await;
    let id = made["id"].as_str().unwrap();

    let (status, sent) = room
        .app
        .post(&format!("/templates/{id}/test"), key, json!({ "email": "me@example.org", "contactId": ada }))
        .await;
    assert_eq!(status, Status::Ok, "{sent}");
    assert_eq!(sent["to"], json!("me@example.org"));
    let (status, refused) = room
        .app
        .post(
            &format!("/templates/{id}/test"),
            key,
            json!({ "email": "me@example.org", "contactId": "nobody" }),
        )
        .await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(refused["error"]["errors"][0]["field"], json!("contactId"));

    // A campaign in blocks: its test as Ada, then the campaign itself to every contact.
    let (status, campaign) = room
        .app
        .post(
            "/campaigns",
            key,
            json!({ "name": "Nov", "subject": "News for {{ firstName ?? \"you\" }}",
            "body": blocks(), "format": "blocks", "from": "news@example.test", "audienceType": "ALL" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{campaign}");
    assert_eq!(
        (campaign["data"]["format"].as_str(), campaign["data"]["body"].as_str()),
        (Some("blocks"), Some(blocks().as_str()))
    );
    let campaign = campaign["data"]["id"].as_str().unwrap().to_string();
    let (status, _) = room
        .app
        .post(
            &format!("/campaigns/{campaign}/test"),
            key,
            json!({ "email": "me@example.org", "contactId": ada }),
        )
        .await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(2).await;
    for message in &got {
        let mail = crate::send::parse(&message.data);
        let html = mail.body_html(0).unwrap().to_string();
        assert!(mail.subject().unwrap().starts_with("[Test] "), "{:?}", mail.subject());
        assert!(html.contains("Hello Ada") && html.contains("<b>November</b>"), "rendered as Ada: {html}");
    }
    // A change to the campaign's subject keeps its blocks (a partial PUT sends no body).
    let (status, changed) = room
        .app
        .call(Method::Put, &format!("/campaigns/{campaign}"), key, Some(json!({ "subject": "New" })))
        .await;
    assert_eq!(status, Status::Ok, "{changed}");
    assert_eq!(
        (changed["format"].as_str(), changed["body"].as_str()),
        (Some("blocks"), Some(blocks().as_str()))
    );
    // A copy keeps what was written and how.
    let (status, copy) = room.app.post(&format!("/campaigns/{campaign}/duplicate"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{copy}");
    let copy = if copy["data"].is_object() { copy["data"].clone() } else { copy };
    assert_eq!((copy["format"].as_str(), copy["body"].as_str()), (Some("blocks"), Some(blocks().as_str())));
    assert_eq!(copy["html"], changed["html"]);
    let (status, _) = room.app.post(&format!("/campaigns/{campaign}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(3).await;
    let mail = crate::send::parse(&got[2].data);
    let html = mail.body_html(0).unwrap().to_string();
    assert!(html.contains("Hello Ada") && html.contains("/unsubscribe/"), "the footer's link: {html}");
}

#[rocket::async_test]
async fn every_starter_saves_as_a_template() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (status, starters) = room.app.get("/templates/starters", key).await;
    assert_eq!(status, Status::Ok);
    let starters = starters.as_array().unwrap();
    let formats: Vec<&str> = starters.iter().map(|s| s["format"].as_str().unwrap()).collect();
    assert_eq!(formats, ["blocks", "blocks", "markdown", "mjml"]);
    for s in starters {
        let (status, made) = room
            .app
            .post(
                "/templates",
                key,
                json!({ "name": s["name"], "subject": s["subject"], "body": s["body"],
                "format": s["format"], "type": s["type"], "from": "news@example.test" }),
            )
            .await;
        assert_eq!(status, Status::Ok, "{}: {made}", s["id"]);
    }
}
