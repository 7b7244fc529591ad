//! The custom-field catalogue: `/contacts/fields`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::core::fields as core_fields;
use crate::db::{contacts, fields};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::fields::{Field, FieldDeletion, FieldList, FieldValue, FieldValues};
use crate::views::usage::FieldUsage;

documented_routes!(list, values, usage, remove);

/// The project's contact fields, standard and custom, with their types and coverage.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "listFields",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The fields", body = FieldList)),
)]
#[get("/contacts/fields")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<FieldList>, ApiError> {
    let project = access.project.id;
    let fields = state.db.run(move |conn| core_fields::catalogue(conn, &project)).await?;
    Ok(Json(FieldList { fields: fields.into_iter().map(Field::from).collect() }))
}

/// The custom field a `data.<path>` name refers to, if it is in the catalogue.
async fn custom_field(state: &AppState, project: &str, field: &str) -> Result<(String, String), ApiError> {
    let (project, field) = (project.to_string(), field.to_string());
    Ok(state.db.run(move |conn| core_fields::custom(conn, &project, &field)).await?)
}

/// The distinct values of `subscribed` or of a custom field, in order, with how many contacts
/// have each.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "listFieldValues",
    params(
        ("limit" = Option<i64>, Query, minimum = 1, description = "1 to 100 (larger is taken as 100); default 20."),
        ("cursor" = Option<String>, Query, description = "The previous page's `cursor`."),
    ),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of values", body = FieldValues)),
)]
#[get("/contacts/fields/<field>/values?<limit>&<cursor>")]
async fn values(
    state: &State<AppState>,
    access: ProjectAccess,
    field: &str,
    limit: Option<&str>,
    cursor: Option<&str>,
) -> Result<Json<FieldValues>, ApiError> {
    let limit = pagination::limit(limit)?;
    let project = access.project.id;
    if field == "subscribed" {
        let counts = state.db.run(move |conn| contacts::counts(conn, &project)).await?;
        let data = vec![
            FieldValue { value: json!(true), count: counts.1 },
            FieldValue { value: json!(false), count: counts.0 - counts.1 },
        ];
        return Ok(Json(FieldValues { field: field.to_string(), data, cursor: None, has_more: false }));
    }
    let (path, kind) = custom_field(state, &project, field).await?;
    let after: Option<Value> = cursor.filter(|c| !c.is_empty()).map(pagination::decode).transpose()?;
    let boolean = kind == "boolean";
    let mut shown = state
        .db
        .run(move |conn| fields::values(conn, &project, &path, boolean, after.as_ref(), limit + 1))
        .await?;
    let has_more = shown.len() > limit;
    shown.truncate(limit);
    let next = if has_more { shown.last().map(|(v, _)| pagination::encode(v)) } else { None };
    let data = shown.into_iter().map(|(value, count)| FieldValue { value, count }).collect();
    Ok(Json(FieldValues { field: field.to_string(), data, cursor: next, has_more }))
}

/// Segments, campaigns and workflows that refer to the field.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "fieldUsage",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What refers to the field", body = FieldUsage)),
)]
#[get("/contacts/fields/<field>/usage")]
async fn usage(
    state: &State<AppState>,
    access: ProjectAccess,
    field: &str,
) -> Result<Json<FieldUsage>, ApiError> {
    if !core_fields::is_standard(field) {
        custom_field(state, &access.project.id, field).await?;
    }
    let usage = super::usage::lists(state, &access.project.id, "field", field).await?;
    Ok(Json(FieldUsage { field: field.to_string(), usage }))
}

/// Removes a custom field from every contact, as a background job.
#[utoipa::path(
    tag = "Contacts",
    operation_id = "deleteField",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = FieldDeletion)),
)]
#[delete("/contacts/fields/<field>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    field: &str,
) -> Result<(Status, Json<FieldDeletion>), ApiError> {
    if core_fields::is_standard(field) {
        return Err(ApiError::bad_request(format!("{field} is a standard field and cannot be deleted")));
    }
    let (path, _) = custom_field(state, &access.project.id, field).await?;
    let project = access.project.id;
    let job = state
        .db
        .write(move |tx| crate::core::bulk::remove_field(tx, &project, &path, clock::now_ms()))
        .await?;
    Ok((
        Status::Accepted,
        Json(FieldDeletion { job_id: job.id, status: job.status, field: field.to_string() }),
    ))
}
