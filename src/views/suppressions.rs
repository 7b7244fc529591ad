//! The project's suppression list (issue 32, item 5) as the API shows it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::suppression_list::Entry;

/// An address, or a domain with its subdomains, the project's mail does not go to.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuppressionEntry {
    pub id: String,
    /// `address`, `domain`, or `erased` (an erased contact's address, as a digest).
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
    /// `bounce` or `complaint` (MARKETING mail stays away), `manual` or `import` (all mail does).
    pub source: String,
    pub reason: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<&Entry> for SuppressionEntry {
    fn from(e: &Entry) -> Self {
        SuppressionEntry {
            id: e.id.clone(),
            kind: e.kind.clone(),
            value: e.value.clone(),
            source: e.source.clone(),
            reason: e.reason.clone(),
            created_at: iso(e.created_at),
        }
    }
}

/// `POST /suppressions`: an address or a domain.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "email": "someone@example.com", "reason": "Asked by phone not to be mailed" }))]
#[serde(deny_unknown_fields)]
pub struct NewSuppression {
    #[schema(format = Email)]
    pub email: Option<String>,
    /// A domain like `example.com`: its subdomains too.
    pub domain: Option<String>,
    /// At most 500 characters.
    pub reason: Option<String>,
}

/// A row an import skipped.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkippedRow {
    /// 1 is the first row after the header.
    pub row: usize,
    pub message: String,
}

/// What `POST /suppressions/import` did.
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportedSuppressions {
    pub added: usize,
    /// Listed before.
    pub already: usize,
    pub skipped: usize,
    /// The first 100 skipped rows, and why.
    pub errors: Vec<SkippedRow>,
}
