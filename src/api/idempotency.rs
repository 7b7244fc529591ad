//! The `Idempotency-Key` header of `/v1/send` and `/v1/track`, scoped to the project and the
//! endpoint (a key used on `/v1/track` does not block the same key on `/v1/send`).
//!
//! The guard validates the header (1 to 255 printable ASCII characters, else 422). The handler
//! then calls [`IdempotencyKey::claim`] inside the transaction that performs the request, so the
//! record exists exactly when the work was committed: a reuse within the TTL gets 409 with the
//! first request's details and performs nothing.

use rocket::request::{FromRequest, Outcome, Request};
use serde_json::json;

use crate::clock;
use crate::db::idempotency;
use crate::error::{ApiError, FieldError, stash};

pub const HEADER: &str = "Idempotency-Key";
pub const MAX_LEN: usize = 255;

/// The header in the OpenAPI document.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[allow(dead_code)]
pub struct Header {
    /// Makes a retry safe: a second request with the same key within the retention window is
    /// refused with 409 `IDEMPOTENCY_KEY_REUSED` (its `details` name the first), and nothing
    /// is done twice. 1 to 255 printable ASCII characters.
    #[param(
        rename = "Idempotency-Key",
        required = false,
        min_length = 1,
        max_length = 255,
        pattern = "^[\\x20-\\x7e]+$"
    )]
    idempotency_key: String,
}

/// The validated header, if the request carried one, and what the request was.
pub struct IdempotencyKey {
    pub key: Option<String>,
    pub request: String,
}

/// Checks a header value against the rules of api.md.
pub fn validate(value: &str) -> Result<(), ApiError> {
    let problem = if value.is_empty() {
        Some("must not be empty")
    } else if value.len() > MAX_LEN {
        Some("must be at most 255 characters")
    } else if !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        Some("must contain printable ASCII characters only")
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(ApiError::validation(vec![
            FieldError::new(HEADER, "invalid_string", format!("{HEADER} {problem}"))
                .received(json!(value.chars().take(300).collect::<String>())),
        ])),
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for IdempotencyKey {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        let request = format!("{} {}", req.method(), req.uri().path());
        let Some(value) = req.headers().get_one(HEADER) else {
            return Outcome::Success(IdempotencyKey { key: None, request });
        };
        match validate(value) {
            Ok(()) => Outcome::Success(IdempotencyKey { key: Some(value.to_string()), request }),
            Err(e) => Outcome::Error(stash(req, e)),
        }
    }
}

impl IdempotencyKey {
    /// Records the key for this request in the caller's transaction; 409 when it was used within
    /// `ttl_hours`. `status_code` is what this request answers when it succeeds.
    pub fn claim(
        &self,
        conn: &crate::db::Tx,
        project: &str,
        status_code: u16,
        ttl_hours: u32,
    ) -> Result<(), ApiError> {
        let Some(key) = &self.key else { return Ok(()) };
        let ttl_ms = i64::from(ttl_hours) * 3_600_000;
        match idempotency::claim(conn, project, key, &self.request, status_code, clock::now_ms(), ttl_ms)? {
            Ok(()) => Ok(()),
            Err(first) => Err(reused(first)),
        }
    }
}

fn reused(first: idempotency::Record) -> ApiError {
    let at = clock::iso(first.created_at);
    ApiError::new(
        409,
        "IDEMPOTENCY_KEY_REUSED",
        format!("This Idempotency-Key was already used by a request at {at}; this request was not performed"),
    )
    .with_details(json!({
        "key": first.key,
        "originalRequest": first.request,
        "originalRequestAt": at,
        "originalStatusCode": first.status_code,
    }))
    .with_suggestion(
        "Send a new Idempotency-Key for a new request; reuse a key only to retry the same request",
    )
}

#[cfg(test)]
mod tests {
    use super::validate;

    #[test]
    fn header_rules() {
        assert!(validate("a").is_ok());
        assert!(validate(&"k".repeat(255)).is_ok());
        assert!(validate("order-42 retry #1").is_ok());
        for bad in [String::new(), "k".repeat(256), "tab\there".into(), "é".into()] {
            let e = validate(&bad).unwrap_err();
            assert_eq!((e.status, e.code), (422, "VALIDATION_ERROR"), "{bad:?}");
        }
    }
}
