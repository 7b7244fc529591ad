//! A/B tests (issue 34, item 1), in process: a campaign tries three variants (a new subject and
//! sender name, a template's body) on half its audience; each recipient gets the variant the
//! draw gave them; a person's click shows in the variant's results; the winner picked by hand
//! goes to the rest, and every contact gets exactly one message. Bad settings change nothing.
//! The automatic decision after the wait, across kill -9, is `ab_test_crash.rs`'s.

use std::collections::HashMap;

use rocket::http::{Method, Status};
use serde_json::{Value, json};

use crate::campaign_report::{CHROME, campaign, hit, links_of};
use crate::common::store::Set;
use crate::send::{Mailroom, header, parse};

const PEOPLE: usize = 60;

async fn ab_test(room: &Mailroom, id: &str) -> (Status, Value) {
    room.app.get(&format!("/campaigns/{id}/ab-test"), &room.keys.secret_key).await
}

#[rocket::async_test]
async fn the_winner_picked_by_hand_goes_to_the_rest_and_each_contact_gets_one_message() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    for i in 0..PEOPLE {
        let (status, _) = app.post("/contacts", key, json!({ "email": format!("p{i}@example.org") })).await;
        assert_eq!(status, Status::Ok);
    }
    let fields = json!({ "name": "Spring", "subject": "Spring sale ({{ email }})", "from": "news@example.test",
        "body": "<p>Template body</p><p><a href=\"https://example.org/t\">Shop</a></p>" });
    let (status, template) = app.post("/templates", key, fields).await;
    assert_eq!(status, Status::Ok, "{template}");
    let template = template["data"]["id"].as_str().or(template["id"].as_str()).unwrap().to_string();
    let id = campaign(&room, "Launch").await;
    let path = format!("/campaigns/{id}/ab-test");

    // What a test refuses, naming the field; nothing is saved.
    for (bad, field) in [
        (json!({ "variants": [{}], "testShare": 20, "waitHours": 4 }), "variants"),
        (json!({ "variants": [{}, {}, {}, {}, {}, {}], "testShare": 20, "waitHours": 4 }), "variants"),
        (json!({ "variants": [{}, {}], "testShare": 0, "waitHours": 4 }), "testShare"),
        (json!({ "variants": [{}, {}], "testShare": 101, "waitHours": 4 }), "testShare"),
        (json!({ "variants": [{}, {}], "testShare": 20, "waitHours": 73 }), "waitHours"),
        (json!({ "variants": [{}, {}], "testShare": 20 }), "waitHours"),
        (json!({ "variants": [{}, {}], "testShare": 20, "waitHours": 4, "metric": "likes" }), "metric"),
        (json!({ "variants": [{}, {}], "testShare": 20, "waitHours": 4, "pick": "later" }), "pick"),
        (
            json!({ "variants": [{}, { "subject": "two\nlines" }], "testShare": 20, "waitHours": 4 }),
            "variants[1].subject",
        ),
        (
            json!({ "variants": [{}, { "body": "{% if %}" }], "testShare": 20, "waitHours": 4 }),
            "variants[1].body",
        ),
        (
            json!({ "variants": [{}, { "templateId": "nope" }], "testShare": 20, "waitHours": 4 }),
            "variants[1].templateId",
        ),
    ] {
        let (status, refused) = app.call(Method::Put, &path, key, Some(bad.clone())).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], json!(field), "{bad}: {refused}");
    }
    let (status, _) =
        app.call(Method::Put, &path, key, Some(json!({ "variants": [{}, {}], "extra": 1 }))).await;
    assert_eq!(status, Status::UnprocessableEntity);
    assert_eq!(ab_test(&room, &id).await.0, Status::NotFound);
    let other = app.project(&room.session, "Other").await;
    let test = json!({
        "variants": [{}, { "subject": "Last chance", "fromName": "Bea at Acme" }, { "templateId": template }],
        "testShare": 50, "metric": "humanClicks", "waitHours": 2, "pick": "manual"
    });
    let (status, _) = app.call(Method::Put, &path, &other.secret_key, Some(test.clone())).await;
    assert_eq!(status, Status::NotFound, "another project's campaign");

    let (status, saved) = app.call(Method::Put, &path, key, Some(test)).await;
    assert_eq!(status, Status::Ok, "{saved}");
    assert_eq!(
        (saved["phase"].clone(), saved["variants"].as_array().unwrap().len(), saved["decideAt"].clone()),
        (json!("READY"), 3, Value::Null)
    );
    assert_eq!(saved["variants"][2]["subject"], json!("Spring sale ({{ email }})"), "the template's subject");
    assert_eq!(saved["variants"][0]["subject"], Value::Null, "the campaign's own");
    // A duplicate copies the test, ready to run again.
    let (_, copy) = app.post(&format!("/campaigns/{id}/duplicate"), key, json!({})).await;
    let (status, copied) = ab_test(&room, copy["id"].as_str().unwrap()).await;
    assert_eq!((status, copied["variants"][1]["fromName"].clone()), (Status::Ok, json!("Bea at Acme")));

    // A test cannot go at each contact's local time.
    let (status, refused) =
        app.post(&format!("/campaigns/{id}/send"), key, json!({ "localTime": "2030-01-01T09:00" })).await;
    assert_eq!(
        (status, refused["error"]["errors"][0]["field"].clone()),
        (Status::UnprocessableEntity, json!("localTime"))
    );
    let (status, sent) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{sent}");

    // The test share goes out (all of it recorded as sent: the workers stop mid-send in a
    // test, as in a crash, after which a message the relay took may go again); the rest waits.
    app.run_jobs_until("the test share sent", async || {
        let test = ab_test(&room, &id).await.1;
        let sum =
            |what: &str| (0..3).map(|v| test["variants"][v]["results"][what].as_i64().unwrap()).sum::<i64>();
        test["decideAt"].is_string() && sum("sent") == sum("recipients")
    })
    .await;
    let (_, testing) = ab_test(&room, &id).await;
    assert_eq!(testing["phase"], json!("TESTING"));
    assert_eq!(testing["canPick"], json!(true));
    let per_variant: Vec<i64> =
        (0..3).map(|v| testing["variants"][v]["results"]["recipients"].as_i64().unwrap()).collect();
    let tested: i64 = per_variant.iter().sum();
    assert!(per_variant.iter().all(|n| *n > 0) && (15..=45).contains(&tested), "{per_variant:?}");
    let got = room.sink.messages();
    assert_eq!(got.len() as i64, tested);
    let (_, stats) = app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!(
        (stats["status"].clone(), stats["totalRecipients"].clone()),
        (json!("SENDING"), json!(tested))
    );

    // Each message carries its variant: the subject, the sender's name, the template's body.
    let mut variant_of = HashMap::new();
    let mut seen = [0; 3];
    for m in &got {
        let mail = parse(&m.data);
        let subject = header(&mail, "Subject").unwrap();
        let from = header(&mail, "From").unwrap();
        let html = mail.body_html(0).unwrap().to_string();
        let v = if subject == "Last chance" {
            assert!(from.contains("Bea at Acme"), "{from}");
            1
        } else if subject.starts_with("Spring sale (") {
            assert_eq!(subject, format!("Spring sale ({})", m.to[0]), "rendered for its recipient");
            assert!(html.contains("Template body"), "{html}");
            2
        } else {
            assert_eq!(subject, "An offer");
            assert!(!from.contains("Bea"), "{from}");
            0
        };
        seen[v] += 1;
        variant_of.insert(m.to[0].clone(), v);
    }
    assert_eq!(seen.map(|n| n as i64).to_vec(), per_variant, "the results count what the sink got");

    // A person clicks in one of B's (a while after delivery: a click within seconds of it is a
    // scanner's); a scanner follows every link of one of A's.
    app.store().set("emails", &[("sent_at", Set::Less(10 * 60_000))], &[("campaign_id", id.as_str().into())]);
    let b = variant_of.iter().find(|(_, v)| **v == 1).unwrap().0.clone();
    let (_, clicks) = links_of(&got, &b);
    assert_eq!(hit(&room, &clicks[0], CHROME).await, Status::Found);
    let a = variant_of.iter().find(|(_, v)| **v == 0).unwrap().0.clone();
    let (_, clicks) = links_of(&got, &a);
    for link in &clicks {
        hit(&room, link, CHROME).await;
    }
    let (_, testing) = ab_test(&room, &id).await;
    assert_eq!(testing["variants"][1]["results"]["clickedByPeople"], json!(1), "{testing}");
    assert_eq!(testing["variants"][0]["results"]["clickedByPeople"], json!(0), "a burst is a scanner's");
    assert!(testing["variants"][1]["results"]["score"].as_f64().unwrap() > 0.0);

    // Picking names an existing variant; then the rest gets B, each contact once.
    for bad in [json!({}), json!({ "variant": 3 }), json!({ "variant": -1 })] {
        let (status, refused) = app.post(&format!("{path}/winner"), key, bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
    }
    let (status, decided) = app.post(&format!("{path}/winner"), key, json!({ "variant": 1 })).await;
    assert_eq!(status, Status::Ok, "{decided}");
    assert_eq!(
        (decided["phase"].clone(), decided["winner"].clone(), decided["decidedBy"].clone()),
        (json!("DECIDED"), json!(1), json!("hand"))
    );
    let (status, again) = app.post(&format!("{path}/winner"), key, json!({ "variant": 0 })).await;
    assert_eq!(status, Status::BadRequest, "{again}");
    app.run_jobs_until("the campaign SENT", async || {
        app.get(&format!("/campaigns/{id}"), key).await.1["status"] == json!("SENT")
    })
    .await;
    let all = room.sink.messages();
    assert_eq!(all.len(), PEOPLE);
    let mut recipients: Vec<&String> = all.iter().map(|m| &m.to[0]).collect();
    recipients.sort();
    recipients.dedup();
    assert_eq!(recipients.len(), PEOPLE, "each contact exactly one message");
    for m in all.iter().filter(|m| !variant_of.contains_key(&m.to[0])) {
        let mail = parse(&m.data);
        assert_eq!(header(&mail, "Subject").as_deref(), Some("Last chance"), "the rest get the winner");
        assert!(header(&mail, "From").unwrap().contains("Bea at Acme"));
    }
    let (_, stats) = app.get(&format!("/campaigns/{id}/stats"), key).await;
    assert_eq!(stats["totalRecipients"], json!(PEOPLE));
    assert_eq!(stats["abTest"]["winner"], json!(1), "{stats}");
    let (_, report) = app.get(&format!("/campaigns/{id}/report"), key).await;
    assert_eq!(report["abTest"]["variants"][1]["results"]["recipients"], json!(per_variant[1]));

    // A test changes only with its campaign: not once it is sent.
    let (status, _) = app.call(Method::Delete, &path, key, None).await;
    assert_eq!(status, Status::BadRequest);
    let (status, _) = app
        .call(Method::Put, &path, key, Some(json!({ "variants": [{}, {}], "testShare": 10, "waitHours": 1 })))
        .await;
    assert_eq!(status, Status::BadRequest);
    // A draft's test can be removed.
    let copy = copy["id"].as_str().unwrap();
    let (status, _) = app.call(Method::Delete, &format!("/campaigns/{copy}/ab-test"), key, None).await;
    assert_eq!(status, Status::NoContent);
    assert_eq!(ab_test(&room, copy).await.0, Status::NotFound);
}
