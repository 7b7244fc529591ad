//! The contact-field catalogue (`/contacts/fields`).

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A field contacts have: a standard one (`email`, `subscribed`, `createdAt`, `updatedAt`) or
/// a custom one (`data.<key>`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    pub field: String,
    /// `string`, `number`, `boolean` or `date`, fixed when the field is first seen.
    #[serde(rename = "type")]
    pub kind: String,
    pub is_custom: bool,
    /// The share of contacts that have it, 0 to 1.
    pub coverage: f64,
}

impl From<crate::core::fields::Known> for Field {
    fn from(k: crate::core::fields::Known) -> Self {
        Field { field: k.field, kind: k.kind, is_custom: k.is_custom, coverage: k.coverage }
    }
}

/// `GET /contacts/fields`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldList {
    pub fields: Vec<Field>,
}

/// A value of a field, with how many contacts have it.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldValue {
    /// As stored: a string, number, boolean, object or array.
    pub value: Value,
    pub count: i64,
}

/// `GET /contacts/fields/{field}/values`: distinct values in order, a page at a time.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldValues {
    pub field: String,
    pub data: Vec<FieldValue>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub cursor: Option<String>,
    pub has_more: bool,
}

/// A contact job queued for a request (`status` is `queued`); poll `GET /contacts/bulk/{jobId}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldDeletion {
    pub job_id: String,
    pub status: String,
    pub field: String,
}
