//! A data subject's requests (issue 35, item 6): the export holds everything about the contact,
//! and after the erasure nothing of it is left in the database file, byte for byte, while the
//! project's counts stay and the address stays out of its mail and its imports.

use rocket::http::Status;
use serde_json::{Value, json};

use crate::common::store::among;
use crate::send::Mailroom;

const ADDRESS: &str = "zelda.quux-erasure@example.org";
/// What the person's data holds, searched for in the file afterwards.
const TRACES: [&str; 4] = ["zelda.quux-erasure", "Zeldaquux", "555-0199-777", "ORDER-XYZ-98765"];

fn file_holds(path: &std::path::Path, needle: &str) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[rocket::async_test]
async fn an_export_holds_everything_and_an_erasure_leaves_nothing() {
    let room = Mailroom::new().await;
    let (app, key) = (&room.app, room.keys.secret_key.clone());
    let (status, contact) = app
        .post(
            "/contacts",
            &key,
            json!({ "email": ADDRESS, "subscribed": true, "data": { "firstName": "Zeldaquux" } }),
        )
        .await;
    assert_eq!(status, Status::Ok, "{contact}");
    let id = contact["id"].as_str().unwrap().to_string();
    let (status, _) = app.post("/contacts", &key, json!({ "email": "someone.else@example.org" })).await;
    assert_eq!(status, Status::Ok);
    for i in 0..3 {
        let body =
            json!({ "event": "called", "email": ADDRESS, "data": { "phone": "+49-555-0199-777", "n": i } });
        assert_eq!(app.post("/v1/track", &room.keys.public_key, body).await.0, Status::Ok);
    }
    room.send_ok(json!({ "to": ADDRESS, "from": "shop@example.test", "subject": "Your order",
                         "body": "<p>Order {{ order }}</p>", "data": { "order": "ORDER-XYZ-98765" } }))
        .await;
    room.deliver(1).await;
    let store = app.store();
    app.run_jobs_until("the email is sent", async || {
        store.count("emails", &[("to_email", ADDRESS.into()), ("status", among(&["SENT", "DELIVERED"]))]) == 1
    })
    .await;
    // What the capture outbox and the webhook log would hold of the person.
    let (_, endpoint) =
        app.post("/webhooks", &key, json!({ "url": "https://hooks.example.org/in", "events": ["*"] })).await;
    let endpoint = endpoint["id"].as_str().unwrap().to_string();
    let project = room.keys.id.clone();
    store.insert(
        "outbox",
        &[
            ("project_id", project.as_str().into()),
            ("message_id", "<m1@example.test>".into()),
            ("envelope_from", "shop@example.test".into()),
            ("envelope_to", ADDRESS.into()),
            ("subject", "Your order".into()),
            ("raw", format!("To: {ADDRESS}\r\n\r\nORDER-XYZ-98765").as_str().into()),
            ("created_at", 1.into()),
        ],
    );
    store.insert(
        "webhook_deliveries",
        &[
            ("id", "msg_person".into()),
            ("endpoint_id", endpoint.as_str().into()),
            ("project_id", project.as_str().into()),
            ("event_type", "called".into()),
            ("payload", json!({ "data": { "email": ADDRESS } }).to_string().as_str().into()),
            ("status", "succeeded".into()),
            ("created_at", 1.into()),
        ],
    );

    let (status, export) = app.get(&format!("/contacts/{id}/export"), &key).await;
    assert_eq!(status, Status::Ok, "{export}");
    assert_eq!(export["contact"]["email"], ADDRESS);
    assert_eq!(export["contact"]["data"]["firstName"], "Zeldaquux");
    let called: Vec<&Value> =
        export["events"].as_array().unwrap().iter().filter(|e| e["name"] == "called").collect();
    assert_eq!(called.len(), 3, "{export}");
    assert_eq!(called[0]["data"]["phone"], "+49-555-0199-777");
    let email = &export["emails"][0];
    assert_eq!((email["to"].clone(), email["subject"].clone()), (json!(ADDRESS), json!("Your order")));
    assert_eq!(email["content"]["body"], "<p>Order {{ order }}</p>", "{export}");
    assert_eq!(export["contact"]["data"]["order"], "ORDER-XYZ-98765", "{export}");
    assert!(export["consents"].is_array(), "{export}");
    let (status, _) = app.get("/contacts/not-a-contact/export", &key).await;
    assert_eq!(status, Status::NotFound);

    let sent_before = store.count("emails", &[("project_id", project.as_str().into())]);
    let (status, erased) = app.post(&format!("/contacts/{id}/erase"), &key, json!({})).await;
    assert_eq!(status, Status::Ok, "{erased}");
    assert_eq!(erased["status"], "done");
    assert!(erased["rows"].as_i64().unwrap() >= 6, "{erased}");
    let (status, _) = app.get(&format!("/contacts/{id}"), &key).await;
    assert_eq!(status, Status::NotFound);
    let (_, again) = app.get(&format!("/erasures/{}", erased["id"].as_str().unwrap()), &key).await;
    assert_eq!(again["status"], "done");
    assert_eq!(store.count("emails", &[("project_id", project.as_str().into())]), sent_before, "counts stay");
    assert_eq!(store.count("contacts", &[("email", "someone.else@example.org".into())]), 1);

    // Nothing of the person is left in the file, once the log is copied in and the free pages
    // are gone.
    store.checkpoint();
    store.vacuum();
    store.checkpoint();
    let path = app.state.db.path().to_path_buf();
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    for trace in TRACES {
        assert!(!file_holds(&path, trace), "the database file still holds {trace:?}");
        assert!(!file_holds(&wal, trace), "the log still holds {trace:?}");
    }

    // The address stays out: mail to it is refused, an import skips it.
    let ids = room
        .send_ok(
            json!({ "to": ADDRESS, "from": "shop@example.test", "subject": "Again", "body": "<p>x</p>" }),
        )
        .await;
    app.run_jobs_until("the email is refused", async || {
        store.count("emails", &[("id", ids[0].as_str().into()), ("status", "FAILED".into())]) == 1
    })
    .await;
    let csv = format!("email\n{ADDRESS}\nnew.person@example.org\n");
    let (status, job) = app.upload_csv(&key, csv.as_bytes()).await;
    assert_eq!(status, Status::Accepted, "{job}");
    let done = app.finish_job(&format!("/contacts/import/{}", job["jobId"].as_str().unwrap()), &key).await;
    assert_eq!((done["imported"].clone(), done["skipped"].clone()), (json!(1), json!(1)), "{done}");
    assert_eq!(done["errors"][0]["reason"], "erased", "{done}");
    // Lifting the entry lets it back in.
    let entry: String = store.value("suppression_list", "id", &[("kind", "erased".into())]);
    let (status, _) =
        app.call(rocket::http::Method::Delete, &format!("/suppressions/{entry}"), &key, None).await;
    assert_eq!(status, Status::NoContent);
    let (_, job) = app.upload_csv(&key, format!("email\n{ADDRESS}\n").as_bytes()).await;
    let done = app.finish_job(&format!("/contacts/import/{}", job["jobId"].as_str().unwrap()), &key).await;
    // (The send above made the contact again, as sending does: the import updates it.)
    assert_eq!((done["skipped"].clone(), done["updated"].clone()), (json!(0), json!(1)), "{done}");
}
