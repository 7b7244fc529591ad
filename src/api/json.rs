//! `JsonBody<T>`: a JSON request body whose failures answer in the error envelope.
//!
//! Too large gives 413, malformed JSON (or not UTF-8, or empty) gives 400, and JSON of the wrong
//! shape gives 422 with an item naming the field (`serde_path_to_error` supplies the path).

use rocket::data::{self, Data, FromData, ToByteUnit};
use rocket::request::Request;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldError, stash};

/// A parsed JSON request body.
pub struct JsonBody<T>(pub T);

#[rocket::async_trait]
impl<'r, T: DeserializeOwned> FromData<'r> for JsonBody<T> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        let limit = req.limits().get("json").unwrap_or_else(|| 1.mebibytes());
        let result = match data.open(limit).into_bytes().await {
            Ok(bytes) if !bytes.is_complete() => Err(ApiError::payload_too_large(limit.as_u64())),
            Ok(bytes) => parse(&bytes.into_inner()),
            Err(e) => Err(ApiError::bad_request(format!("Could not read the request body: {e}"))),
        };
        match result {
            Ok(value) => data::Outcome::Success(JsonBody(value)),
            Err(e) => data::Outcome::Error(stash(req, e)),
        }
    }
}

/// Parses a JSON document into `T`, with the error mapping described above.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("The request body is empty; send a JSON object"));
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
