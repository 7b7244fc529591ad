//! CSV imports and bulk contact operations: jobs queued by a request and polled by id.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::contact_jobs::ContactJob as Row;

/// A job's progress and outcome.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactJob {
    pub job_id: String,
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
        ContactJob {
            job_id: job.id.clone(),
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

/// Up to 1,000 contacts to subscribe, unsubscribe or delete.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BulkRequest {
    #[schema(required, value_type = Vec<String>, min_items = 1, max_items = 1000)]
    pub contact_ids: Option<Vec<String>>,
}

/// A CSV file, as the multipart part `file`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct CsvUpload {
    /// UTF-8 CSV with a header row; the column `email` is required, the others become
    /// `data.<column>`.
    #[schema(value_type = String, format = Binary, content_media_type = "text/csv")]
    file: Vec<u8>,
}

/// A column of a previewed CSV.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewColumn {
    pub name: String,
    /// `email`, `data.<name>`, or `null` when the column is dropped.
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
