//! The project export (issue 35, item 6): a durable job writes the project's contacts, events
//! and emails to one zip of CSV and JSON, downloaded once done; another project's data is not
//! in it, and a reset removes the file.

use std::io::Read;

use rocket::http::{Method, Status};
use serde_json::json;

use crate::common::TestApp;

fn entry(zip: &mut zip::ZipArchive<std::io::Cursor<Vec<u8>>>, name: &str) -> String {
    let mut text = String::new();
    zip.by_name(name).unwrap().read_to_string(&mut text).unwrap();
    text
}

#[rocket::async_test]
async fn a_project_is_exported_as_a_zip_of_csv_and_json() {
    let app = TestApp::new().await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    let other = app.project(&owner, "Other").await;
    for i in 0..5 {
        let body = json!({ "event": "signed-up", "email": format!("p{i}@example.org"), "data": { "plan": "pro, \"yearly\"" } });
        assert_eq!(app.post("/v1/track", &keys.public_key, body).await.0, Status::Ok);
    }
    let body = json!({ "event": "signed-up", "email": "stranger@example.org" });
    assert_eq!(app.post("/v1/track", &other.public_key, body).await.0, Status::Ok);

    let (status, started) = app.post("/project-exports", &keys.secret_key, json!({})).await;
    assert_eq!(status, Status::Accepted, "{started}");
    assert_eq!(started["status"], "queued");
    let id = started["id"].as_str().unwrap().to_string();
    let (_, again) = app.post("/project-exports", &keys.secret_key, json!({})).await;
    assert_eq!(again["id"], started["id"], "one export at a time");
    let path = format!("/project-exports/{id}");
    let (status, _) = app.get(&format!("{path}/download"), &keys.secret_key).await;
    assert_eq!(status, Status::Conflict, "not ready yet");
    let (status, _) = app.get(&path, &other.secret_key).await;
    assert_eq!(status, Status::NotFound, "another project's export is not found");

    let mut done = json!(null);
    app.run_jobs_until("the export", async || {
        done = app.get(&path, &keys.secret_key).await.1;
        done["status"] == "done"
    })
    .await;
    assert!(done["bytes"].as_i64().unwrap() > 100, "{done}");
    let res = app
        .client
        .get(done["downloadUrl"].as_str().unwrap().to_string())
        .header(rocket::http::Header::new("Authorization", format!("Bearer {}", keys.secret_key)))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(res.headers().get_one("Content-Type"), Some("application/zip"));
    assert!(res.headers().get_one("Content-Disposition").unwrap().starts_with("attachment;"));
    let bytes = res.into_bytes().await.unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let about: serde_json::Value = serde_json::from_str(&entry(&mut zip, "project.json")).unwrap();
    assert_eq!(about["project"], keys.id.as_str());
    let contacts = entry(&mut zip, "contacts.csv");
    let mut rows = csv::Reader::from_reader(contacts.as_bytes());
    let emails: Vec<String> = rows.records().map(|r| r.unwrap()[1].to_string()).collect();
    assert_eq!(emails.len(), 5, "{contacts}");
    assert!(!contacts.contains("stranger"), "another project's contact: {contacts}");
    let events = entry(&mut zip, "events.csv");
    let mut rows = csv::Reader::from_reader(events.as_bytes());
    let data: Vec<serde_json::Value> = rows
        .records()
        .map(|r| serde_json::from_str(&r.unwrap()[4]).unwrap())
        .filter(|d: &serde_json::Value| d.get("plan").is_some())
        .collect();
    assert_eq!(data.len(), 5, "{events}");
    assert_eq!(data[0]["plan"], "pro, \"yearly\"", "quoting survives");
    assert!(entry(&mut zip, "emails.csv").starts_with("id,to,from,subject"));

    // A reset takes the file with the data.
    let file = app.dir.path().join("exports").join(&keys.id).join(format!("{id}.zip"));
    assert!(file.is_file());
    let reset = format!("/users/@me/projects/{}/reset", keys.id);
    let (status, _, _) = app.as_user(Method::Post, &reset, Some(&owner), None).await;
    assert_eq!(status, Status::Accepted);
    app.run_jobs_until("the reset", async || !file.exists()).await;
}
