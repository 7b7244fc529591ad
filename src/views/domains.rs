//! Sender domains and the DNS records that verify them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::core::domains::Purpose;

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
