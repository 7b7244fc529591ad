//! Sender domains and the DNS records that verify them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::domains::{Purpose, RecordCheck, records};
use crate::db::domains::Domain as Row;

/// A DNS record the domain's owner publishes.
#[derive(Debug, Serialize, ToSchema)]
pub struct DnsRecord {
    /// `TXT`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub value: String,
    /// `verification`, `dkim` or `spf`.
    #[schema(value_type = String)]
    pub purpose: Purpose,
    /// Whether verification needs it (SPF is advised, not required).
    pub required: bool,
    /// Whether the last check found it (absent before the first check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<bool>,
    /// Set when DNS gave no answer (`timeout`, `servfail`, ...): the record may still be there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A domain the project sends from.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub id: String,
    pub domain: String,
    pub project_id: String,
    /// `pending` (a required record is missing) or `verified`; rechecked periodically.
    pub status: String,
    pub records: Vec<DnsRecord>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub verified_at: Option<String>,
    #[schema(format = DateTime)]
    pub last_checked_at: Option<String>,
}

/// `POST /domains`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "domain": "acme.test" }))]
pub struct NewDomain {
    /// A domain name such as `mail.example.com`.
    #[schema(required, value_type = String)]
    pub domain: Option<String>,
}

/// The domain as the API shows it; records carry `found` (and `error`) once checked.
impl From<&Row> for Domain {
    fn from(domain: &Row) -> Self {
        let checks: Vec<RecordCheck> =
            domain.checks.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
        let records = records(domain)
            .into_iter()
            .map(|spec| {
                let check = checks.iter().find(|c| c.purpose == spec.purpose);
                DnsRecord {
                    kind: "TXT".into(),
                    name: spec.name,
                    value: spec.value,
                    purpose: spec.purpose,
                    required: spec.required,
                    found: check.map(|c| c.found),
                    error: check.and_then(|c| c.error.clone()),
                }
            })
            .collect();
        Domain {
            id: domain.id.clone(),
            domain: domain.domain.clone(),
            project_id: domain.project_id.clone(),
            status: domain.status.clone(),
            records,
            created_at: iso(domain.created_at),
            verified_at: domain.verified_at.map(iso),
            last_checked_at: domain.last_checked_at.map(iso),
        }
    }
}

/// `GET /domains/sandbox`: the project's sandbox sender domain.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({ "domain": "0a1b2c3d4e5f.sandbox.invalid", "verified": true,
    "reason": "This server captures mail (no relay is configured): mail from this domain is kept in the Outbox and never leaves the machine." }))]
pub struct Sandbox {
    /// Any address at it may send while `verified`.
    pub domain: String,
    /// True while the server captures mail; false once a relay is configured.
    pub verified: bool,
    /// Why it is or is not verified, in a sentence.
    pub reason: String,
}
