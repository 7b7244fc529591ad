//! What the benchmarks share: a project made straight in the database (its secret key), and a
//! JSON client for the server they start.

#![allow(dead_code)]

use std::time::Duration;

use serde_json::Value;
use tidings::AppState;

/// A user and a project of theirs; the project's secret key.
pub fn project(state: &AppState) -> String {
    let mut conn = state.db.conn().unwrap();
    tidings::db::write_tx(&mut conn, |tx| {
        let hash = tidings::core::accounts::hash_password("benchmark password", 4).unwrap();
        let user = tidings::core::accounts::insert_user(tx, "bench@example.com", &hash)?;
        Ok::<_, tidings::error::ApiError>(
            tidings::core::projects::create(tx, "Bench", &user.id)?.keys.secret_key,
        )
    })
    .unwrap()
}

/// A client that keeps its connection and reads every status as an answer.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// A keyed request on a new connection: POST with a JSON body, else GET (or an empty POST when
/// `method` says so).
pub fn http(base: &str, method: &str, path: &str, key: &str, body: Option<Value>) -> (u16, Value) {
    call(&agent(), base, method, path, key, body)
}

/// A keyed request on `agent`'s kept connection.
pub fn call(
    agent: &ureq::Agent,
    base: &str,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let url = format!("{base}{path}");
    let auth = format!("Bearer {key}");
    let mut res = match body {
        Some(body) => agent
            .post(&url)
            .header("Authorization", &auth)
            .header("content-type", "application/json")
            .send(body.to_string()),
        None if method == "GET" => agent.get(&url).header("Authorization", &auth).call(),
        None => agent.post(&url).header("Authorization", &auth).send_empty(),
    }
    .unwrap();
    (res.status().as_u16(), res.body_mut().read_json().unwrap_or(Value::Null))
}
