//! The one error type of the HTTP surface and the JSON catcher that renders every failure.
//!
//! An [`ApiError`] renders the envelope of api.md "Errors":
//! `{success: false, error: {code, message, statusCode, requestId, errors?, details?, suggestion?},
//! timestamp}`, or the short `{error: message}` form that a few endpoints use for 400.
//!
//! Rocket does not hand a guard's error to its catcher, so guards and data guards [`stash`] their
//! error in the request before failing; the catcher renders the stashed error when there is one
//! and a generic one for the status otherwise. Either way the body is JSON.

use std::io::Cursor;
use std::sync::Mutex;

use rocket::http::{ContentType, Header, Status};
use rocket::request::Request;
use rocket::response::{self, Responder, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::clock;

pub use crate::core::error::FieldError;
use crate::core::error::{Error, Forbidden, Limit};

// The OpenAPI document's shape of core's [`FieldError`].
/// One field-level problem, as listed in `error.errors`.
#[derive(utoipa::ToSchema)]
#[schema(as = FieldError)]
#[expect(dead_code, reason = "only its schema is used, for the OpenAPI document")]
struct FieldErrorSchema {
    /// The field's path: `email`, `data.plan`, `to[1]`.
    field: String,
    message: String,
    /// `invalid_string`, `required`, `reserved_event`, `too_big`, ...
    code: String,
    /// The value that was refused, when it helps to see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    received: Option<Value>,
}

/// An error answer: status, machine-readable code, message and optional extras. Boxed, so the
/// `Result`s that carry it stay small; its fields are reached through `Deref`.
#[derive(Clone)]
pub struct ApiError(Box<ErrorBody>);

/// One readable line (Rocket prints guard errors with `{:?}`).
impl std::fmt::Debug for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

/// The fields of an [`ApiError`].
#[derive(Debug, Clone)]
pub struct ErrorBody {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    pub errors: Vec<FieldError>,
    pub details: Option<Value>,
    pub suggestion: Option<String>,
    /// Render `{ "error": message }` instead of the envelope (the 400 form api.md names).
    pub simple: bool,
    /// Extra response headers, such as `Retry-After`.
    pub headers: Vec<(&'static str, String)>,
    /// What went wrong inside, for the log only; never sent to the client.
    pub cause: Option<String>,
}

impl std::ops::Deref for ApiError {
    type Target = ErrorBody;

    fn deref(&self) -> &ErrorBody {
        &self.0
    }
}

impl std::ops::DerefMut for ApiError {
    fn deref_mut(&mut self) -> &mut ErrorBody {
        &mut self.0
    }
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self(Box::new(ErrorBody {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            details: None,
            suggestion: None,
            simple: false,
            headers: Vec::new(),
            cause: None,
        }))
    }

    /// 400 in the envelope.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BAD_REQUEST", message)
    }

    /// 400 as `{ "error": message }`.
    pub fn simple_bad_request(message: impl Into<String>) -> Self {
        let mut e = Self::bad_request(message);
        e.simple = true;
        e
    }

    pub fn missing_auth(message: impl Into<String>) -> Self {
        Self::new(401, "MISSING_AUTH", message)
    }

    pub fn invalid_api_key(message: impl Into<String>) -> Self {
        Self::new(401, "INVALID_API_KEY", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "FORBIDDEN", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(404, "NOT_FOUND", message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(409, "CONFLICT", message)
    }

    /// 422 `VALIDATION_ERROR` with field items.
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let message = match errors.as_slice() {
            [one] => format!("Validation failed: {}: {}", one.field, one.message),
            _ => format!("Validation failed on {} fields", errors.len()),
        };
        let mut e = Self::new(422, "VALIDATION_ERROR", message);
        e.errors = errors;
        e
    }

    /// 422 for a single field.
    pub fn invalid_field(field: &str, code: &str, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, code, message)])
    }

    pub fn payload_too_large(limit: u64) -> Self {
        Self::new(
            413,
            "PAYLOAD_TOO_LARGE",
            format!("The request body is larger than the limit of {limit} bytes"),
        )
        .with_details(json!({ "limitBytes": limit }))
    }

    /// 413 for a body within its byte cap but past the limits of what it may hold.
    pub fn body_too_complex(exceeded: crate::bounded_json::Exceeded) -> Self {
        let (limit, name) = match exceeded {
            crate::bounded_json::Exceeded::Values(n) => (n, "limitValues"),
            crate::bounded_json::Exceeded::Objects(n) => (n, "limitObjects"),
            crate::bounded_json::Exceeded::Depth(n) => (n, "limitDepth"),
        };
        Self::new(413, "PAYLOAD_TOO_LARGE", format!("The request body {exceeded}"))
            .with_details(json!({ name: limit }))
    }

    /// 429 for `wait`, rounded up to whole seconds (at least one) in `Retry-After`.
    pub fn retry_after(message: impl Into<String>, wait: std::time::Duration) -> Self {
        let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
        Self::new(429, "RATE_LIMIT_EXCEEDED", message)
            .with_header("Retry-After", seconds.to_string())
            .with_details(json!({ "retryAfter": seconds }))
    }

    pub fn too_many_requests(limit: u32, retry_after_secs: u64) -> Self {
        Self::new(
            429,
            "RATE_LIMIT_EXCEEDED",
            format!("Rate limit of {limit} requests per minute exceeded; retry in {retry_after_secs} s"),
        )
        .with_header("Retry-After", retry_after_secs.to_string())
        .with_details(json!({ "limit": limit, "retryAfter": retry_after_secs }))
    }

    /// 500 with the cause kept for the log.
    pub fn internal(cause: impl Into<String>) -> Self {
        let mut e = Self::new(
            500,
            "INTERNAL_SERVER_ERROR",
            "An unexpected error occurred; quote the requestId when reporting it",
        );
        e.cause = Some(cause.into());
        e
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }

    pub fn with_header(mut self, name: &'static str, value: String) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The generic error for a status with nothing more specific known (used by the catcher).
    pub fn for_status(status: Status, req: &Request<'_>) -> Self {
        match status.code {
            400 => Self::bad_request("The request is malformed"),
            401 => Self::missing_auth("Authentication is required"),
            403 => Self::forbidden("You are not allowed to do this"),
            404 => Self::not_found(format!("No endpoint matches {} {}", req.method(), req.uri().path())),
            405 => Self::new(405, "METHOD_NOT_ALLOWED", "This method is not allowed here"),
            413 => Self::new(413, "PAYLOAD_TOO_LARGE", "The request body is too large"),
            415 => {
                Self::new(415, "UNSUPPORTED_MEDIA_TYPE", "The request body has an unsupported content type")
            }
            422 => Self::new(422, "VALIDATION_ERROR", "A path or query parameter is malformed"),
            429 => Self::new(429, "RATE_LIMIT_EXCEEDED", "Too many requests")
                .with_header("Retry-After", "60".into()),
            500 => Self::internal("a handler failed without an error value (panic?)"),
            code => Self::new(code, "ERROR", status.reason_lossy().to_string()),
        }
    }

    /// The status as Rocket's type.
    pub fn status(&self) -> Status {
        Status::from_code(self.status).unwrap_or(Status::InternalServerError)
    }

    fn body(&self, request_id: &str) -> Value {
        if self.simple {
            return json!(SimpleError { error: self.message.clone() });
        }
        json!(Envelope {
            success: false,
            error: ErrorObject {
                code: self.code.to_string(),
                message: self.message.clone(),
                status_code: self.status,
                request_id: request_id.to_string(),
                errors: self.errors.clone(),
                details: self.details.clone(),
                suggestion: self.suggestion.clone(),
            },
            timestamp: clock::now_iso(),
        })
    }
}

/// The error envelope of api.md "Errors".
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(example = json!({
    "success": false,
    "error": {
        "code": "VALIDATION_ERROR", "message": "Invalid email address", "statusCode": 422,
        "requestId": "6f1c0b5e-3d0a-4c51-9a3e-0d8f7b2a1c44",
        "errors": [{ "field": "email", "message": "Invalid email address", "code": "invalid_string", "received": "ada@" }],
    },
    "timestamp": "2026-11-24T12:00:00.000Z",
}))]
pub struct Envelope {
    /// Always `false`.
    pub success: bool,
    pub error: ErrorObject,
    /// When the error was answered.
    #[schema(format = DateTime)]
    pub timestamp: String,
}

/// What went wrong, in an [`Envelope`].
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorObject {
    /// Machine-readable: `VALIDATION_ERROR`, `INVALID_API_KEY`, `NOT_FOUND`, `RATE_LIMIT_EXCEEDED`, ...
    pub code: String,
    /// For people.
    pub message: String,
    /// The HTTP status again.
    pub status_code: u16,
    /// Quote it to the server's operator: the log line of this request carries it.
    pub request_id: String,
    /// Field-level problems, when the body or query had some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<FieldErrorSchema>)]
    pub errors: Vec<FieldError>,
    /// Extra data, such as `retryAfter` or the original request of a reused idempotency key.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// The short form a few endpoints answer a 400 with (api.md "Errors").
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SimpleError {
    pub error: String,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl<'r> Responder<'r, 'static> for ApiError {
    fn respond_to(self, req: &'r Request<'_>) -> response::Result<'static> {
        let request_id = RequestId::of(req);
        if self.status >= 500 {
            tracing::error!(request_id, method = %req.method(), path = %req.uri().path(),
                cause = self.cause.as_deref().unwrap_or("-"), "{}", self.message);
        } else {
            // The client's mistake, not the operator's: one line, found by the request id.
            tracing::debug!(request_id, method = %req.method(), path = %req.uri().path(),
                status = self.status, code = self.code, "refused: {}", self.message);
        }
        let body = self.body(request_id).to_string();
        let mut response = Response::build();
        response.status(self.status()).header(ContentType::JSON).sized_body(body.len(), Cursor::new(body));
        for (name, value) in self.0.headers {
            response.header(Header::new(name, value));
        }
        response.ok()
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        Error::from(e).into()
    }
}

/// Stripe unreachable or refusing: a bad gateway.
impl From<crate::adapters::stripe::Failure> for ApiError {
    fn from(f: crate::adapters::stripe::Failure) -> Self {
        Self::new(502, "INTERNAL_SERVER_ERROR", f.0)
    }
}

/// The one place a use case's error gets its HTTP status, code and extras.
impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let message = e.to_string();
        match e {
            Error::Invalid(errors) => Self::validation(errors),
            Error::Malformed(_) => Self::bad_request(message),
            Error::StaleToken => Self::new(400, "INVALID_TOKEN", message),
            Error::NotFound(_) => Self::not_found(message),
            Error::Conflict { details, .. } => {
                let e = Self::conflict(message);
                match details {
                    Some(details) => e.with_details(details),
                    None => e,
                }
            }
            Error::Forbidden(Forbidden::Denied(_)) => Self::forbidden(message),
            // The code Plunk answers with (appliance.md section 11).
            Error::Forbidden(Forbidden::UnverifiedSender { domain, sandbox }) => {
                let add = format!(
                    "add {domain} (or a parent domain) on the Domains page or with POST /domains, publish the DNS records it shows, then verify it"
                );
                let suggestion = match &sandbox {
                    Some(sandbox) => format!(
                        "While this server captures mail, send from any address at {sandbox} (the project's sandbox domain; the mail stays in the Outbox). To send for real, {add}"
                    ),
                    None => format!("To send from it, {add}"),
                };
                // The details stay as appliance.md section 11 has them; the sandbox is named in
                // the suggestion (and at GET /domains/sandbox).
                Self::new(403, "INTERNAL_SERVER_ERROR", message)
                    .with_details(json!({ "domain": domain, "reason": "DOMAIN_NOT_VERIFIED" }))
                    .with_suggestion(suggestion)
            }
            // Nothing of the write was kept (core's message says so).
            Error::OverLimit(Limit::Billing { category }) => Self::new(402, "BILLING_LIMIT_EXCEEDED", message)
                .with_details(json!({ "category": category }))
                .with_suggestion(
                    "An owner or admin can raise the limit under Settings, or wait for the next month (UTC)",
                ),
            Error::OverLimit(Limit::Bytes { bytes, field, suggestion }) => Self::payload_too_large(bytes)
                .with_details(json!({ "limitBytes": bytes, "field": field }))
                .with_suggestion(suggestion),
            Error::OverLimit(Limit::Rows { rows, suggestion, .. }) => Self::new(413, "PAYLOAD_TOO_LARGE", message)
                .with_details(json!({ "limitRows": rows }))
                .with_suggestion(suggestion),
            Error::OverLimit(Limit::UploadSpace { .. }) => Self::new(413, "PAYLOAD_TOO_LARGE", message),
            Error::OverLimit(Limit::Domains { .. }) => Self::forbidden(message).with_suggestion(
                "Remove a domain you no longer send from, or raise [limits] domains_per_project",
            ),
            Error::OverLimit(Limit::InboundDomains { .. }) => Self::forbidden(message).with_suggestion(
                "Remove an inbound domain you no longer receive mail for, or raise [inbound] domains_per_project",
            ),
            Error::OverLimit(Limit::InboundRoutes { .. }) => Self::forbidden(message).with_suggestion(
                "Remove a route, use a catch-all route (*@domain), or raise [inbound] routes_per_project",
            ),
            Error::OverLimit(Limit::Rate { wait, .. }) => Self::retry_after(message, wait),
            Error::OverLimit(Limit::Storage) => Self::new(507, "INSUFFICIENT_STORAGE", message)
                .with_suggestion("The server's disk is full: its operator must free space; reads still work"),
            Error::Retryable(cause) | Error::Permanent(cause) => Self::internal(cause),
            Error::Db(e) => Self::internal(format!("database: {e}")),
        }
    }
}

/// The identifier of one request, made on first use and sent back as `X-Request-Id`.
pub struct RequestId(String);

impl RequestId {
    pub fn of<'r>(req: &'r Request<'_>) -> &'r str {
        &req.local_cache(|| RequestId(uuid::Uuid::now_v7().simple().to_string())).0
    }
}

#[derive(Default)]
struct Stashed(Mutex<Option<ApiError>>);

/// Keeps `error` for the catcher and returns the status a guard fails with.
pub fn stash(req: &Request<'_>, error: ApiError) -> (Status, ApiError) {
    let status = error.status();
    let slot = req.local_cache(Stashed::default);
    if let Ok(mut slot) = slot.0.lock() {
        *slot = Some(error.clone());
    }
    (status, error)
}

fn take_stashed(req: &Request<'_>, status: Status) -> Option<ApiError> {
    let slot = req.local_cache(Stashed::default);
    let stashed = slot.0.lock().ok()?.take()?;
    (stashed.status == status.code).then_some(stashed)
}

/// The single catcher: every status, always the JSON envelope.
#[rocket::catch(default)]
pub fn catch_all(status: Status, req: &Request<'_>) -> ApiError {
    take_stashed(req, status).unwrap_or_else(|| ApiError::for_status(status, req))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_envelope_has_every_field_of_the_spec() {
        let e =
            ApiError::validation(vec![FieldError::new("to", "invalid_string", "bad").received(json!("x"))])
                .with_details(json!({ "k": 1 }))
                .with_suggestion("try again");
        let body = e.body("req-1");
        assert_eq!(body["success"], json!(false));
        assert_eq!(body["error"]["code"], json!("VALIDATION_ERROR"));
        assert_eq!(body["error"]["statusCode"], json!(422));
        assert_eq!(body["error"]["requestId"], json!("req-1"));
        assert_eq!(
            body["error"]["errors"][0],
            json!({ "field": "to", "code": "invalid_string", "message": "bad", "received": "x" })
        );
        assert_eq!(body["error"]["details"], json!({ "k": 1 }));
        assert_eq!(body["error"]["suggestion"], json!("try again"));
        assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
        let plain = ApiError::not_found("gone").body("req-2");
        assert!(plain["error"].get("errors").is_none() && plain["error"].get("details").is_none());
    }

    #[test]
    fn an_answer_too_large_names_its_rows() {
        let e = Error::OverLimit(Limit::Rows {
            rows: 100_000,
            what: "contact",
            suggestion: "export the project",
        });
        let body = ApiError::from(e).body("req-4");
        assert_eq!(body["error"]["statusCode"], json!(413));
        assert_eq!(body["error"]["code"], json!("PAYLOAD_TOO_LARGE"));
        assert_eq!(body["error"]["details"], json!({ "limitRows": 100_000 }));
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("contact") && message.contains("100000 rows"), "{message}");
    }

    #[test]
    fn the_simple_form_is_just_the_message() {
        let body = ApiError::simple_bad_request("email is required").body("req-3");
        assert_eq!(body, json!({ "error": "email is required" }));
    }
}
