//! Credentials other apps sign in to the submission listener with (issue 31): a username that
//! names the credential and a random password shown once, stored as its digest like an API key
//! ([`super::keys`]). A project's secret key also works as the password, with any username.
//! A credential may narrow the From domains it sends from, and say what its mail tracks.

use serde_json::Value;

use super::domains;
use super::error::{Error, FieldError, Result};
use super::ids::SmtpCredentialId;
use super::keys;
use crate::db::Tx;
use crate::db::keys::KeyKind;
use crate::db::projects::Project;
use crate::db::smtp_credentials::{self as rows, Credential};

/// Most credentials of one project.
pub const MAX_CREDENTIALS: u64 = 50;
/// Most domains one credential may be narrowed to.
const MAX_DOMAINS: usize = 50;
/// What a credential's mail may track by default.
pub const TRACKING: [&str; 2] = ["opens", "clicks"];
/// The start of every generated username and password.
const USER_PREFIX: &str = "smtp_";
const PASSWORD_PREFIX: &str = "sp_";

/// A credential's settings, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub name: String,
    pub allowed_from_domains: Option<Vec<String>>,
    pub track: Vec<String>,
}

impl Settings {
    /// Checks what a client sent: `name` (required), `allowedFromDomains` (an array of domains,
    /// or null for any verified domain) and `track` (`opens`, `clicks`).
    pub fn check(name: Option<&str>, allowed: Option<&Value>, track: Option<&Value>) -> Result<Settings> {
        let name = match name {
            Some(name) => super::workflows::check_name(name, "name")?,
            None => return Err(Error::invalid("name", "required", "name is required")),
        };
        let allowed_from_domains = match allowed {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) if items.len() <= MAX_DOMAINS => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let field = format!("allowedFromDomains[{i}]");
                    let Some(text) = item.as_str() else {
                        return Err(Error::invalid(&field, "invalid_type", "a domain is a string"));
                    };
                    let domain = domains::normalize(text).map_err(|e| match e {
                        Error::Invalid(errors) => Error::Invalid(
                            errors.into_iter().map(|f| FieldError { field: field.clone(), ..f }).collect(),
                        ),
                        other => other,
                    })?;
                    if !out.contains(&domain) {
                        out.push(domain);
                    }
                }
                Some(out)
            }
            Some(_) => {
                return Err(Error::invalid(
                    "allowedFromDomains",
                    "invalid_type",
                    format!("allowedFromDomains is an array of at most {MAX_DOMAINS} domains, or null"),
                ));
            }
        };
        let track = match track {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out: Vec<String> = Vec::new();
                for item in items {
                    match item.as_str().filter(|t| TRACKING.contains(t)) {
                        Some(t) if !out.iter().any(|o| o == t) => out.push(t.to_string()),
                        Some(_) => {}
                        None => {
                            return Err(Error::invalid(
                                "track",
                                "invalid_enum_value",
                                "track lists opens and clicks",
                            ));
                        }
                    }
                }
                out
            }
            Some(_) => {
                return Err(Error::invalid("track", "invalid_type", "track is an array: opens, clicks"));
            }
        };
        Ok(Settings { name, allowed_from_domains, track })
    }
}

/// Credential `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &SmtpCredentialId) -> Result<Credential> {
    rows::get(conn, project, id)?.ok_or_else(|| SmtpCredentialId::missing(id))
}

/// Makes a credential of `project` (at most [`MAX_CREDENTIALS`]); the credential and its
/// password, which is not kept.
pub fn create(tx: &Tx, project: &str, settings: Settings, now: i64) -> Result<(Credential, String)> {
    if rows::count(tx, project)? >= MAX_CREDENTIALS {
        return Err(Error::malformed(format!("a project has at most {MAX_CREDENTIALS} SMTP credentials")));
    }
    let password = format!("{PASSWORD_PREFIX}{}", keys::random_token());
    let credential = Credential {
        id: SmtpCredentialId::fresh().into(),
        project_id: project.to_string(),
        name: settings.name,
        username: format!("{USER_PREFIX}{}", keys::random_token()[..16].to_ascii_lowercase()),
        password_digest: keys::digest(&password),
        allowed_from_domains: settings.allowed_from_domains,
        track: settings.track,
        created_at: now,
        last_used_at: None,
    };
    rows::insert(tx, &credential)?;
    Ok((credential, password))
}

/// Deletes credential `id` of `project`: its next sign-in fails.
pub fn remove(tx: &Tx, project: &str, id: &SmtpCredentialId) -> Result<()> {
    let credential = find(tx, project, id)?;
    rows::delete(tx, project, &credential.id)?;
    Ok(())
}

/// Who signed in to the submission listener: a project, with the credential used (none when the
/// password was the project's secret key).
#[derive(Debug, Clone)]
pub struct Submitter {
    pub project: Project,
    pub credential: Option<Credential>,
}

/// The submitter `username` and `password` name, if they name one whose project may send.
pub fn sign_in(conn: &Tx, username: &str, password: &str, now: i64) -> Result<Option<Submitter>> {
    if password.starts_with(keys::SECRET_PREFIX) {
        let found = crate::db::keys::find(conn, &keys::digest(password))?;
        return Ok(found
            .filter(|(project, kind)| *kind == KeyKind::Secret && may_send(project))
            .map(|(project, _)| Submitter { project, credential: None }));
    }
    let Some(credential) = rows::by_username(conn, username)? else { return Ok(None) };
    if !keys::same(&credential.password_digest, &keys::digest(password)) {
        return Ok(None);
    }
    let Some(project) = crate::db::projects::get(conn, &credential.project_id)?.filter(may_send) else {
        return Ok(None);
    };
    rows::touch(conn, &credential.id, now)?;
    Ok(Some(Submitter { project, credential: Some(credential) }))
}

/// A disabled project, or one being reset or deleted, sends nothing.
fn may_send(project: &Project) -> bool {
    !project.disabled && project.wiping.is_none()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn settings_are_checked_field_by_field() {
        let s = Settings::check(
            Some(" Gitea "),
            Some(&json!(["Example.COM", "example.com"])),
            Some(&json!(["clicks"])),
        )
        .unwrap();
        assert_eq!(s.name, "Gitea");
        assert_eq!(s.allowed_from_domains, Some(vec!["example.com".to_string()]));
        assert_eq!(s.track, ["clicks"]);
        assert_eq!(Settings::check(Some("x"), None, None).unwrap().allowed_from_domains, None);
        for (name, allowed, track, field) in [
            (None, None, None, "name"),
            (Some(""), None, None, "name"),
            (Some("x"), Some(json!("example.com")), None, "allowedFromDomains"),
            (Some("x"), Some(json!(["ok.example", "not a domain"])), None, "allowedFromDomains[1]"),
            (Some("x"), None, Some(json!(["bounces"])), "track"),
        ] {
            let e = Settings::check(name, allowed.as_ref(), track.as_ref()).unwrap_err();
            assert_eq!(e.fields()[0].field, field, "{e}");
        }
    }
}
