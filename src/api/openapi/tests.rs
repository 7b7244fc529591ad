//! The document against what is mounted, and its shapes against what clients need.

use std::collections::BTreeSet;

use super::*;

/// Mounted routes that are not API: the dashboard, its first page and its files (under one
/// catch-all path OpenAPI cannot write: its parameters never span a `/`).
const NOT_API: &[&str] = &["GET /", "GET /{path..}"];

/// `METHOD /path/{param}` of every mounted route.
fn mounted() -> BTreeSet<String> {
    let rocket = crate::api::mount(rocket::build());
    rocket
        .routes()
        .map(|r| {
            // `<_>` is the project id the role guards read (api::roles); the document names it.
            let path =
                r.uri.path().to_string().replace("<_>", "{projectId}").replace('<', "{").replace('>', "}");
            format!("{} {path}", r.method)
        })
        .collect()
}

fn documented(doc: &Document) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (path, item) in &doc.paths.paths {
        let methods = [
            ("GET", item.get.is_some()),
            ("PUT", item.put.is_some()),
            ("POST", item.post.is_some()),
            ("DELETE", item.delete.is_some()),
            ("PATCH", item.patch.is_some()),
            ("HEAD", item.head.is_some()),
            ("OPTIONS", item.options.is_some()),
        ];
        for (method, _) in methods.iter().filter(|(_, there)| *there) {
            out.insert(format!("{method} {path}"));
        }
    }
    out
}

#[test]
fn every_mounted_route_is_in_the_document_and_nothing_else() {
    let (mounted, documented) = (mounted(), documented(&document()));
    let excused: BTreeSet<String> = NOT_API.iter().map(|s| s.to_string()).collect();
    // HTTP has every GET answer HEAD too, so a HEAD route of its own beside a documented GET
    // (the tracking links', to tell link checkers) is the GET's, not an operation apart.
    let head_of_get =
        |r: &String| r.strip_prefix("HEAD ").is_some_and(|p| documented.contains(&format!("GET {p}")));
    let missing: Vec<_> =
        mounted.difference(&documented).filter(|r| !excused.contains(*r) && !head_of_get(r)).collect();
    assert!(missing.is_empty(), "mounted but not in the document: {missing:#?}");
    let unknown: Vec<_> = documented.difference(&mounted).collect();
    assert!(unknown.is_empty(), "in the document but not mounted: {unknown:#?}");
}

/// Schemas are named by their type's name and merged by name: two types of one name in
/// different modules would leave one of them described as the other.
#[test]
fn each_schema_name_means_one_schema() {
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    for part in parts() {
        for (name, schema) in part.components.map(|c| c.schemas).unwrap_or_default() {
            let json = serde_json::to_string(&schema).unwrap();
            if let Some(earlier) = seen.insert(name.clone(), json.clone()) {
                assert_eq!(earlier, json, "two schemas are named {name}");
            }
        }
    }
}

#[test]
fn operations_have_unique_ids_tags_and_described_answers() {
    let mut doc = document();
    let mut ids = BTreeSet::new();
    for (path, item) in doc.paths.paths.iter_mut() {
        for operation in operations(item) {
            let id = operation.operation_id.clone().unwrap_or_default();
            assert!(
                !id.is_empty() && ids.insert(id.clone()),
                "{path}: operationId {id:?} missing or repeated"
            );
            assert!(operation.tags.as_ref().is_some_and(|t| !t.is_empty()), "{path} {id}: no tag");
            for (status, response) in &operation.responses.responses {
                if let RefOr::T(response) = response {
                    assert!(!response.description.is_empty(), "{path} {id} {status}: no description");
                }
            }
        }
    }
}

/// The served document is the generated one: a change to a handler's route or types that is not
/// in `docs/openapi.json` fails here. `TIDINGS_WRITE_OPENAPI=1 cargo test --lib openapi` writes
/// the file anew (then commit it).
#[test]
fn the_served_document_is_the_generated_one() {
    let generated = document().to_pretty_json().unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    if std::env::var_os("TIDINGS_WRITE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    if generated != DOCUMENT {
        let line = generated.lines().zip(DOCUMENT.lines()).position(|(a, b)| a != b).unwrap_or(0) + 1;
        panic!(
            "docs/openapi.json differs from the document the handlers make (first at line {line}): \
             run `TIDINGS_WRITE_OPENAPI=1 cargo test --lib openapi` and commit the file"
        );
    }
}
