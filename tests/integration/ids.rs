//! Ids in paths (`core::ids`, `api::ids`): on every mounted route, a text in an id's place that
//! is no id Tidings makes is answered 404 in the envelope, in its kind's words, by the same
//! request that would find a real row (the caller's session and project).

use rocket::http::{ContentType, Header, Method};

use crate::common::{TestApp, assert_envelope};

/// Path parameters that are names, not rows' ids (tests/architecture.rs says the same).
const NAMES: &[&str] = &["name", "field", "token", "slug"];

#[rocket::async_test]
async fn a_text_that_is_no_id_is_a_404_on_every_route_that_takes_one() {
    let app = TestApp::new().await;
    let (session, keys) = app.user_with_project("owner@example.com").await;
    let routes: Vec<(Method, String)> =
        app.client.rocket().routes().map(|r| (r.method, r.uri.path().to_string())).collect();
    let mut checked = Vec::new();
    for (method, path) in routes {
        let mut has_id = false;
        let segments: Vec<String> = path
            .split('/')
            .map(|segment| match segment.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
                // The project the role guards read.
                Some("_") => keys.id.clone(),
                Some(param) if !NAMES.contains(&param) && !param.ends_with("..") => {
                    has_id = true;
                    // Near an id: a capital letter is all that is wrong with it.
                    "018F2C1E-7b3a-7c4d-9e8f-0a1b2c3d4e5f".to_string()
                }
                // A name stands as a word (a literal `<token>` is no URI at all).
                Some(name) if NAMES.contains(&name) => name.to_string(),
                _ => segment.to_string(),
            })
            .collect();
        // A sign-in provider is named in the configuration, and there is none here.
        if !has_id || path.starts_with("/auth/oauth/") {
            continue;
        }
        let uri = segments.join("/");
        let res = app
            .client
            .req(method, uri.clone())
            .cookie(session.clone())
            .header(Header::new("X-Project-Id", keys.id.clone()))
            .header(ContentType::JSON)
            .body("{}")
            .dispatch()
            .await;
        assert_eq!(res.status().code, 404, "{method} {uri}");
        let error = assert_envelope(res, 404, "NOT_FOUND").await;
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{method} {uri}: {error}");
        checked.push(format!("{method} {path}"));
    }
    assert!(checked.len() >= 50, "only {} routes take an id: {checked:#?}", checked.len());
}
