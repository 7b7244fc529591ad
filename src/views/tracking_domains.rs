//! `/tracking-domain`: a project's own host for tracked links and the open pixel.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::tracking_domains::records;
use crate::db::tracking_domains::TrackingDomain;

/// A DNS record to publish.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrackingRecord {
    /// `CNAME` or `TXT`.
    #[serde(rename = "type")]
    pub kind: String,
    pub name: String,
    pub value: String,
}

/// The project's tracking domain and how to prove it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrackingDomainView {
    #[schema(example = "track.example.com")]
    pub domain: String,
    /// Mail's tracked links and open pixel use `https://<domain>` once this is true.
    pub verified: bool,
    #[schema(format = DateTime)]
    pub verified_at: Option<String>,
    #[schema(format = DateTime)]
    pub checked_at: Option<String>,
    /// What the last check did not find.
    pub last_error: Option<String>,
    /// What to publish: a CNAME to this server's host (an A or AAAA record when the server is
    /// known by its address), and a TXT record with the project's token.
    pub records: Vec<TrackingRecord>,
}

impl TrackingDomainView {
    pub fn of(d: &TrackingDomain, host: &str) -> Self {
        TrackingDomainView {
            domain: d.domain.clone(),
            verified: d.verified_at.is_some(),
            verified_at: d.verified_at.map(iso),
            checked_at: d.checked_at.map(iso),
            last_error: d.last_error.clone(),
            records: records(d, host)
                .into_iter()
                .map(|(kind, name, value)| TrackingRecord { kind: kind.into(), name, value })
                .collect(),
        }
    }
}

/// `PUT /tracking-domain`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrackingDomainBody {
    #[schema(example = "track.example.com")]
    pub domain: String,
}
