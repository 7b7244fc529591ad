//! Checked arithmetic at the edge (issue 29): every number in the configuration, set to the
//! largest value its type and the validation accept, starts the server, answers requests and
//! runs the scheduler without a panic. Tests build with overflow checks (as the release build now
//! does), so an arithmetic on a configured number that can wrap fails here, for the next setting
//! added too: `requests_per_minute = 1e9` once wrapped the public keys' share to a small number.

use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tidings::config::Config;

use crate::common::{TestApp, test_config};

/// The dotted paths of every integer in `value`.
fn numbers(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                numbers(v, &if path.is_empty() { key.clone() } else { format!("{path}.{key}") }, out);
            }
        }
        Value::Array(items) => {
            for (n, v) in items.iter().enumerate() {
                numbers(v, &format!("{path}.{n}"), out);
            }
        }
        Value::Number(n) if n.is_u64() || n.is_i64() => out.push(path.to_string()),
        _ => {}
    }
}

fn set(value: &mut Value, path: &str, to: Value) {
    let mut at = value;
    for part in path.split('.') {
        at = match part.parse::<usize>() {
            Ok(n) if at.is_array() => &mut at[n],
            _ => &mut at[part],
        };
    }
    *at = to;
}

/// The configuration with `path` at the largest value that deserializes and validates (found by
/// bisection: validation accepts a range).
fn at_largest(base: &Value, path: &str) -> Option<(u64, Config)> {
    let accepted = |n: u64| {
        let mut value = base.clone();
        set(&mut value, path, n.into());
        let config: Config = serde_json::from_value(value).ok()?;
        config.validate().ok()?;
        Some(config)
    };
    let (mut low, mut high) = (0u64, u64::MAX);
    // The default is accepted; find the largest accepted value above it.
    let mut best = None;
    let start = base.pointer(&format!("/{}", path.replace('.', "/")))?.as_u64()?;
    low = low.max(start);
    while low <= high {
        let mid = low + (high - low) / 2;
        match accepted(mid) {
            Some(config) => {
                best = Some((mid, config));
                low = match mid.checked_add(1) {
                    Some(next) => next,
                    None => break,
                };
            }
            None => high = mid.checked_sub(1)?,
        }
    }
    best
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_number_in_the_configuration_at_its_largest_starts_and_serves() {
    let dir = TempDir::new().unwrap();
    let mut config = test_config(dir.path());
    // A relay, so its numbers are walked too (it is never reached: nothing is sent).
    config.smtp.relays.push(tidings::config::RelayConfig {
        host: "127.0.0.1".into(),
        port: 9,
        ..Default::default()
    });
    let base = serde_json::to_value(config).unwrap();
    let mut paths = Vec::new();
    numbers(&base, "", &mut paths);
    assert!(paths.len() > 30, "the walk finds the settings: {paths:?}");
    let mut failed = Vec::new();
    for path in paths.into_iter().filter(|p| p != "auth.bcrypt_cost") {
        let Some((n, mut config)) = at_largest(&base, &path) else { continue };
        let dir = Arc::new(TempDir::new().unwrap());
        config.server.data_dir = dir.path().to_path_buf();
        let run = tokio::spawn(async move {
            let state = tidings::state::AppState::open(config).unwrap();
            let app = TestApp::on_state(state.clone(), dir).await;
            let handle =
                tidings::scheduler::start(state.clone(), tidings::scheduler::registry(&state.config));
            let (_, keys) = app.user_with_project("owner@example.com").await;
            let body = serde_json::json!({ "email": "c@example.com", "event": "signup" });
            let (status, _) = app.post("/v1/track", &keys.public_key, body).await;
            assert!(status.code < 500, "{status}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            handle.shutdown().await;
        });
        if let Err(e) = run.await {
            failed.push(format!("{path} = {n}: {e}"));
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
