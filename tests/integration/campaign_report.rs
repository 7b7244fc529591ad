//! A campaign's report (issue 33, item 3): opens and clicks over time with machines' apart
//! (a privacy proxy's open, a scanner's click), clicks per link, the recipients with their
//! status filtered and exported as CSV, the receiving providers; and the cap on what one email's
//! opens can record.

use rocket::http::{Header, Status};
use serde_json::{Value, json};

use crate::common::smtp_sink::Received;
use crate::common::store::Set;
use crate::send::Mailroom;

pub(crate) const CHROME: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120 Safari/537.36";
const BODY: &str = "<p>Hi {{ firstName ?? \"there\" }}</p><p><a href=\"https://example.org/offer\">Offer</a> \
    <a href=\"https://example.org/about\">About</a> <a href=\"{{ unsubscribeUrl }}\">Unsubscribe</a></p>";

/// Fetches a tracking link's path as a client with `agent`.
pub(crate) async fn hit(room: &Mailroom, url: &str, agent: &str) -> Status {
    let path = url.split_once("/t/").map(|(_, rest)| format!("/t/{rest}")).unwrap();
    room.app.client.get(path).header(Header::new("User-Agent", agent.to_string())).dispatch().await.status()
}

/// The tracking links of the mail to `to`: the open pixel and the click links in order.
pub(crate) fn links_of(got: &[Received], to: &str) -> (String, Vec<String>) {
    let message =
        got.iter().find(|m| m.to.iter().any(|t| t == to)).unwrap_or_else(|| panic!("no mail to {to}"));
    let mail = crate::send::parse(&message.data);
    let html = mail.body_html(0).unwrap().to_string();
    let grab = |marker: &str| -> Vec<String> {
        html.match_indices(marker)
            .map(|(i, _)| {
                let start = html[..i].rfind('"').unwrap() + 1;
                let end = i + html[i..].find('"').unwrap();
                html[start..end].to_string()
            })
            .collect()
    };
    (grab("/t/o/").remove(0), grab("/t/c/"))
}

/// A DRAFT campaign named `name` of [`BODY`] to every contact; its id.
pub(crate) async fn campaign(room: &Mailroom, name: &str) -> String {
    let fields = json!({ "name": name, "subject": "An offer", "body": BODY,
        "from": "news@example.test", "audienceType": "ALL" });
    let (status, made) = room.app.post("/campaigns", &room.keys.secret_key, fields).await;
    assert_eq!(status, Status::Ok, "{made}");
    made["data"]["id"].as_str().unwrap().to_string()
}

#[rocket::async_test]
async fn the_report_tells_people_from_machines_and_lists_every_recipient() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    for (email, name) in [
        ("ada@gmail.com", "Ada"),
        ("bob@googlemail.com", "Bob"),
        ("cy@outlook.com", "Cy"),
        ("di@acme.test", "Di"),
    ] {
        let (status, _) =
            room.app.post("/contacts", key, json!({ "email": email, "data": { "firstName": name } })).await;
        assert_eq!(status, Status::Ok);
    }
    let id = campaign(&room, "Offer").await;
    // A test send is no recipient, and its opens are no part of the report.
    let (status, _) =
        room.app.post(&format!("/campaigns/{id}/test"), key, json!({ "email": "boss@acme.test" })).await;
    assert_eq!(status, Status::Ok);
    let tested = room.deliver(1).await;
    let (test_open, _) = links_of(&tested, "boss@acme.test");
    room.app.store().set(
        "emails",
        &[("sent_at", Set::Less(60_000))],
        &[("to_email", "boss@acme.test".into())],
    );
    assert_eq!(hit(&room, &test_open, CHROME).await, Status::Ok);
    let (status, _) = room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(5).await;
    // Sent a minute ago: a click now is a person's pace.
    room.app.store().set("emails", &[("sent_at", Set::Less(60_000))], &[("campaign_id", id.as_str().into())]);
    room.app.store().set("campaigns", &[("sent_at", Set::Less(60_000))], &[("id", id.as_str().into())]);

    let (ada_open, ada_clicks) = links_of(&got, "ada@gmail.com");
    assert_eq!(hit(&room, &ada_open, CHROME).await, Status::Ok);
    assert_eq!(hit(&room, &ada_clicks[0], CHROME).await, Status::Found);
    assert_eq!(hit(&room, &ada_clicks[0], CHROME).await, Status::Found);
    // She reads on for a while before her second link (two links at once are a scanner's).
    room.app.store().set("email_engagements", &[("at", Set::Less(10_000))], &[("kind", "click".into())]);
    assert_eq!(hit(&room, &ada_clicks[1], CHROME).await, Status::Found);
    // Bob's mail is behind Apple's privacy proxy, and his company's scanner follows every link.
    let (bob_open, bob_clicks) = links_of(&got, "bob@googlemail.com");
    assert_eq!(hit(&room, &bob_open, "Mozilla/5.0").await, Status::Ok);
    assert_eq!(hit(&room, &bob_clicks[0], "python-requests/2.31").await, Status::Found);
    // Cy opens in Gmail's image proxy: a person.
    let (cy_open, _) = links_of(&got, "cy@outlook.com");
    let gmail = "Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)";
    assert_eq!(hit(&room, &cy_open, gmail).await, Status::Ok);
    // Bob's other link is checked with a HEAD and a browser's User-Agent: a machine still.
    let path = bob_clicks[1].split_once("/t/").map(|(_, rest)| format!("/t/{rest}")).unwrap();
    let checked = room.app.client.head(path).header(Header::new("User-Agent", CHROME)).dispatch().await;
    assert_eq!(checked.status(), Status::Found, "a HEAD is answered as the GET, without a body");

    let (status, report) = room.app.get(&format!("/campaigns/{id}/report"), key).await;
    assert_eq!(status, Status::Ok, "{report}");
    assert_eq!(
        (report["opened"].clone(), report["clicked"].clone()),
        (json!({ "people": 2, "machinesOnly": 1 }), json!({ "people": 1, "machinesOnly": 1 })),
        "{report}"
    );
    assert_eq!(
        report["links"],
        json!([
            { "url": "https://example.org/offer", "clicks": 2, "uniqueClicks": 1, "machineClicks": 1 },
            { "url": "https://example.org/about", "clicks": 1, "uniqueClicks": 1, "machineClicks": 1 },
        ])
    );
    assert_eq!(report["bucket"], json!("hour"));
    let timeline = report["timeline"].as_array().unwrap();
    let sum = |key: &str| timeline.iter().map(|p| p[key].as_i64().unwrap()).sum::<i64>();
    assert_eq!((sum("opens"), sum("clicks"), sum("machineOpens"), sum("machineClicks")), (2, 3, 1, 2));
    let providers: Vec<(&str, i64, i64)> = report["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (p["name"].as_str().unwrap(), p["recipients"].as_i64().unwrap(), p["opened"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(providers, [("Gmail", 2, 2), ("Outlook", 1, 1), ("acme.test", 1, 0)]);
    assert_eq!(report["totals"]["recipients"], json!(4));
    assert_eq!(report["captured"], json!(false));

    // The recipients, each with the furthest its email went; filtered; paged; exported.
    let (status, page) = room.app.get(&format!("/campaigns/{id}/recipients"), key).await;
    assert_eq!(status, Status::Ok, "{page}");
    assert_eq!(page["total"], json!(4));
    let statuses: Vec<(String, String)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["email"].as_str().unwrap().to_string(), r["status"].as_str().unwrap().to_string()))
        .collect();
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            ("ada@gmail.com".to_string(), "clicked".to_string()),
            ("bob@googlemail.com".into(), "clicked".into()),
            ("cy@outlook.com".into(), "opened".into()),
            ("di@acme.test".into(), "sent".into()),
        ]
    );
    let (_, clicked) =
        room.app.get(&format!("/campaigns/{id}/recipients?status=clicked&search=ADA"), key).await;
    assert_eq!(
        (clicked["total"].clone(), clicked["data"][0]["email"].clone()),
        (json!(1), json!("ada@gmail.com"))
    );
    let (_, first) = room.app.get(&format!("/campaigns/{id}/recipients?limit=3"), key).await;
    let cursor = first["cursor"].as_str().unwrap();
    let (_, second) = room.app.get(&format!("/campaigns/{id}/recipients?limit=3&cursor={cursor}"), key).await;
    assert_eq!((first["data"].as_array().unwrap().len(), second["data"].as_array().unwrap().len()), (3, 1));
    assert_eq!(second["hasMore"], json!(false));
    let (status, refused) = room.app.get(&format!("/campaigns/{id}/recipients?status=lost"), key).await;
    assert_eq!(status, Status::UnprocessableEntity, "{refused}");

    let response = room
        .app
        .client
        .get(format!("/campaigns/{id}/recipients/export?status=opened"))
        .header(Header::new("Authorization", format!("Bearer {key}")))
        .dispatch()
        .await;
    assert_eq!(response.status(), Status::Ok);
    assert_eq!(response.content_type().map(|c| c.to_string()).as_deref(), Some("text/csv"));
    let csv = response.into_string().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "email,status,sentAt,openedAt,clickedAt,bounceType,unsubscribedAt,error,contactId");
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].starts_with("cy@outlook.com,opened,"), "{csv}");

    // The project-wide views (Plunk v2's newest analytics) over the same mail.
    let (status, links) = room.app.get("/analytics/links?stream=campaign", key).await;
    assert_eq!(status, Status::Ok, "{links}");
    assert_eq!(links["links"], report["links"]);
    let (_, heat) = room.app.get("/analytics/heatmap?tz=Europe/Berlin", key).await;
    let cells = heat["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 168);
    let sum = |key: &str| cells.iter().map(|c| c[key].as_i64().unwrap()).sum::<i64>();
    assert_eq!((sum("opens"), sum("clicks")), (3, 3), "people only, the test send's open included: {heat}");
    let (status, _) = room.app.get("/analytics/heatmap?tz=Mars/Olympus", key).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (status, _) = room.app.get("/analytics/links?stream=carrier-pigeon", key).await;
    assert_eq!(status, Status::UnprocessableEntity);
    let (_, delivery) = room.app.get("/analytics/deliverability?stream=CAMPAIGN", key).await;
    assert_eq!(
        (delivery["sent"].clone(), delivery["providers"][0]["name"].clone()),
        (json!(4), json!("Gmail")),
        "{delivery}"
    );
    let (_, all) = room.app.get("/analytics/deliverability", key).await;
    assert_eq!(all["sent"], json!(5), "the test send too: {all}");
    let (_, audience) = room.app.get("/analytics/audience", key).await;
    let days = audience["days"].as_array().unwrap();
    assert_eq!(days.iter().map(|d| d["created"].as_i64().unwrap()).sum::<i64>(), 4, "{audience}");
    assert_eq!((audience["total"].clone(), audience["subscribed"].clone()), (json!(4), json!(4)));

    // Another project's key sees none of it.
    let (_, theirs) =
        room.app.get("/analytics/links", &room.app.project(&room.session, "Third").await.secret_key).await;
    assert_eq!(theirs["links"], json!([]));
    let other = room.app.project(&room.session, "Other").await;
    let (status, _) = room.app.get(&format!("/campaigns/{id}/report"), &other.secret_key).await;
    assert_eq!(status, Status::NotFound);
    let (status, _) = room.app.get(&format!("/campaigns/{id}/recipients"), &other.secret_key).await;
    assert_eq!(status, Status::NotFound);
}

#[rocket::async_test]
async fn a_pixel_fetched_in_a_loop_records_a_bounded_number_of_opens() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key;
    let (status, _) = room.app.post("/contacts", key, json!({ "email": "ada@example.org" })).await;
    assert_eq!(status, Status::Ok);
    let id = campaign(&room, "Loop").await;
    room.app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    let got = room.deliver(1).await;
    let (open, _) = links_of(&got, "ada@example.org");
    for _ in 0..60 {
        assert_eq!(hit(&room, &open, CHROME).await, Status::Ok);
    }
    let recorded = room.app.store().count("email_engagements", &[("campaign_id", id.as_str().into())]);
    assert_eq!(recorded, tidings::core::engagement::RECORDED);
    let (_, report): (Status, Value) = room.app.get(&format!("/campaigns/{id}/report"), key).await;
    assert_eq!(report["opened"], json!({ "people": 1, "machinesOnly": 0 }));
    assert_eq!(report["totals"]["opened"], json!(1), "the counters count the email once, as before");
}
