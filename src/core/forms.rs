//! Signup forms (issue 32, item 4): what a form asks (email and typed custom fields), which
//! topics it offers, whether its subscribers confirm by mail, what follows a submission, and
//! which other sites' pages may post to it. Submissions are `core::form_submissions`.

use super::error::{Error, FieldError, Result};
use super::ids::FormId;
use super::workflows::{check_name, check_text};
use crate::db::Tx;
use crate::db::forms::{self as rows, Form, FormField};

/// Most forms a project may have.
pub const MAX_FORMS: u64 = 50;
/// Most custom fields a form may ask for.
pub const MAX_FIELDS: usize = 20;
/// Most origins a form may allow.
pub const MAX_ORIGINS: usize = 20;
/// Longest consent text and success message, in characters.
pub const MAX_LONG_TEXT: usize = 2_000;
/// The types a field may have.
pub const FIELD_TYPES: [&str; 4] = ["string", "number", "boolean", "date"];

/// A form's settings as a request gives them; `None` keeps a value (or takes the default).
#[derive(Debug, Default, Clone)]
pub struct Settings {
    pub name: Option<String>,
    pub fields: Option<Vec<FormField>>,
    pub topics: Option<Vec<String>>,
    /// `Some(None)`: the project's setting.
    pub double_opt_in: Option<Option<bool>>,
    /// Empty clears these.
    pub consent_text: Option<String>,
    pub success_message: Option<String>,
    pub redirect_url: Option<String>,
    pub allowed_origins: Option<Vec<String>>,
}

/// Form `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &str) -> Result<Form> {
    rows::get(conn, Some(project), id)?.ok_or_else(|| FormId::missing(id))
}

/// Adds a form to `project` (at most [`MAX_FORMS`]).
pub fn create(tx: &Tx, project: &str, settings: Settings, now: i64) -> Result<Form> {
    if settings.name.is_none() {
        return Err(Error::invalid("name", "required", "name is required"));
    }
    if rows::count(tx, project)? >= MAX_FORMS {
        return Err(Error::malformed(format!("a project has at most {MAX_FORMS} forms")));
    }
    let form =
        Form { id: FormId::fresh().into(), project_id: project.into(), created_at: now, ..Form::default() };
    save(tx, form, settings, now)
}

/// Changes form `id` of `project`.
pub fn update(tx: &Tx, project: &str, id: &str, settings: Settings, now: i64) -> Result<Form> {
    let form = find(tx, project, id)?;
    save(tx, form, settings, now)
}

/// Deletes form `id` of `project`; the contacts it made stay, and their consent record names it.
pub fn remove(tx: &Tx, project: &str, id: &str) -> Result<()> {
    let form = find(tx, project, id)?;
    rows::delete(tx, &form.id)?;
    Ok(())
}

fn save(tx: &Tx, mut form: Form, s: Settings, now: i64) -> Result<Form> {
    let mut errors = Vec::new();
    let mut check = |result: Result<()>| {
        if let Err(Error::Invalid(items)) = result {
            errors.extend(items);
            Ok(())
        } else {
            result
        }
    };
    if let Some(name) = s.name.as_deref() {
        check(check_name(name, "name").map(|n| form.name = n))?;
    }
    if let Some(fields) = s.fields {
        check(check_fields(&fields).map(|()| form.fields = fields))?;
    }
    if let Some(topics) = s.topics {
        check(check_topics(tx, &form.project_id, &topics).map(|t| form.topics = t))?;
    }
    if let Some(double) = s.double_opt_in {
        form.double_opt_in = double;
    }
    if let Some(text) = s.consent_text {
        check(long_text(text, "consentText").map(|t| form.consent_text = t))?;
    }
    if let Some(text) = s.success_message {
        check(long_text(text, "successMessage").map(|t| form.success_message = t))?;
    }
    if let Some(url) = s.redirect_url {
        check(check_text(Some(url), "redirectUrl").and_then(|u| {
            form.redirect_url = u.map(|u| web_address(&u, "redirectUrl", true)).transpose()?;
            Ok(())
        }))?;
    }
    if let Some(origins) = s.allowed_origins {
        check(check_origins(origins).map(|o| form.allowed_origins = o))?;
    }
    if !errors.is_empty() {
        return Err(Error::Invalid(errors));
    }
    form.updated_at = now;
    rows::save(tx, &form)?;
    Ok(form)
}

fn long_text(text: String, field: &str) -> Result<Option<String>> {
    let text = text.trim().to_string();
    if text.chars().count() > MAX_LONG_TEXT {
        return Err(Error::invalid(
            field,
            "too_big",
            format!("{field} is at most {MAX_LONG_TEXT} characters"),
        ));
    }
    Ok(Some(text).filter(|t| !t.is_empty()))
}

fn check_fields(fields: &[FormField]) -> Result<()> {
    if fields.len() > MAX_FIELDS {
        return Err(Error::invalid(
            "fields",
            "too_big",
            format!("a form asks for at most {MAX_FIELDS} fields"),
        ));
    }
    let mut errors = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = |what: &str| format!("fields[{i}].{what}");
        let key_ok = field.key.starts_with(|c: char| c.is_ascii_alphabetic())
            && field.key.len() <= 64
            && field.key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && field.key != "email"
            && !super::data::is_reserved(&field.key);
        if !key_ok {
            errors.push(FieldError::new(
                at("key"),
                "invalid_string",
                "a field's key is 1 to 64 letters, digits or _ starting with a letter, and not email nor a reserved key",
            ));
        } else if fields[..i].iter().any(|f| f.key == field.key) {
            errors.push(FieldError::new(at("key"), "duplicate", "each field's key appears once"));
        }
        if field.label.trim().is_empty() || field.label.chars().count() > 200 {
            errors.push(FieldError::new(at("label"), "invalid_string", "a label is 1 to 200 characters"));
        }
        if !FIELD_TYPES.contains(&field.kind.as_str()) {
            errors.push(FieldError::new(
                at("type"),
                "invalid_enum_value",
                "type is string, number, boolean or date",
            ));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::Invalid(errors)) }
}

fn check_topics(tx: &Tx, project: &str, topics: &[String]) -> Result<Vec<String>> {
    if topics.len() as u64 > super::topics::MAX_TOPICS {
        return Err(Error::invalid("topics", "too_big", "a form offers at most 50 topics"));
    }
    let known = crate::db::topics::list(tx, project)?;
    let mut out: Vec<String> = Vec::new();
    for (i, id) in topics.iter().enumerate() {
        if !known.iter().any(|t| t.id == *id) {
            return Err(Error::invalid(
                &format!("topics[{i}]"),
                "not_found",
                "no topic with this id in the project",
            ));
        }
        if !out.contains(id) {
            out.push(id.clone());
        }
    }
    Ok(out)
}

fn check_origins(origins: Vec<String>) -> Result<Vec<String>> {
    if origins.len() > MAX_ORIGINS {
        return Err(Error::invalid("allowedOrigins", "too_big", format!("at most {MAX_ORIGINS} origins")));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, origin) in origins.iter().enumerate() {
        let origin =
            web_address(origin.trim().trim_end_matches('/'), &format!("allowedOrigins[{i}]"), false)?;
        if !out.contains(&origin) {
            out.push(origin);
        }
    }
    Ok(out)
}

/// An http(s) address: with a path when `path` (a redirect), else an origin
/// (`scheme://host[:port]`, lower-cased, as browsers send it in `Origin`).
fn web_address(text: &str, field: &str, path: bool) -> Result<String> {
    let bad = || {
        let what = if path { "an http or https URL" } else { "an origin like https://example.com" };
        Error::invalid(field, "invalid_url", format!("{field} must be {what}"))
    };
    let parsed: http::Uri = text.parse().map_err(|_| bad())?;
    let scheme = parsed.scheme_str().unwrap_or_default().to_ascii_lowercase();
    let authority = parsed.authority().map(|a| a.as_str().to_ascii_lowercase()).unwrap_or_default();
    if !(scheme == "https" || scheme == "http")
        || authority.is_empty()
        || authority.contains('@')
        || text.len() > 2_000
    {
        return Err(bad());
    }
    if path {
        return Ok(text.to_string());
    }
    if !(parsed.path().is_empty() || parsed.path() == "/") || parsed.query().is_some() {
        return Err(bad());
    }
    Ok(format!("{scheme}://{authority}"))
}

#[cfg(test)]
mod tests {
    use super::web_address;

    #[test]
    fn origins_are_scheme_and_host_only() {
        assert_eq!(web_address("https://Shop.Example.com", "o", false).unwrap(), "https://shop.example.com");
        assert_eq!(web_address("http://localhost:8080", "o", false).unwrap(), "http://localhost:8080");
        for bad in [
            "https://a.example/path",
            "ftp://a.example",
            "a.example",
            "https://u@a.example",
            "javascript:alert(1)",
        ] {
            assert!(web_address(bad, "o", false).is_err(), "{bad}");
        }
        assert!(web_address("https://a.example/thanks?x=1", "r", true).is_ok());
        assert!(web_address("javascript:alert(1)", "r", true).is_err());
    }
}
