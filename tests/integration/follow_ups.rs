//! Resending to non-openers (issue 34, item 2): a follow-up of a sent campaign goes, after its
//! delay, to the recipients no person opened it for. A privacy proxy's fetch is no open, a
//! click is one. Bad requests change nothing.

use rocket::http::Status;
use serde_json::json;
use tidings::clock;

use crate::campaign_report::{CHROME, campaign, hit, links_of};
use crate::common::store::Set;
use crate::send::Mailroom;

const HOUR: i64 = 3_600_000;

#[rocket::async_test]
async fn a_follow_up_reaches_those_no_person_opened_it_for() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    for email in ["ada@example.org", "bob@example.org", "cy@example.org", "di@example.org"] {
        let (status, _) = app.post("/contacts", key, json!({ "email": email })).await;
        assert_eq!(status, Status::Ok);
    }
    let id = campaign(&room, "Launch").await;

    // A campaign not yet sent cannot be followed up.
    let (status, refused) = app.post(&format!("/campaigns/{id}/follow-up"), key, json!({})).await;
    assert_eq!(status, Status::BadRequest, "{refused}");

    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(4).await;
    // Sent a day and a bit ago.
    app.store().set("emails", &[("sent_at", Set::Less(25 * HOUR))], &[("campaign_id", id.as_str().into())]);
    app.store().set("campaigns", &[("sent_at", Set::Less(25 * HOUR))], &[("id", id.as_str().into())]);
    // Ada opens it; Bob's is fetched by Apple's proxy only; Cy clicks (a click is an open);
    // Di does nothing.
    let (ada_open, _) = links_of(&got, "ada@example.org");
    assert_eq!(hit(&room, &ada_open, CHROME).await, Status::Ok);
    let (bob_open, _) = links_of(&got, "bob@example.org");
    assert_eq!(hit(&room, &bob_open, "Mozilla/5.0").await, Status::Ok);
    let (_, cy_clicks) = links_of(&got, "cy@example.org");
    assert_eq!(hit(&room, &cy_clicks[0], CHROME).await, Status::Found);

    // Bad requests are refused and save nothing.
    let campaigns_before = app.store().count("campaigns", &[]);
    for (bad, want) in [
        (json!({ "audience": "everyone" }), Status::UnprocessableEntity),
        (json!({ "delayHours": 721 }), Status::UnprocessableEntity),
        (json!({ "delayHours": -1 }), Status::UnprocessableEntity),
        (json!({ "subject": "  " }), Status::UnprocessableEntity),
        (json!({ "subject": "two\r\nlines" }), Status::UnprocessableEntity),
        (json!({ "later": true }), Status::UnprocessableEntity),
    ] {
        let (status, answer) = app.post(&format!("/campaigns/{id}/follow-up"), key, bad.clone()).await;
        assert_eq!(status, want, "{bad}: {answer}");
        assert!(answer["error"]["code"].is_string(), "the envelope: {answer}");
    }
    let other = app.project(&room.session, "Other").await;
    let (status, _) = app.post(&format!("/campaigns/{id}/follow-up"), &other.secret_key, json!({})).await;
    assert_eq!(status, Status::NotFound, "another project's campaign");
    assert_eq!(app.store().count("campaigns", &[]), campaigns_before);

    // Left without a delay, a follow-up is a draft whose audience can be read and changed.
    let (status, draft) = app.post(&format!("/campaigns/{id}/follow-up"), key, json!({})).await;
    assert_eq!(status, Status::Ok, "{draft}");
    assert_eq!(
        (draft["status"].clone(), draft["name"].clone(), draft["audienceType"].clone()),
        (json!("DRAFT"), json!("Launch (follow-up)"), json!("FILTERED"))
    );
    assert_eq!(
        draft["audienceCondition"]["groups"][0]["filters"][0]["field"],
        json!(format!("campaign.{id}"))
    );
    let (_, counted) =
        app.post("/segments/count", key, json!({ "condition": draft["audienceCondition"].clone() })).await;
    assert_eq!(counted["count"], json!(2), "Bob and Di: {counted}");

    // A delay already past sends now, with the new subject, to Bob and Di only.
    let body = json!({ "subject": "Did you see our launch?", "delayHours": 24, "name": "Launch, again" });
    let (status, follow) = app.post(&format!("/campaigns/{id}/follow-up"), key, body).await;
    assert_eq!(status, Status::Ok, "{follow}");
    assert_eq!(follow["status"], json!("SCHEDULED"));
    let follow_id = follow["id"].as_str().unwrap();
    let earlier = room.sink.messages().len();
    let done = room.until_status(follow_id, "SENT").await;
    assert_eq!(done["totalRecipients"], json!(2), "{done}");
    let resent: Vec<_> = room.sink.messages().into_iter().skip(earlier).collect();
    let mut to: Vec<String> = resent
        .iter()
        .map(|m| {
            assert_eq!(crate::send::parse(&m.data).subject(), Some("Did you see our launch?"));
            m.to[0].clone()
        })
        .collect();
    to.sort();
    assert_eq!(to, ["bob@example.org", "di@example.org"]);

    // A delay still ahead is kept exactly: two days after the original's send.
    let (_, original) = app.get(&format!("/campaigns/{id}"), key).await;
    let sent_at = clock::parse_date(original["sentAt"].as_str().unwrap()).unwrap().0;
    let (status, later) = app
        .post(
            &format!("/campaigns/{id}/follow-up"),
            key,
            json!({ "delayHours": 48, "audience": "notClicked" }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{later}");
    assert_eq!(later["scheduledFor"], json!(clock::iso(sent_at + 48 * HOUR)));
    assert_eq!(later["audienceCondition"]["groups"][0]["filters"][0]["operator"], json!("notClicked"));

    // When everyone opened, a scheduled follow-up would reach nobody: 400, nothing saved.
    for email in ["bob@example.org", "di@example.org"] {
        let (open, _) = links_of(&resent, email);
        assert_eq!(hit(&room, &open, CHROME).await, Status::Ok);
    }
    let before = app.store().count("campaigns", &[]);
    let (status, refused) =
        app.post(&format!("/campaigns/{follow_id}/follow-up"), key, json!({ "delayHours": 0 })).await;
    assert_eq!(status, Status::BadRequest, "{refused}");
    assert_eq!(app.store().count("campaigns", &[]), before);
}
