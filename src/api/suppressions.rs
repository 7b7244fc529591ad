//! The project's suppression list (issue 32, item 5): `/suppressions`, its CSV import and
//! export. What an entry keeps away is `core::suppressions`.

use rocket::form::{Errors, Form};
use rocket::futures::Stream;
use rocket::http::Status;
use rocket::response::stream::ByteStream;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, post};

use super::contact_jobs::{Part, Upload, read_upload};
use super::csv_download::{Csv, csv_line};
use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::ids::SuppressionId;
use crate::core::suppressions::{self, Target};
use crate::db::suppression_list as rows;
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::CursorPage;
use crate::views::contact_jobs::CsvUpload;
use crate::views::suppressions::{ImportedSuppressions, NewSuppression, SkippedRow, SuppressionEntry};

documented_routes!(list, create, remove, import, export);

/// Rows written per transaction of an import, so a large file never holds the writer long.
const IMPORT_CHUNK: usize = 1_000;
/// Entries read per page of the export.
const EXPORT_PAGE: usize = 1_000;

/// The query of `GET /suppressions`.
#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// 1 to 100; default 20.
    #[param(value_type = Option<i64>, minimum = 1)]
    limit: Option<&'r str>,
    /// The previous page's `cursor`.
    #[param(value_type = Option<String>)]
    cursor: Option<&'r str>,
    /// Part of the address or domain.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
}

/// The list, newest first.
#[utoipa::path(
    tag = "Suppressions",
    operation_id = "listSuppressions",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of entries", body = CursorPage<SuppressionEntry>)),
)]
#[get("/suppressions?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<CursorPage<SuppressionEntry>>, ApiError> {
    let limit = pagination::limit(params.limit)?;
    let before: Option<(i64, String)> =
        params.cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let search = params
        .search
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(200).collect::<String>());
    let project = access.project.id;
    let first = before.is_none();
    let (entries, total) = state
        .db
        .run(move |conn| {
            let entries = rows::page(conn, &project, before, search.as_deref(), limit + 1)?;
            let total = if first { Some(rows::count(conn, &project)? as i64) } else { None };
            Ok::<_, ApiError>((entries, total))
        })
        .await?;
    let more = entries.len() > limit;
    let entries: Vec<_> = entries.into_iter().take(limit).collect();
    let next = entries.last().filter(|_| more).map(|e| pagination::encode(&(e.created_at, e.id.clone())));
    Ok(Json(CursorPage::new(entries.iter().map(SuppressionEntry::from).collect(), next, total)))
}

/// Adds an address or a domain (`manual`): no mail of the project goes to it from now on. One
/// listed before is answered as it is.
#[utoipa::path(
    tag = "Suppressions",
    operation_id = "createSuppression",
    request_body = NewSuppression,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The entry", body = SuppressionEntry)),
)]
#[post("/suppressions", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewSuppression, Small>,
) -> Result<Json<SuppressionEntry>, ApiError> {
    let body = body.0;
    let target = match (body.email.as_deref(), body.domain.as_deref()) {
        (Some(email), None) => match suppressions::target(email, "email")? {
            Target::Domain(_) => {
                return Err(ApiError::invalid_field("email", "invalid_string", "email must be an address"));
            }
            address => address,
        },
        (None, Some(domain)) if !domain.contains('@') => suppressions::target(domain, "domain")?,
        (None, Some(_)) => {
            return Err(ApiError::invalid_field(
                "domain",
                "invalid_string",
                "domain is a domain like example.com",
            ));
        }
        _ => {
            return Err(ApiError::validation(vec![FieldError::new(
                "email",
                "required",
                "give email or domain, one of them",
            )]));
        }
    };
    let project = access.project.id;
    let (entry, _) = state
        .db
        .write(move |tx| suppressions::add(tx, &project, target, "manual", body.reason, clock::now_ms()))
        .await?;
    Ok(Json(SuppressionEntry::from(&entry)))
}

/// Takes an entry off the list; for an address that bounced or complained, the contact's
/// suppression goes too.
#[utoipa::path(
    tag = "Suppressions",
    operation_id = "deleteSuppression",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/suppressions/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<SuppressionId>,
) -> Result<Status, ApiError> {
    let (id, project) = (id?, access.project.id);
    state.db.write(move |tx| suppressions::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// Lists every address or domain of a CSV file (multipart part `file`; the column `email`,
/// `address`, `domain` or `value`, else the first; `reason` if there is one) as `import`
/// entries, a thousand rows a transaction.
#[utoipa::path(
    tag = "Suppressions",
    operation_id = "importSuppressions",
    request_body(content = CsvUpload, content_type = "multipart/form-data"),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What the import did", body = ImportedSuppressions)),
)]
#[post("/suppressions/import", data = "<form>")]
async fn import(
    state: &State<AppState>,
    access: ProjectAccess,
    form: Result<Form<Upload<'_>>, Errors<'_>>,
) -> Result<Json<ImportedSuppressions>, ApiError> {
    let content = read_upload(form, state.config.limits.csv_bytes, "the CSV", Part::File).await?;
    let rows = crate::core::blocking::blocking(move || suppressions::read_csv(&content)).await??;
    let mut done = ImportedSuppressions { added: 0, already: 0, skipped: 0, errors: Vec::new() };
    let mut rows = rows.into_iter().peekable();
    let mut offset = 0;
    while rows.peek().is_some() {
        let chunk: Vec<_> = rows.by_ref().take(IMPORT_CHUNK).collect();
        let (project, n) = (access.project.id.clone(), chunk.len());
        let part =
            state.db.write(move |tx| suppressions::import(tx, &project, chunk, clock::now_ms())).await?;
        done.added += part.added;
        done.already += part.already;
        done.skipped += part.skipped;
        for (row, message) in part.errors {
            if done.errors.len() < 100 {
                done.errors.push(SkippedRow { row: offset + row, message });
            }
        }
        offset += n;
    }
    Ok(Json(done))
}

const HEADER: [&str; 5] = ["type", "value", "source", "reason", "created_at"];

/// The whole list as CSV, newest first, read a page at a time.
#[utoipa::path(
    tag = "Suppressions",
    operation_id = "exportSuppressions",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "One row per entry", content_type = "text/csv", body = String)),
)]
#[get("/suppressions/export")]
async fn export(state: &State<AppState>, access: ProjectAccess) -> Csv<impl Stream<Item = Vec<u8>>> {
    let (db, project) = (state.db.clone(), access.project.id);
    let body = ByteStream! {
        yield csv_line(&HEADER);
        let mut before: Option<(i64, String)> = None;
        loop {
            let (project, after) = (project.clone(), before.clone());
            let page = match db.run(move |conn| rows::page(conn, &project, after, None, EXPORT_PAGE)).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!("the suppression export stopped: {e}");
                    break;
                }
            };
            let mut chunk = Vec::new();
            for e in &page {
                let at = clock::iso(e.created_at);
                chunk.extend(csv_line(&[&e.kind, &e.value, &e.source, e.reason.as_deref().unwrap_or(""), &at]));
            }
            if !chunk.is_empty() {
                yield chunk;
            }
            match page.last() {
                Some(last) if page.len() == EXPORT_PAGE => before = Some((last.created_at, last.id.clone())),
                _ => break,
            }
        }
    };
    Csv::new(body, "suppressions.csv")
}
