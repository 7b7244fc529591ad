//! `JsonBody<T, Cap>`: a JSON request body whose failures answer in the error envelope.
//!
//! Each route names its size cap (appliance.md §13) in its signature, and the cap is enforced
//! while the body is read, before anything is parsed: [`Small`] (16 KiB) for sign-in, projects,
//! members, domains and settings; [`Medium`] (256 KiB) for `/v1/track`, contacts, segments and
//! bulk jobs; [`Message`] (`[limits] message_bytes`) for `/v1/send` and templates.
//!
//! Past the byte cap, or past [`bounded_json::REQUEST`] in values, objects or depth (checked
//! by walking the body before it is built), gives 413; malformed JSON (or not UTF-8, or empty)
//! gives 400, and JSON of the wrong shape gives 422 with an item naming the field
//! (`serde_path_to_error` supplies the path). Every body is read within the [`BodyBudget`](crate::core::limits::bodies::BodyBudget).

use std::marker::PhantomData;

use rocket::data::{self, Data, FromData, ToByteUnit};
use rocket::request::Request;
use rocket::tokio::io::AsyncReadExt;
use serde::de::DeserializeOwned;

use crate::bounded_json;
use crate::core::limits::bodies::Reserved;
use crate::error::{ApiError, FieldError, stash};
use crate::state::AppState;

/// A route's body cap: how many bytes it reads before answering 413.
pub trait Cap: Send + Sync + 'static {
    fn bytes(state: &AppState) -> u64;
}

/// 16 KiB: sign-up and sign-in, projects, members, domains, settings.
pub struct Small;
/// 256 KiB: `/v1/track`, contacts, segments, bulk jobs (and workflows, campaign metadata).
pub struct Medium;
/// The message limit (`[limits] message_bytes`): `/v1/send`, templates (and campaign bodies).
pub struct Message;

impl Cap for Small {
    fn bytes(_: &AppState) -> u64 {
        16 * 1024
    }
}

impl Cap for Medium {
    fn bytes(_: &AppState) -> u64 {
        256 * 1024
    }
}

impl Cap for Message {
    fn bytes(state: &AppState) -> u64 {
        state.config.limits.message_bytes
    }
}

/// A parsed JSON request body of at most `C` ([`Small`], [`Medium`] or [`Message`]) bytes, with
/// its share of the [`BodyBudget`](crate::core::limits::bodies::BodyBudget), held until the handler is done with it.
pub struct JsonBody<T, C: Cap>(
    pub T,
    PhantomData<C>,
    #[expect(dead_code, reason = "held for its drop")] Reserved,
);

#[rocket::async_trait]
impl<'r, T: DeserializeOwned, C: Cap> FromData<'r> for JsonBody<T, C> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        match read::<C>(req, data).await.and_then(|(bytes, reserved)| Ok((parse(&bytes)?, reserved))) {
            Ok((value, reserved)) => data::Outcome::Success(JsonBody(value, PhantomData, reserved)),
            Err(e) => data::Outcome::Error(stash(req, e)),
        }
    }
}

/// As [`JsonBody`], for routes whose body may be left out: an empty body or `null` is `None`;
/// anything else must be a valid body (a bad one is never taken for no body).
pub struct OptionalJsonBody<T, C: Cap>(
    pub Option<T>,
    PhantomData<C>,
    #[expect(dead_code, reason = "held for its drop")] Reserved,
);

#[rocket::async_trait]
impl<'r, T: DeserializeOwned, C: Cap> FromData<'r> for OptionalJsonBody<T, C> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        let parsed = read::<C>(req, data).await.and_then(|(bytes, reserved)| {
            let blank = bytes.iter().all(u8::is_ascii_whitespace);
            Ok((if blank { None } else { parse::<Option<T>>(&bytes)? }, reserved))
        });
        match parsed {
            Ok((value, reserved)) => data::Outcome::Success(OptionalJsonBody(value, PhantomData, reserved)),
            Err(e) => data::Outcome::Error(stash(req, e)),
        }
    }
}

/// A body of at most `C` bytes exactly as sent, for one whose signature covers its bytes
/// (Stripe's events); parsed by the route once the signature is checked.
pub struct RawBody<C: Cap>(
    pub Vec<u8>,
    PhantomData<C>,
    #[expect(dead_code, reason = "held for its drop")] Reserved,
);

#[rocket::async_trait]
impl<'r, C: Cap> FromData<'r> for RawBody<C> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        match read::<C>(req, data).await {
            Ok((bytes, reserved)) => data::Outcome::Success(RawBody(bytes, PhantomData, reserved)),
            Err(e) => data::Outcome::Error(stash(req, e)),
        }
    }
}

/// Reads a body of at most `C` bytes, once the [`BodyBudget`](crate::core::limits::bodies::BodyBudget) has room for it; 413 beyond.
async fn read<C: Cap>(req: &Request<'_>, data: Data<'_>) -> Result<(Vec<u8>, Reserved), ApiError> {
    let state = req.rocket().state::<AppState>().expect("AppState is always managed");
    let limit = C::bytes(state);
    // Without a declared length (a chunked body) the body may be as long as its cap.
    let declared = req.headers().get_one("Content-Length").and_then(|l| l.parse::<u64>().ok());
    let reserved = state.bodies.reserve(declared.unwrap_or(limit).min(limit)).await?;
    // One byte past the cap tells a body that is too long. Read straight into the vector:
    // Rocket's `into_bytes` copies through a zeroed 8 KiB buffer of tokio's for every body
    // (1.7 % of a tracked request's instructions). The vector starts at the declared length,
    // at most `INITIAL`, which the budget has already reserved; past it, it grows as it fills.
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(limit + 1).min(INITIAL) as usize);
    match data.open((limit + 1).bytes()).read_to_end(&mut bytes).await {
        Ok(_) if bytes.len() as u64 > limit => Err(ApiError::payload_too_large(limit)),
        Ok(_) => Ok((bytes, reserved)),
        Err(e) => Err(ApiError::bad_request(format!("Could not read the request body: {e}"))),
    }
}

/// The most a body's vector takes before any of it is read.
const INITIAL: u64 = 64 * 1024;

/// Parses a JSON document into `T`, with the error mapping described above.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("The request body is empty; send a JSON object"));
    }
    // Walked before anything is built, so no body takes more memory than its limits allow.
    if let Err(bounded_json::Error::Exceeded(exceeded)) = bounded_json::check(bytes, bounded_json::REQUEST) {
        return Err(ApiError::body_too_complex(exceeded));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if !inner.is_data() {
            return ApiError::bad_request(format!("The request body is not valid JSON: {inner}"));
        }
        ApiError::validation(vec![field_error(&path, &inner)])
    })?;
    de.end().map_err(|e| ApiError::bad_request(format!("The request body is not valid JSON: {e}")))?;
    Ok(value)
}

fn field_error(path: &str, error: &serde_json::Error) -> FieldError {
    let message = error.to_string();
    let message = message.split(" at line ").next().unwrap_or(&message).to_string();
    let parent = if path == "." { "" } else { path };
    let join = |name: &str| if parent.is_empty() { name.to_string() } else { format!("{parent}.{name}") };
    if let Some(name) = message.strip_prefix("missing field `").and_then(|m| m.split('`').next()) {
        return FieldError::new(join(name), "required", format!("{name} is required"));
    }
    if let Some(name) = message.strip_prefix("unknown field `").and_then(|m| m.split('`').next()) {
        // The path already ends at the unknown key.
        let field = if parent.is_empty() { name.to_string() } else { parent.to_string() };
        return FieldError::new(field, "unrecognized_key", message.clone());
    }
    let code = if message.starts_with("unknown variant") { "invalid_enum_value" } else { "invalid_type" };
    let field = if parent.is_empty() { "body".to_string() } else { parent.to_string() };
    FieldError::new(field, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[expect(dead_code, reason = "the fields exist to be deserialized")]
    struct Body {
        email: String,
        nested: Option<Nested>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "the fields exist to be deserialized")]
    struct Strict {
        a: u32,
    }

    #[derive(Debug, Deserialize)]
    #[expect(dead_code, reason = "the fields exist to be deserialized")]
    struct Nested {
        count: u32,
    }

    #[test]
    fn a_body_past_the_limits_of_what_it_may_hold_is_413() {
        let zeros = format!("{{\"data\":[{}]}}", vec!["0"; 60_000].join(","));
        let e = parse::<Body>(zeros.as_bytes()).unwrap_err();
        assert_eq!((e.status, e.code), (413, "PAYLOAD_TOO_LARGE"), "{}", e.message);
        let deep = format!("{{\"email\":\"a\",\"nested\":{}{}}}", "[".repeat(40), "]".repeat(40));
        let e = parse::<Body>(deep.as_bytes()).unwrap_err();
        assert_eq!(e.status, 413, "{}", e.message);
        assert!(e.message.contains("32 levels"), "{}", e.message);
    }

    #[test]
    fn syntax_errors_are_400() {
        for bad in [&b"{"[..], b"not json", b"", b"  ", b"{\"email\":\"a\"} trailing"] {
            let e = parse::<Body>(bad).unwrap_err();
            assert_eq!((e.status, e.code), (400, "BAD_REQUEST"), "{bad:?}");
        }
    }

    #[test]
    fn shape_errors_are_422_naming_the_field() {
        let e = parse::<Body>(br#"{"email": 5}"#).unwrap_err();
        assert_eq!(
            (e.status, e.errors[0].field.as_str(), e.errors[0].code.as_str()),
            (422, "email", "invalid_type")
        );
        let e = parse::<Body>(br#"{"email": "a", "nested": {"count": "x"}}"#).unwrap_err();
        assert_eq!(e.errors[0].field, "nested.count");
        let e = parse::<Body>(br#"{"nested": null}"#).unwrap_err();
        assert_eq!((e.errors[0].field.as_str(), e.errors[0].code.as_str()), ("email", "required"));
        let e = parse::<Strict>(br#"{"a": 1, "b": 2}"#).unwrap_err();
        assert_eq!((e.errors[0].field.as_str(), e.errors[0].code.as_str()), ("b", "unrecognized_key"));
        let e = parse::<Body>(br#""text""#).unwrap_err();
        assert_eq!(e.errors[0].field, "body");
    }
}
