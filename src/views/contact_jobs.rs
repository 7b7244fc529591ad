//! CSV imports and bulk contact operations: jobs queued by a request and polled by id.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::import::Preview;
use crate::db::contact_jobs::ContactJob as Row;

/// A job's progress and outcome (with `id`, `state`, `progress`, `result` and `failedReason`,
/// the fields Plunk's pollers read).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactJob {
    pub job_id: String,
    /// `jobId`, as Plunk's clients read it.
    pub id: String,
    /// `status` as Plunk names it: `waiting`, `active`, `completed` or `failed`.
    pub state: &'static str,
    /// Percent done, 0 to 100.
    pub progress: i64,
    /// Once completed: the counts (`total`, `processed`, `imported`, `updated`, `skipped`,
    /// `errorCount`); else `null`.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Why a failed job failed (as `failure`).
    pub failed_reason: Option<String>,
    /// `queued`, `processing`, `completed` or `failed`.
    pub status: String,
    /// `import`, `subscribe`, `unsubscribe`, `delete` or `delete_field`.
    pub operation: String,
    pub processed: i64,
    /// New contacts (imports).
    pub imported: i64,
    /// Existing contacts changed.
    pub updated: i64,
    pub skipped: i64,
    /// Rows or ids that were not applied: `{row, email, reason}` for an import (`reason` such
    /// as `invalid_email`), `{contactId, reason}` for a bulk job; the first 1,000.
    #[schema(value_type = Vec<Object>)]
    pub errors: Value,
    pub error_count: i64,
    /// Rows in the file (imports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_rows: Option<i64>,
    /// Contacts named (bulk jobs) or in the project (field removal).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i64>,
    /// Why a failed job failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
}

impl From<&Row> for ContactJob {
    fn from(job: &Row) -> Self {
        let import = job.operation == "import";
        let state = match job.status.as_str() {
            "queued" => "waiting",
            "processing" => "active",
            "completed" => "completed",
            _ => "failed",
        };
        let progress = match (state, job.total) {
            ("completed", _) => 100,
            (_, total) if total > 0 => (job.processed.saturating_mul(100) / total).clamp(0, 99),
            _ => 0,
        };
        ContactJob {
            job_id: job.id.clone(),
            id: job.id.clone(),
            state,
            progress,
            result: (state == "completed").then(|| {
                json!({ "total": job.total, "processed": job.processed, "imported": job.imported,
                    "updated": job.updated, "skipped": job.skipped, "errorCount": job.error_count })
            }),
            failed_reason: job.failure.clone(),
            status: job.status.clone(),
            operation: job.operation.clone(),
            processed: job.processed,
            imported: job.imported,
            updated: job.updated,
            skipped: job.skipped,
            errors: serde_json::from_str(&job.errors).unwrap_or_else(|_| Value::Array(Vec::new())),
            error_count: job.error_count,
            total_rows: import.then_some(job.total),
            total: (!import).then_some(job.total),
            failure: job.failure.clone(),
            created_at: iso(job.created_at),
            finished_at: job.finished_at.map(iso),
        }
    }
}

/// A job queued: poll it by `jobId`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Queued {
    pub job_id: String,
    /// `queued`.
    pub status: String,
}

/// The contacts to subscribe, unsubscribe or delete: up to 1,000 by id (`contactIds`, with
/// `mode` left out or `ids`), or every contact a list's filters match (`mode: "query"`, Plunk's
/// form) but those in `excludeIds`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "mode": "query", "filter": { "search": "@example.com", "subscribed": true }, "excludeIds": [] }))]
#[serde(rename_all = "camelCase")]
pub struct BulkRequest {
    /// `ids` (the default) or `query`.
    #[schema(value_type = Option<BulkMode>)]
    pub mode: Option<String>,
    /// With `ids`: 1 to 1,000 contact ids.
    #[schema(value_type = Option<Vec<String>>, min_items = 1, max_items = 1000)]
    pub contact_ids: Option<Vec<String>>,
    /// With `query`: the contacts list's filters; none matches every contact.
    pub filter: Option<BulkFilter>,
    /// With `query`: contacts left out, at most 5,000.
    #[schema(max_items = 5000)]
    pub exclude_ids: Option<Vec<String>>,
}

/// How a bulk request names its contacts.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum BulkMode {
    #[schema(rename = "ids")]
    Ids,
    #[schema(rename = "query")]
    Query,
}

/// The filters of `GET /contacts` a query-mode bulk job applies (all but the page and order).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkFilter {
    /// Part of the email, any case (at most 255 characters).
    #[schema(max_length = 255)]
    pub search: Option<String>,
    pub subscribed: Option<bool>,
    /// Part of the email or of any custom field's value, any case (at most 255 characters).
    #[schema(max_length = 255)]
    pub q: Option<String>,
    /// Only the segment's members (a dynamic segment's as its condition holds when each batch runs).
    #[serde(rename = "segmentId")]
    pub segment_id: Option<String>,
    /// Only the contacts subscribed to this topic.
    #[serde(rename = "topicId")]
    pub topic_id: Option<String>,
}

/// A CSV file, as the multipart part `file`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct CsvUpload {
    /// UTF-8 CSV with a header row; the column `email` is required, the others become
    /// `data.<column>`.
    #[schema(value_type = String, format = Binary, content_media_type = "text/csv")]
    file: Vec<u8>,
    /// Imports only: `subscribe` (the default: new contacts subscribed, existing ones as they
    /// are), `unsubscribe` (every row's contact), `from_column` (the `subscribed` column, yes or
    /// no, row by row) or `keep` (existing contacts as they are, new ones not subscribed).
    subscription: Option<String>,
    /// Imports only: topic ids every row's contact joins (a JSON array, or separated by commas).
    topics: Option<String>,
    /// Imports only: a JSON object from column names to `{skip, rename, type}` (`type`:
    /// string, number, boolean or date; a cell that is not one skips its row).
    mapping: Option<String>,
}

/// A column of a previewed CSV.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewColumn {
    pub name: String,
    /// `email`, `data.<name>`, `subscribed` (with `from_column`), or `null` when the column is
    /// dropped.
    pub becomes: Option<String>,
}

/// What importing a CSV would do, without importing it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportPreview {
    pub total_rows: u64,
    pub columns: Vec<PreviewColumn>,
    /// The first rows, each cell as the import types it (`null` when empty or dropped).
    pub rows: Vec<Vec<Value>>,
}

impl From<Preview> for ImportPreview {
    fn from(p: Preview) -> Self {
        let columns = p.columns.into_iter().map(|(name, becomes)| PreviewColumn { name, becomes }).collect();
        ImportPreview { total_rows: p.total_rows, columns, rows: p.rows }
    }
}
