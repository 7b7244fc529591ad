//! The test harness: an app on a temporary database, helpers to sign up and make projects, and
//! probe routes that exercise the shared guards the way product endpoints use them.

#![allow(dead_code)]

pub mod binary;
#[path = "../../support/dns_server.rs"]
pub mod dns_server;
#[path = "../../support/http_receiver.rs"]
pub mod http_receiver;
pub mod probes;
pub mod sending;
#[path = "../../support/smtp_sink.rs"]
pub mod smtp_sink;
pub mod store;

use std::sync::Arc;

use rocket::http::{ContentType, Cookie, Header, Method, Status};
use rocket::local::asynchronous::{Client, LocalRequest, LocalResponse};
use serde_json::{Value, json};
use tempfile::TempDir;
use tidings::config::Config;
use tidings::core::limits::ratelimit::ProjectLimiter;
use tidings::{AppState, build_rocket};

/// A configuration for tests: data in `dir`, cheap bcrypt, no shutdown grace.
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config::defaults();
    config.server.data_dir = dir.to_path_buf();
    config.server.port = 0;
    config.server.shutdown_grace_secs = 0;
    config.auth.bcrypt_cost = 4;
    // Tests sign up many accounts; the default (only the first) is tested in account_abuse.rs.
    config.auth.disable_signups = Some(false);
    config.scheduler.retry_base_secs = 1;
    // A provider that defers a message rests a second, not a minute (provider_queues.rs sets
    // its own).
    config.smtp.providers.backoff_secs = 1;
    config
}

/// One app: its state, a local client, and the directory that holds its database.
pub struct TestApp {
    pub client: Client,
    pub state: AppState,
    pub dir: Arc<TempDir>,
}

/// A project made through the API, with both keys.
#[derive(Debug, Clone)]
pub struct Keys {
    pub id: String,
    pub public_key: String,
    pub secret_key: String,
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with(|_| {}).await
    }

    /// An app whose configuration `tweak` adjusts.
    pub async fn with(tweak: impl FnOnce(&mut Config)) -> TestApp {
        Self::build(tweak, None).await
    }

    /// An app whose rate limiter is `limiter` (for example on a clock held still).
    pub async fn with_limiter(limiter: Arc<dyn ProjectLimiter>) -> TestApp {
        Self::build(|_| {}, Some(limiter)).await
    }

    async fn build(tweak: impl FnOnce(&mut Config), limiter: Option<Arc<dyn ProjectLimiter>>) -> TestApp {
        let dir = Arc::new(TempDir::new().unwrap());
        let mut config = test_config(dir.path());
        tweak(&mut config);
        let mut state = AppState::open(config).unwrap();
        if let Some(limiter) = limiter {
            state.limiter = limiter;
        }
        Self::on_state(state, dir).await
    }

    /// A second app on the same state (another client on the same database).
    pub async fn on_state(state: AppState, dir: Arc<TempDir>) -> TestApp {
        let rocket = build_rocket(state.clone()).mount("/test-probe", probes::routes());
        let client = Client::untracked(rocket).await.unwrap();
        TestApp { client, state, dir }
    }

    /// Signs up `email` and returns the session cookie.
    pub async fn signup(&self, email: &str) -> Cookie<'static> {
        let res = self.post_json("/auth/signup", &json!({ "email": email, "password": "password123" })).await;
        assert_eq!(res.status(), Status::Ok, "signup of {email}");
        session_cookie(&res)
    }

    /// Creates a project through the API as the user of `session`.
    pub async fn project(&self, session: &Cookie<'static>, name: &str) -> Keys {
        let res = self
            .client
            .post("/users/@me/projects")
            .cookie(session.clone())
            .header(ContentType::JSON)
            .body(json!({ "name": name }).to_string())
            .dispatch()
            .await;
        assert_eq!(res.status(), Status::Ok);
        let body = body(res).await;
        Keys {
            id: body["id"].as_str().unwrap().into(),
            public_key: body["publicKey"].as_str().unwrap().into(),
            secret_key: body["secretKey"].as_str().unwrap().into(),
        }
    }

    /// A user with one project.
    pub async fn user_with_project(&self, email: &str) -> (Cookie<'static>, Keys) {
        let session = self.signup(email).await;
        let keys = self.project(&session, "Test project").await;
        (session, keys)
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> LocalResponse<'_> {
        self.client.post(path.to_string()).header(ContentType::JSON).body(body.to_string()).dispatch().await
    }

    /// A JSON request with the secret key; returns the status and the body (null when empty).
    pub async fn call(&self, method: Method, path: &str, key: &str, body: Option<Value>) -> (Status, Value) {
        let mut req = self.keyed(self.client.req(method, path.to_string()), key);
        if let Some(body) = body {
            req = req.header(ContentType::JSON).body(body.to_string());
        }
        let res = req.dispatch().await;
        let status = res.status();
        let text = res.into_string().await.unwrap_or_default();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str, key: &str) -> (Status, Value) {
        self.call(Method::Get, path, key, None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> (Status, Value) {
        self.call(Method::Post, path, key, Some(body)).await
    }

    /// Uploads `csv` as the multipart part `file` to `POST /contacts/import`.
    pub async fn upload_csv(&self, key: &str, csv: &[u8]) -> (Status, Value) {
        self.upload_csv_to("/contacts/import", key, csv).await
    }

    /// Uploads `csv` as the multipart part `file` to `path`.
    pub async fn upload_csv_to(&self, path: &str, key: &str, csv: &[u8]) -> (Status, Value) {
        self.upload_parts(path, key, &[("file", csv)]).await
    }

    /// Uploads a multipart form of `parts` (name, bytes) to `path`.
    pub async fn upload_parts(&self, path: &str, key: &str, parts: &[(&str, &[u8])]) -> (Status, Value) {
        let boundary = "tidings-test-boundary-7MA4YWxkTrZu0gW";
        let mut body = Vec::new();
        for (name, bytes) in parts {
            body.extend_from_slice(format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"contacts.csv\"\r\nContent-Type: text/csv\r\n\r\n"
            ).as_bytes());
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let content_type = ContentType::new("multipart", "form-data").with_params(("boundary", boundary));
        let res = self
            .keyed(self.client.post(path.to_string()), key)
            .header(content_type)
            .body(body)
            .dispatch()
            .await;
        let status = res.status();
        (status, body_or_null(res).await)
    }

    /// Runs the scheduler until `done` holds (checked every 20 ms), then stops it. The deadline
    /// is generous: under the whole suite's load a job with retries (1, 2, 4 and 8 s apart) has
    /// come near 30 s.
    pub async fn run_jobs_until(&self, what: &str, mut done: impl AsyncFnMut() -> bool) {
        let handle =
            tidings::scheduler::start(self.state.clone(), tidings::scheduler::registry(&self.state.config));
        let start = std::time::Instant::now();
        while !done().await {
            assert!(start.elapsed() < std::time::Duration::from_secs(60), "timed out waiting for {what}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        handle.shutdown().await;
    }

    /// Waits for a contact job (import or bulk) to finish and returns its final state.
    pub async fn finish_job(&self, path: &str, key: &str) -> Value {
        let mut last = Value::Null;
        self.run_jobs_until(path, async || {
            last = self.get(path, key).await.1;
            matches!(last["status"].as_str(), Some("completed" | "failed"))
        })
        .await;
        last
    }

    /// A request with `Authorization: Bearer <key>`.
    /// A JSON request as the dashboard makes it, with `session`'s cookie (when given); returns
    /// the status, the body (null when empty) and the session cookie the response set, if any.
    pub async fn as_user(
        &self,
        method: Method,
        path: &str,
        session: Option<&Cookie<'static>>,
        body: Option<Value>,
    ) -> (Status, Value, Option<Cookie<'static>>) {
        // The dashboard names JSON on every request (cookie requests must: CSRF rules).
        let mut req = self.client.req(method, path.to_string()).header(ContentType::JSON);
        if let Some(cookie) = session {
            req = req.cookie(cookie.clone());
        }
        if let Some(body) = body {
            req = req.body(body.to_string());
        }
        let res = req.dispatch().await;
        let cookie = res.cookies().get("tidings_session").map(|c| c.clone().into_owned());
        let status = res.status();
        (status, body_or_null(res).await, cookie)
    }

    pub fn keyed<'c>(&'c self, request: LocalRequest<'c>, key: &str) -> LocalRequest<'c> {
        request.header(Header::new("Authorization", format!("Bearer {key}")))
    }
}

/// The `tidings_session` cookie a response set.
pub fn session_cookie(res: &LocalResponse<'_>) -> Cookie<'static> {
    res.cookies().get("tidings_session").expect("a session cookie").clone().into_owned()
}

async fn body_or_null(res: LocalResponse<'_>) -> Value {
    let text = res.into_string().await.unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The body as JSON.
pub async fn body(res: LocalResponse<'_>) -> Value {
    let text = res.into_string().await.unwrap_or_default();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
}

/// Asserts the error envelope of api.md and returns the `error` object.
pub async fn assert_envelope(res: LocalResponse<'_>, status: u16, code: &str) -> Value {
    assert_eq!(res.status().code, status, "status");
    assert_eq!(res.content_type(), Some(ContentType::JSON), "content type");
    let request_id = res.headers().get_one("X-Request-Id").expect("X-Request-Id").to_string();
    let body = body(res).await;
    assert_eq!(body["success"], json!(false), "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], json!(code), "{body}");
    assert_eq!(error["statusCode"], json!(status), "{body}");
    assert_eq!(error["requestId"], json!(request_id), "requestId equals X-Request-Id: {body}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(body["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{body}");
    error.clone()
}
