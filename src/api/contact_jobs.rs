//! CSV import and bulk contact operations: queued as jobs, polled by id.

use rocket::form::{Errors, Form};
use rocket::fs::TempFile;
use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::tokio::io::AsyncReadExt;
use rocket::{FromForm, State, get, post};

use serde_json::json;

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Medium};
use crate::clock;
use crate::core::contact_filters::Narrowing;
use crate::core::ids::ContactJobId;
use crate::core::import_options::Options as ImportOptions;
use crate::core::{bulk, import};
use crate::db::contact_jobs::ContactJob;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::contact_jobs::{BulkRequest, ContactJob as JobView, CsvUpload, ImportPreview, Queued};

documented_routes!(
    upload,
    preview,
    import_status,
    bulk_subscribe,
    bulk_unsubscribe,
    bulk_delete,
    bulk_status
);

/// Stores the job and its scheduler row in one transaction, then wakes the scheduler.
async fn queue(
    state: &AppState,
    project: String,
    operation: &'static str,
    input: Vec<u8>,
    total: i64,
) -> Result<ContactJob, ApiError> {
    let job = state
        .db
        .write(move |tx| crate::core::bulk::start(tx, &project, operation, &input, total, clock::now_ms()))
        .await?;
    Ok(job)
}

/// A multipart form whose part `file` is the upload (CSV imports, images); an image may also
/// come as the part `image`, as Plunk's clients send it.
#[derive(FromForm)]
pub(super) struct Upload<'r> {
    file: Option<TempFile<'r>>,
    image: Option<TempFile<'r>>,
    /// An import's choices (`core::import_options`).
    subscription: Option<String>,
    topics: Option<String>,
    mapping: Option<String>,
}

/// Which parts of an [`Upload`] a route reads.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Part {
    File,
    FileOrImage,
}

/// The uploaded file's bytes, within `limit`; `what` names it in errors ("the CSV").
pub(super) async fn read_upload(
    form: Result<Form<Upload<'_>>, Errors<'_>>,
    limit: u64,
    what: &str,
    part: Part,
) -> Result<Vec<u8>, ApiError> {
    let form = form.map_err(|errors| form_error(&errors, limit, what))?.into_inner();
    read_parts(form, limit, what, part).await
}

/// An import's file and its choices (the parts `subscription`, `topics`, `mapping`).
async fn read_import(
    form: Result<Form<Upload<'_>>, Errors<'_>>,
    limit: u64,
) -> Result<(Vec<u8>, Option<ImportOptions>), ApiError> {
    let form = form.map_err(|errors| form_error(&errors, limit, "the CSV"))?.into_inner();
    let options =
        ImportOptions::parse(form.subscription.as_deref(), form.topics.as_deref(), form.mapping.as_deref())?;
    Ok((read_parts(form, limit, "the CSV", Part::File).await?, options))
}

async fn read_parts(form: Upload<'_>, limit: u64, what: &str, part: Part) -> Result<Vec<u8>, ApiError> {
    let image = form.image.filter(|_| part == Part::FileOrImage);
    let file = match (form.file, image) {
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid_field(
                "image",
                "conflict",
                format!("send {what} as one part, `file` or `image`"),
            ));
        }
        (file, image) => file.or(image),
    };
    let Some(file) = file else {
        return Err(ApiError::validation(vec![FieldError::new(
            "file",
            "required",
            format!("send {what} as the form part `file`"),
        )]));
    };
    if file.len() > limit {
        return Err(ApiError::payload_too_large(limit));
    }
    let mut content = Vec::with_capacity(file.len() as usize);
    file.open()
        .await
        .map_err(|e| ApiError::internal(format!("reading the upload: {e}")))?
        .read_to_end(&mut content)
        .await
        .map_err(|e| ApiError::internal(format!("reading the upload: {e}")))?;
    Ok(content)
}

/// Imports contacts from a CSV file (multipart part `file`), as a background job.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "importContacts",
    request_body(content = CsvUpload, content_type = "multipart/form-data"),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = Queued)),
)]
#[post("/contacts/import", data = "<form>")]
async fn upload(
    state: &State<AppState>,
    access: ProjectAccess,
    form: Result<Form<Upload<'_>>, Errors<'_>>,
) -> Result<(Status, Json<Queued>), ApiError> {
    let (content, options) = read_import(form, state.config.limits.csv_bytes).await?;
    let (content, rows) =
        crate::core::blocking::blocking(move || import::inspect(&content).map(|rows| (content, rows)))
            .await??;
    let project = access.project.id;
    let job = match options {
        None => queue(state, project, "import", content, rows as i64).await?,
        Some(options) => {
            let text = serde_json::to_string(&options).unwrap_or_default();
            state
                .db
                .write(move |tx| {
                    import::check_options(tx, &project, &content, &options)?;
                    let job = crate::core::bulk::start(
                        tx,
                        &project,
                        "import",
                        &content,
                        rows as i64,
                        clock::now_ms(),
                    )?;
                    crate::db::contact_jobs::set_options(tx, &job.id, &text)?;
                    Ok::<_, crate::core::Error>(job)
                })
                .await?
        }
    };
    Ok((Status::Accepted, Json(Queued { job_id: job.id, status: job.status })))
}

/// What importing the file would do, without importing it: `{totalRows, columns: [{name,
/// becomes}], rows}` with the first rows typed as the import types them (the dashboard shows it
/// before the upload).
#[utoipa::path(
    tag = "Contacts",
    operation_id = "previewImport",
    request_body(content = CsvUpload, content_type = "multipart/form-data"),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What the import would do", body = ImportPreview)),
)]
#[post("/contacts/import/preview", data = "<form>")]
async fn preview(
    state: &State<AppState>,
    _access: ProjectAccess,
    form: Result<Form<Upload<'_>>, Errors<'_>>,
) -> Result<Json<ImportPreview>, ApiError> {
    let (content, options) = read_import(form, state.config.limits.csv_bytes).await?;
    let shown =
        crate::core::blocking::blocking(move || import::preview(&content, options.as_ref())).await??;
    Ok(Json(shown.into()))
}

fn form_error(errors: &Errors<'_>, limit: u64, what: &str) -> ApiError {
    use rocket::form::error::ErrorKind;
    if errors.iter().any(|e| matches!(e.kind, ErrorKind::InvalidLength { .. })) {
        return ApiError::payload_too_large(limit);
    }
    ApiError::bad_request(format!("Send {what} as multipart/form-data with the part `file` ({errors})"))
}

async fn find(
    state: &AppState,
    project: String,
    id: ContactJobId,
    import: bool,
) -> Result<ContactJob, ApiError> {
    Ok(state.db.run(move |conn| bulk::find(conn, &project, &id, import)).await?)
}

/// An import's progress and outcome.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "getImport",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The import job", body = JobView)),
)]
#[get("/contacts/import/<id>")]
async fn import_status(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactJobId>,
) -> Result<Json<JobView>, ApiError> {
    let id = id?;
    Ok(Json(JobView::from(&find(state, access.project.id, id, true).await?)))
}

/// A bulk job's progress and outcome; also the removal of a custom field.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "getBulkJob",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The job", body = JobView)),
)]
#[get("/contacts/bulk/<id>")]
async fn bulk_status(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<ContactJobId>,
) -> Result<Json<JobView>, ApiError> {
    let id = id?;
    Ok(Json(JobView::from(&find(state, access.project.id, id, false).await?)))
}

async fn bulk(
    state: &AppState,
    access: ProjectAccess,
    body: BulkRequest,
    operation: &'static str,
) -> Result<(Status, Json<Queued>), ApiError> {
    match body.mode.as_deref() {
        None | Some("ids") => {}
        Some("query") => return bulk_query(state, access, body, operation).await,
        Some(other) => {
            return Err(ApiError::validation(vec![
                FieldError::new("mode", "invalid_enum_value", "mode is ids or query").received(json!(other)),
            ]));
        }
    }
    if body.filter.is_some() || body.exclude_ids.is_some() {
        return Err(ApiError::invalid_field(
            "mode",
            "required",
            "filter and excludeIds go with mode \"query\"",
        ));
    }
    let ids = body
        .contact_ids
        .ok_or_else(|| ApiError::invalid_field("contactIds", "required", "contactIds is required"))?;
    if ids.is_empty() {
        return Err(ApiError::invalid_field(
            "contactIds",
            "too_small",
            "contactIds must name at least one contact",
        ));
    }
    if ids.len() > bulk::MAX_IDS {
        return Err(ApiError::invalid_field(
            "contactIds",
            "too_big",
            format!("at most {} contact ids per request (found {})", bulk::MAX_IDS, ids.len()),
        ));
    }
    let total = ids.len() as i64;
    let input =
        serde_json::to_vec(&bulk::Selection::Ids(ids)).map_err(|e| ApiError::internal(e.to_string()))?;
    let job = queue(state, access.project.id, operation, input, total).await?;
    Ok((Status::Accepted, Json(Queued { job_id: job.id, status: job.status })))
}

/// A bulk job over every contact the contacts list's filters match (Plunk's query mode), but
/// those excluded; its total is how many match now.
async fn bulk_query(
    state: &AppState,
    access: ProjectAccess,
    body: BulkRequest,
    operation: &'static str,
) -> Result<(Status, Json<Queued>), ApiError> {
    if body.contact_ids.is_some() {
        return Err(ApiError::invalid_field(
            "contactIds",
            "unrecognized_key",
            "contactIds goes with mode \"ids\"; mode \"query\" takes filter and excludeIds",
        ));
    }
    let filter = body.filter.unwrap_or_default();
    let search = filter.search.map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty());
    if search.as_ref().is_some_and(|s| s.chars().count() > bulk::MAX_SEARCH) {
        return Err(ApiError::invalid_field(
            "filter.search",
            "too_big",
            format!("search is at most {} characters", bulk::MAX_SEARCH),
        ));
    }
    let narrowing = Narrowing::new(
        filter.q.as_deref(),
        filter.segment_id.as_deref(),
        filter.topic_id.as_deref(),
        "filter.q",
    )?;
    let exclude = body.exclude_ids.unwrap_or_default();
    if exclude.len() > bulk::MAX_EXCLUDED {
        return Err(ApiError::invalid_field(
            "excludeIds",
            "too_big",
            format!("at most {} excluded ids per request (found {})", bulk::MAX_EXCLUDED, exclude.len()),
        ));
    }
    let mut query = crate::db::contacts::ListQuery {
        project: access.project.id.clone(),
        search: search.clone(),
        search_indexed: false,
        subscribed: filter.subscribed,
        sort: crate::db::contacts::Sort::CreatedAt,
        descending: true,
        after: crate::db::contacts::After::Start,
        limit: 0,
        offset: 0,
        within: Vec::new(),
    };
    let (project, counted) = (access.project.id.clone(), narrowing.clone());
    let _turn = match narrowing.scans() {
        false => None,
        true => Some(crate::core::segments::counting_turn(&project).await?),
    };
    let total = state
        .db
        .run(move |conn| {
            query.within = counted.within(conn, &project, crate::clock::now_ms())?;
            if let Some(search) = &query.search {
                query.search_indexed = crate::db::contacts::plan_search(conn, search)?;
            }
            Ok::<_, crate::core::Error>(crate::db::contacts::count(conn, &query)?)
        })
        .await?;
    let selection = bulk::Selection::Query { search, subscribed: filter.subscribed, exclude, narrowing };
    let input = serde_json::to_vec(&selection).map_err(|e| ApiError::internal(e.to_string()))?;
    let job = queue(state, access.project.id, operation, input, total).await?;
    Ok((Status::Accepted, Json(Queued { job_id: job.id, status: job.status })))
}

/// Subscribes up to 1,000 contacts by id, or every contact a list's filters match, as a
/// background job.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "bulkSubscribe",
    request_body = BulkRequest,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = Queued)),
)]
#[post("/contacts/bulk-subscribe", data = "<body>")]
async fn bulk_subscribe(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<BulkRequest, Medium>,
) -> Result<(Status, Json<Queued>), ApiError> {
    bulk(state, access, body.0, "subscribe").await
}

/// Unsubscribes up to 1,000 contacts by id, or every contact a list's filters match, as a
/// background job.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "bulkUnsubscribe",
    request_body = BulkRequest,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = Queued)),
)]
#[post("/contacts/bulk-unsubscribe", data = "<body>")]
async fn bulk_unsubscribe(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<BulkRequest, Medium>,
) -> Result<(Status, Json<Queued>), ApiError> {
    bulk(state, access, body.0, "unsubscribe").await
}

/// Deletes up to 1,000 contacts by id, or every contact a list's filters match, as a
/// background job.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "bulkDelete",
    request_body = BulkRequest,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = Queued)),
)]
#[post("/contacts/bulk-delete", data = "<body>")]
async fn bulk_delete(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<BulkRequest, Medium>,
) -> Result<(Status, Json<Queued>), ApiError> {
    bulk(state, access, body.0, "delete").await
}
