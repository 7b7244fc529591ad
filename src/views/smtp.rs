//! SMTP submission: the credentials other apps sign in with.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::smtp_credentials::Credential as Row;

/// A credential for the submission listener (`AUTH PLAIN` or `LOGIN` after STARTTLS).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SmtpCredential {
    pub id: String,
    pub name: String,
    /// The username to sign in with.
    pub username: String,
    /// The domains the From address may be on (their subdomains too); absent: any verified
    /// domain of the project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_from_domains: Option<Vec<String>>,
    /// What mail sent with it tracks unless a message says otherwise (`X-Tidings-Track`):
    /// `opens`, `clicks`.
    pub track: Vec<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_used_at: Option<String>,
    /// Only when the credential is made: its password, shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
}

impl From<&Row> for SmtpCredential {
    fn from(c: &Row) -> Self {
        SmtpCredential {
            id: c.id.clone(),
            name: c.name.clone(),
            username: c.username.clone(),
            allowed_from_domains: c.allowed_from_domains.clone(),
            track: c.track.clone(),
            created_at: iso(c.created_at),
            last_used_at: c.last_used_at.map(iso),
            password: None,
        }
    }
}

/// The body of `POST /smtp-credentials`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Gitea", "allowedFromDomains": ["example.com"], "track": ["opens"] }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewSmtpCredential {
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// Domains the From address may be on; null or absent for any verified domain.
    #[schema(value_type = Option<Vec<String>>)]
    pub allowed_from_domains: Option<Value>,
    /// `opens`, `clicks`: tracked by default in mail sent with this credential.
    #[schema(value_type = Option<Vec<String>>)]
    pub track: Option<Value>,
}
