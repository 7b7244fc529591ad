//! `GET /openapi.json`: served as generated, and valid OpenAPI 3.1 by an independent validator
//! (`openapi-spec-validator`, in the virtual environment `.ci/run` makes from
//! `tests/openapi/requirements.txt`).

use std::path::Path;
use std::process::Command;

use rocket::http::{ContentType, Status};
use serde_json::Value;

use crate::common::TestApp;

#[rocket::async_test]
async fn the_document_is_served_and_valid_openapi_3_1() {
    let app = TestApp::new().await;
    let res = app.client.get("/openapi.json").dispatch().await;
    assert_eq!((res.status(), res.content_type()), (Status::Ok, Some(ContentType::JSON)));
    let text = res.into_string().await.unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
    for scheme in ["secretKey", "publicKey", "session", "projectId"] {
        assert!(schemes.contains_key(scheme), "{scheme}");
    }
    assert_eq!(
        doc["paths"]["/contacts/{id}"]["get"]["responses"]["default"]["content"]["application/json"]["schema"]
            ["oneOf"][0]["$ref"],
        "#/components/schemas/Envelope"
    );

    let validator =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi/.venv/bin/openapi-spec-validator");
    if !validator.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI makes {}", validator.display());
        eprintln!(
            "skipped the validator: make it with `python3 -m venv tests/openapi/.venv && tests/openapi/.venv/bin/pip install -r tests/openapi/requirements.txt`"
        );
        return;
    }
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &text).unwrap();
    let out = Command::new(&validator).arg("--schema").arg("3.1").arg(&file).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // It can print an error and still exit 0, so its verdict is read too.
    assert!(out.status.success() && said.trim_end().ends_with(": OK"), "{said}");
}
