//! `POST /uploads/image` and the images it serves: known by their bytes, refused when SVG or
//! not an image, capped, served with their type, `nosniff` and a long cache, kept by a reset,
//! gone with their project, and copied by `tidings backup`.

use rocket::http::{Method, Status};
use serde_json::json;

use crate::common::TestApp;

/// A 1x1 PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00,
    0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0, 0x1F, 0x00, 0x05,
    0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42,
    0x60, 0x82,
];

/// The path of an upload's public URL.
fn path_of(url: &str) -> String {
    format!("/uploads/{}", url.rsplit_once("/uploads/").unwrap().1)
}

#[rocket::async_test]
async fn images_are_known_by_their_bytes_and_served_safely() {
    let app = TestApp::with(|c| c.limits.upload_bytes = 4096).await;
    let (owner, keys) = app.user_with_project("owner@example.com").await;
    // Sent as "contacts.csv", text/csv: the bytes decide.
    let (status, image) = app.upload_csv_to("/uploads/image", &keys.secret_key, PNG).await;
    assert_eq!(status, Status::Ok, "{image}");
    assert_eq!((image["contentType"].clone(), image["size"].clone()), (json!("image/png"), json!(PNG.len())));
    let url = image["url"].as_str().unwrap();
    let token = image["id"].as_str().unwrap();
    assert_eq!(token.len(), 40);
    assert_eq!(url, format!("{}/uploads/{token}.png", app.state.config.public_url()));
    assert!(app.dir.path().join("uploads").join(&keys.id).join(format!("{token}.png")).is_file());

    let res = app.client.get(path_of(url)).dispatch().await;
    assert_eq!(res.status(), Status::Ok);
    assert_eq!(res.headers().get_one("Content-Type"), Some("image/png"));
    assert_eq!(res.headers().get_one("X-Content-Type-Options"), Some("nosniff"));
    assert_eq!(res.headers().get_one("Cache-Control"), Some("public, max-age=31536000, immutable"));
    assert!(res.headers().get_one("Content-Security-Policy").unwrap().contains("sandbox"));
    assert_eq!(res.into_bytes().await.unwrap(), PNG);

    for (bytes, code) in [
        (&b"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>"[..], 422),
        (&b"<html><script>alert(1)</script></html>"[..], 422),
        (&[0u8; 5000][..], 413),
    ] {
        let (status, error) = app.upload_csv_to("/uploads/image", &keys.secret_key, bytes).await;
        assert_eq!(status.code, code, "{error}");
    }
    let (_, svg) = app.upload_csv_to("/uploads/image", &keys.secret_key, b"<svg/>").await;
    assert!(svg["error"]["errors"][0]["message"].as_str().unwrap().contains("SVG"), "{svg}");
    let (status, _) = app.upload_csv_to("/uploads/image", &keys.public_key, PNG).await;
    assert_eq!(status, Status::Unauthorized, "the public key does not upload");
    let stored = app.store().count("uploads", &[]);
    assert_eq!(stored, 1, "refused uploads store nothing");

    for wrong in [
        format!("/uploads/{token}.gif"),
        format!("/uploads/{}.png", "a".repeat(40)),
        "/uploads/..%2F..%2Ftidings.db".into(),
        "/uploads/x".into(),
    ] {
        assert_eq!(app.client.get(wrong.clone()).dispatch().await.status(), Status::NotFound, "{wrong}");
    }

    // `tidings backup` copies the images beside the database copy.
    let to = app.dir.path().join("backup.db");
    let config = &app.state.config;
    let made =
        tidings::core::backups::copy(&config.database_path(), &to, &config.uploads_dir(), 5_000).unwrap();
    assert_eq!(made.uploads, 1);
    let copy = app.dir.path().join("backup.db.uploads").join(&keys.id).join(format!("{token}.png"));
    assert_eq!(std::fs::read(copy).unwrap(), PNG);

    // A reset keeps the images (sent mail shows them); a deletion removes them.
    let project = format!("/users/@me/projects/{}", keys.id);
    app.as_user(Method::Post, &format!("{project}/reset"), Some(&owner), None).await;
    let wiping = async || {
        let wiping: Option<Option<String>> =
            app.store().find("projects", "wiping", &[("id", (&keys.id).into())]);
        wiping.is_none_or(|w| w.is_none())
    };
    app.run_jobs_until("the reset", wiping).await;
    assert_eq!(app.client.get(path_of(url)).dispatch().await.status(), Status::Ok);
    app.as_user(Method::Delete, &project, Some(&owner), None).await;
    let dir = app.dir.path().join("uploads").join(&keys.id);
    app.run_jobs_until("the deletion", async || !dir.exists()).await;
    assert_eq!(app.client.get(path_of(url)).dispatch().await.status(), Status::NotFound);
}

#[rocket::async_test]
async fn a_projects_images_are_capped_in_total() {
    let app = TestApp::with(|c| c.limits.upload_total_bytes = 2 * PNG.len() as u64).await;
    let (_, keys) = app.user_with_project("owner@example.com").await;
    for _ in 0..2 {
        assert_eq!(app.upload_csv_to("/uploads/image", &keys.secret_key, PNG).await.0, Status::Ok);
    }
    let (status, error) = app.upload_csv_to("/uploads/image", &keys.secret_key, PNG).await;
    assert_eq!(status, Status::PayloadTooLarge, "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("upload_total_bytes"), "{error}");
    let files = std::fs::read_dir(app.dir.path().join("uploads").join(&keys.id)).unwrap().count();
    assert_eq!(files, 2, "the refused image's file is gone too");
    // Another project has its own allowance.
    let (_, other) = app.user_with_project("other@example.com").await;
    assert_eq!(app.upload_csv_to("/uploads/image", &other.secret_key, PNG).await.0, Status::Ok);
}
