//! Quiet hours (issue 34, item 3): a project's marketing mail waits out its quiet hours and
//! days, read in each contact's time zone, whether the campaign is queued in them or is still
//! sending when they begin; and the settings refuse what they cannot mean, changing nothing.

use rocket::http::{Method, Status};
use serde_json::json;
use tidings::clock;

use crate::campaign_report::campaign;
use crate::send::Mailroom;

const MINUTE: i64 = 60_000;

fn hhmm(minute: i64) -> String {
    let m = minute.rem_euclid(1440);
    format!("{:02}:{:02}", m / 60, m % 60)
}

#[rocket::async_test]
async fn marketing_mail_waits_out_the_quiet_hours_where_its_contact_lives() {
    let room = Mailroom::new().await;
    let key = &room.keys.secret_key.clone();
    let app = &room.app;
    let patch = |body| app.call(Method::Patch, "/sending-settings", key, Some(body));

    // What the settings refuse, each naming its field, and nothing is changed.
    for (bad, field) in [
        (json!({ "timezone": "Mars/Olympus" }), "timezone"),
        (json!({ "quietHours": { "start": "25:00", "end": "08:00" } }), "quietHours.start"),
        (json!({ "quietHours": { "start": "21:00", "end": "8h" } }), "quietHours.end"),
        (json!({ "quietDays": ["friday", "caturday"] }), "quietDays[1]"),
        (
            json!({ "quietDays": ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] }),
            "quietDays",
        ),
    ] {
        let (status, refused) = patch(bad.clone()).await;
        assert_eq!(status, Status::UnprocessableEntity, "{bad}: {refused}");
        assert_eq!(refused["error"]["errors"][0]["field"], json!(field), "{refused}");
    }
    let (_, settings) = app.get("/sending-settings", key).await;
    assert_eq!(settings, json!({ "timezone": "UTC", "quietHours": null, "quietDays": [] }));

    // Quiet from an hour ago to two hours from now, in UTC (the project's zone).
    let now = clock::now_ms();
    let minute = (now / MINUTE).rem_euclid(1440);
    let quiet = json!({ "start": hhmm(minute - 60), "end": hhmm(minute + 120) });
    // And a quiet day that is today neither in UTC nor twelve hours either side of it.
    let day =
        |ms: i64| jiff::Timestamp::from_millisecond(ms).unwrap().to_zoned(jiff::tz::TimeZone::UTC).weekday();
    let quiet_day = day(now + 3 * 1440 * MINUTE);
    let name = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        [quiet_day.to_monday_zero_offset() as usize];
    let (status, settings) = patch(json!({ "quietHours": quiet, "quietDays": [name.to_uppercase()] })).await;
    assert_eq!(status, Status::Ok, "{settings}");
    assert_eq!(settings["quietHours"], quiet);
    assert_eq!(settings["quietDays"], json!([name]));

    // Nia has no zone (the project's: quiet now); Leo lives twelve hours away, where it is day.
    let ahead = "Etc/GMT-12";
    for (email, data) in [("nia@example.org", json!({})), ("leo@example.org", json!({ "timezone": ahead }))] {
        let (status, made) = app.post("/contacts", key, json!({ "email": email, "data": data })).await;
        assert_eq!(status, Status::Ok, "{made}");
    }
    let id = campaign(&room, "Evening news").await;
    let (status, _) = app.post(&format!("/campaigns/{id}/send"), key, json!({})).await;
    assert_eq!(status, Status::Ok);
    let got = room.deliver(1).await;
    assert_eq!(got[0].to, ["leo@example.org"], "Leo's day goes at once");
    let waits: i64 =
        app.store().value("emails", "next_attempt_at", &[("to_email", "nia@example.org".into())]);
    let end = now - (now % MINUTE) + 120 * MINUTE;
    assert!(
        (end - MINUTE..=end + MINUTE).contains(&waits),
        "Nia's waits for the quiet hours' end: {}",
        waits - now
    );
    assert_eq!(waits % MINUTE, 0, "to the minute");

    // Mail already due when the quiet hours begin (a campaign still sending, a workflow's)
    // is held at delivery until they end.
    app.store().set(
        "emails",
        &[("next_attempt_at", clock::now_ms().into())],
        &[("to_email", "nia@example.org".into())],
    );
    app.run_jobs_until("Nia's mail is held again", async || {
        app.store().value::<i64>("emails", "next_attempt_at", &[("to_email", "nia@example.org".into())])
            > now + MINUTE
    })
    .await;
    assert_eq!(room.sink.messages().len(), 1, "held, not sent");

    // Without quiet hours, it goes.
    let (status, _) = patch(json!({ "quietHours": null, "quietDays": [] })).await;
    assert_eq!(status, Status::Ok);
    app.store().set(
        "emails",
        &[("next_attempt_at", clock::now_ms().into())],
        &[("to_email", "nia@example.org".into())],
    );
    let got = room.deliver(2).await;
    assert_eq!(got[1].to, ["nia@example.org"]);
}
