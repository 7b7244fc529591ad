//! The rules a message's parts obey, shared by templates, `/v1/send` and campaigns.

use crate::core::vocabulary::EmailKind;
use serde_json::{Value, json};

use super::contacts::parse_email;
use super::render;
use crate::core::error::{Error, FieldError, Result};

/// Longest subject and header value (RFC 5322 line length).
pub const MAX_LINE: usize = 998;

/// The message types.
pub const TYPES: &[&str] =
    &[EmailKind::Transactional.as_str(), EmailKind::Marketing.as_str(), EmailKind::Headless.as_str()];

/// Headers a caller may not set: Tidings writes them.
const RESERVED_HEADERS: &[&str] = &[
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "reply-to",
    "mime-version",
    "content-type",
    "content-transfer-encoding",
    "dkim-signature",
    "list-unsubscribe",
    "list-unsubscribe-post",
    "return-path",
    "sender",
];

/// A new `Message-ID` for mail from `from`: unique, time-ordered, under the sender's domain.
pub fn message_id(from: &str) -> String {
    let domain = from.rsplit_once('@').map_or("", |(_, d)| d);
    format!("<{}@{domain}>", uuid::Uuid::now_v7().simple())
}

/// A subject: 1 to 998 characters, one line, and valid template syntax.
pub fn check_subject(subject: &str, field: &str) -> Result<()> {
    if subject.trim().is_empty() {
        return Err(Error::invalid(field, "too_small", format!("{field} must not be empty")));
    }
    if subject.chars().count() > MAX_LINE {
        return Err(Error::invalid(
            field,
            "too_big",
            format!("{field} must be at most {MAX_LINE} characters"),
        ));
    }
    if subject.contains(['\r', '\n']) {
        return Err(Error::invalid(
            field,
            "invalid_string",
            format!("{field} must be a single line (no CR or LF)"),
        ));
    }
    render::check(subject, render::Mode::Text, field)
}

/// A body: at least one character and valid template syntax.
pub fn check_body(body: &str, field: &str) -> Result<()> {
    if body.is_empty() {
        return Err(Error::invalid(field, "too_small", format!("{field} must not be empty")));
    }
    render::check(body, render::Mode::Html, field)
}

/// A message type, or the default.
pub fn check_type(kind: Option<&str>, field: &str, default: &str) -> Result<String> {
    match kind {
        None => Ok(default.to_string()),
        Some(kind) if TYPES.contains(&kind) => Ok(kind.to_string()),
        Some(kind) => Err(Error::Invalid(vec![
            FieldError::new(
                field,
                "invalid_enum_value",
                format!("{field} must be TRANSACTIONAL, MARKETING or HEADLESS"),
            )
            .received(json!(kind)),
        ])),
    }
}

/// A display name: one line, at most 998 characters.
pub fn check_name(name: &str, field: &str) -> Result<String> {
    if name.contains(['\r', '\n']) || name.chars().count() > MAX_LINE {
        return Err(Error::invalid(
            field,
            "invalid_string",
            format!("{field} must be one line of at most {MAX_LINE} characters"),
        ));
    }
    Ok(name.trim().to_string())
}

/// An address with an optional display name, from a string or `{name, email}`.
pub fn mailbox(value: &Value, field: &str) -> Result<(String, Option<String>)> {
    match value {
        Value::String(address) => Ok((parse_email(address, field)?, None)),
        Value::Object(object) => {
            let email = object.get("email").and_then(Value::as_str).ok_or_else(|| {
                Error::invalid(&format!("{field}.email"), "required", format!("{field}.email is required"))
            })?;
            let email = parse_email(email, &format!("{field}.email"))?;
            let name = match object.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(name)) => {
                    Some(check_name(name, &format!("{field}.name"))?).filter(|n| !n.is_empty())
                }
                Some(_) => {
                    return Err(Error::invalid(
                        &format!("{field}.name"),
                        "invalid_type",
                        format!("{field}.name must be a string"),
                    ));
                }
            };
            Ok((email, name))
        }
        _ => Err(Error::invalid(
            field,
            "invalid_type",
            format!("{field} must be an email address or {{name, email}}"),
        )),
    }
}

/// Custom headers: names of printable ASCII without `:` (and not one Tidings writes), values
/// of at most 998 characters; no CR or LF anywhere (header injection).
pub fn check_headers(headers: &Value, field: &str) -> Result<Vec<(String, String)>> {
    let Value::Object(map) = headers else {
        return Err(Error::invalid(field, "invalid_type", format!("{field} must be an object of strings")));
    };
    let mut out = Vec::with_capacity(map.len());
    for (name, value) in map {
        let path = format!("{field}.{name}");
        let name_ok = !name.is_empty()
            && name.len() <= 100
            && name.bytes().all(|b| (33..=126).contains(&b) && b != b':');
        if !name_ok {
            return Err(Error::invalid(
                &path,
                "invalid_header",
                "header names must be printable ASCII without spaces, colons, CR or LF",
            ));
        }
        if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(Error::invalid(
                &path,
                "reserved_header",
                format!("{name} is set by Tidings and cannot be given"),
            ));
        }
        let Value::String(value) = value else {
            return Err(Error::invalid(&path, "invalid_type", "header values must be strings"));
        };
        if value.contains(['\r', '\n']) {
            return Err(Error::invalid(&path, "invalid_header", "header values must not contain CR or LF"));
        }
        if value.chars().count() > MAX_LINE {
            return Err(Error::invalid(
                &path,
                "too_big",
                format!("header values must be at most {MAX_LINE} characters"),
            ));
        }
        out.push((name.clone(), value.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects() {
        assert!(check_subject("Hello {{ name }}", "subject").is_ok());
        assert!(check_subject("", "subject").is_err());
        assert!(check_subject("a\r\nBcc: x@y.z", "subject").is_err());
        assert!(check_subject(&"x".repeat(999), "subject").is_err());
        assert!(check_subject(&"x".repeat(998), "subject").is_ok());
        assert_eq!(check_subject("{% if %}", "subject").unwrap_err().fields()[0].code, "invalid_template");
    }

    #[test]
    fn headers_refuse_injection_and_reserved_names() {
        assert_eq!(
            check_headers(&json!({ "X-Tag": "a" }), "headers").unwrap(),
            [("X-Tag".to_string(), "a".to_string())]
        );
        for bad in [
            json!({ "X-Tag": "a\r\nBcc: evil@example.com" }),
            json!({ "X-Bad\r\nName": "a" }),
            json!({ "Bad Name": "a" }),
            json!({ "From": "x@y.z" }),
            json!({ "X-Long": "x".repeat(999) }),
            json!({ "X-Num": 5 }),
            json!(["X"]),
        ] {
            assert_eq!(check_headers(&bad, "headers").unwrap_err().kind(), "invalid", "{bad}");
        }
    }

    #[test]
    fn mailboxes() {
        assert_eq!(mailbox(&json!("A@B.co"), "to").unwrap(), ("a@b.co".into(), None));
        assert_eq!(
            mailbox(&json!({ "name": "Ada", "email": "a@b.co" }), "to").unwrap(),
            ("a@b.co".into(), Some("Ada".into()))
        );
        assert_eq!(mailbox(&json!({ "name": "x" }), "to").unwrap_err().fields()[0].field, "to.email");
        assert!(mailbox(&json!({ "name": "a\nb", "email": "a@b.co" }), "to").is_err());
        assert!(mailbox(&json!(5), "to").is_err());
    }
}
