//! The files the binary carries gzipped (the dashboard's and the OpenAPI document): a client
//! that takes gzip gets the gzipped bytes, one that does not gets the file as it is in the
//! repository, and each representation revalidates with its own ETag.

use std::io::Read;
use std::path::Path;

use rocket::http::{Header, Status};
use rocket::local::asynchronous::LocalResponse;

use crate::common::TestApp;

fn repository_file(path: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

fn inflated(gzip: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gzip).read_to_end(&mut out).unwrap();
    out
}

fn header(res: &LocalResponse<'_>, name: &str) -> Option<String> {
    res.headers().get_one(name).map(str::to_string)
}

#[rocket::async_test]
async fn each_file_is_sent_gzipped_to_who_takes_gzip_and_as_it_is_to_the_others() {
    let app = TestApp::new().await;
    let files = [
        ("/openapi.json", "docs/openapi.json"),
        ("/", "assets/dashboard/index.html"),
        ("/app/projects", "assets/dashboard/index.html"),
        ("/app.js", "assets/dashboard/app.js"),
        ("/style.css", "assets/dashboard/style.css"),
        ("/vendor/uPlot.iife.min.js", "assets/dashboard/vendor/uPlot.iife.min.js"),
    ];
    for (url, path) in files {
        let original = repository_file(path);
        let res =
            app.client.get(url).header(Header::new("Accept-Encoding", "gzip, deflate, br")).dispatch().await;
        assert_eq!(res.status(), Status::Ok, "{url}");
        assert_eq!(header(&res, "Content-Encoding").as_deref(), Some("gzip"), "{url}");
        assert_eq!(header(&res, "Vary").as_deref(), Some("Accept-Encoding"), "{url}");
        let gzip = res.into_bytes().await.unwrap();
        assert!(gzip.len() < original.len(), "{url}: {} gzipped bytes of {}", gzip.len(), original.len());
        assert_eq!(inflated(&gzip), original, "{url} inflates to the repository's file");

        for accept in [None, Some("identity"), Some("gzip;q=0, br")] {
            let mut req = app.client.get(url);
            if let Some(accept) = accept {
                req = req.header(Header::new("Accept-Encoding", accept));
            }
            let res = req.dispatch().await;
            assert_eq!(res.status(), Status::Ok, "{url} {accept:?}");
            assert_eq!(header(&res, "Content-Encoding"), None, "{url} {accept:?}");
            assert_eq!(header(&res, "Vary").as_deref(), Some("Accept-Encoding"), "{url}");
            assert_eq!(res.into_bytes().await.unwrap(), original, "{url} {accept:?}: the file as it is");
        }
    }
}

#[rocket::async_test]
async fn each_representation_of_a_file_revalidates_with_its_own_etag() {
    let app = TestApp::new().await;
    let gzip = || Header::new("Accept-Encoding", "gzip");
    let res = app.client.get("/app.js").header(gzip()).dispatch().await;
    let gzip_tag = header(&res, "ETag").unwrap();
    assert_eq!(header(&res, "Cache-Control").as_deref(), Some("no-cache"));
    let res = app.client.get("/app.js").dispatch().await;
    let plain_tag = header(&res, "ETag").unwrap();
    assert_ne!(gzip_tag, plain_tag, "a strong ETag names one representation");
    assert!(gzip_tag.starts_with('"') && gzip_tag.ends_with("-gzip\""), "{gzip_tag}");

    let res = app
        .client
        .get("/app.js")
        .header(gzip())
        .header(Header::new("If-None-Match", gzip_tag.clone()))
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::NotModified);
    assert_eq!(header(&res, "ETag"), Some(gzip_tag.clone()));
    assert_eq!(header(&res, "Vary").as_deref(), Some("Accept-Encoding"));
    assert!(res.into_bytes().await.unwrap_or_default().is_empty());
    let res =
        app.client.get("/app.js").header(Header::new("If-None-Match", plain_tag.clone())).dispatch().await;
    assert_eq!(res.status(), Status::NotModified);

    // The other representation's tag, or another file's, does not match.
    let res = app
        .client
        .get("/app.js")
        .header(Header::new("If-None-Match", plain_tag))
        .header(gzip())
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
    let res = app
        .client
        .get("/style.css")
        .header(Header::new("If-None-Match", gzip_tag))
        .header(gzip())
        .dispatch()
        .await;
    assert_eq!(res.status(), Status::Ok);
}
