//! The custom-field catalogue: `/contacts/fields`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get};
use rusqlite::params;
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::pagination;
use crate::clock;
use crate::core::fields::json_path;
use crate::db::{DbError, contacts};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::fields::{Field, FieldDeletion, FieldList, FieldValue, FieldValues};
use crate::views::usage::FieldUsage;

documented_routes!(list, values, usage, remove);

/// Fields every contact has, with their types.
const STANDARD: &[(&str, &str)] =
    &[("email", "string"), ("subscribed", "boolean"), ("createdAt", "date"), ("updatedAt", "date")];

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
    let fields = state.db.run(move |conn| catalogue(conn, &project)).await?;
    Ok(Json(FieldList { fields }))
}

/// The project's contact fields: the standard ones and the catalogue's custom ones, each
/// `{field, type, isCustom, coverage}` (the share of contacts that have it).
pub fn catalogue(conn: &rusqlite::Connection, project: &str) -> crate::db::Result<Vec<Field>> {
    let (total, _) = contacts::counts(conn, project)?;
    let mut stmt = conn.prepare_cached(
        "SELECT path, type, contacts FROM contact_fields WHERE project_id = ?1 ORDER BY path",
    )?;
    let custom: Vec<(String, String, i64)> =
        stmt.query_map([project], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
    let coverage = |n: i64| if total > 0 { (n as f64 / total as f64).clamp(0.0, 1.0) } else { 0.0 };
    let mut fields: Vec<Field> = STANDARD
        .iter()
        .map(|(field, kind)| Field {
            field: field.to_string(),
            kind: kind.to_string(),
            is_custom: false,
            coverage: coverage(total),
        })
        .collect();
    fields.extend(custom.into_iter().map(|(path, kind, n)| Field {
        field: format!("data.{path}"),
        kind,
        is_custom: true,
        coverage: coverage(n),
    }));
    Ok(fields)
}

/// The custom field a `data.<path>` name refers to, if it is in the catalogue.
async fn custom_field(state: &AppState, project: &str, field: &str) -> Result<(String, String), ApiError> {
    // A name no field can have (an older catalogue may hold one) is not looked up: SQLite's
    // JSON paths cannot carry its characters.
    let nameable = |p: &&str| p.split('.').all(crate::core::fields::nameable);
    let Some(path) = field.strip_prefix("data.").filter(nameable) else {
        return Err(ApiError::not_found(format!(
            "No custom field {field:?}; custom fields are named data.<key>"
        )));
    };
    let (project, lookup) = (project.to_string(), path.to_string());
    let kind: Option<String> = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>(
                conn.query_row(
                    "SELECT type FROM contact_fields WHERE project_id = ?1 AND path = ?2",
                    [&project, &lookup],
                    |r| r.get(0),
                )
                .ok(),
            )
        })
        .await?;
    kind.map(|kind| (path.to_string(), kind))
        .ok_or_else(|| ApiError::not_found(format!("No custom field {field:?} in this project")))
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
    let rows = state
        .db
        .run(move |conn| {
            let sql = "SELECT v, count(*) FROM (SELECT json_extract(data, ?2) AS v FROM contacts WHERE project_id = ?1)
                       WHERE v IS NOT NULL AND (?3 IS NULL OR v > ?3) GROUP BY v ORDER BY v LIMIT ?4";
            let after = after.map(|v| match v {
                Value::Number(n) => n.as_i64().map(rusqlite::types::Value::Integer).unwrap_or_else(|| rusqlite::types::Value::Real(n.as_f64().unwrap_or(0.0))),
                Value::String(s) => rusqlite::types::Value::Text(s),
                _ => rusqlite::types::Value::Null,
            });
            let mut stmt = conn.prepare_cached(sql)?;
            let rows: Vec<(rusqlite::types::Value, i64)> = stmt
                .query_map(params![project, json_path(&path), after, (limit + 1) as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?;
            Ok::<_, DbError>(rows)
        })
        .await?;
    let has_more = rows.len() > limit;
    let shown: Vec<(Value, i64)> = rows
        .into_iter()
        .take(limit)
        .map(|(v, n)| {
            let value = match v {
                rusqlite::types::Value::Integer(i) if kind == "boolean" => json!(i != 0),
                rusqlite::types::Value::Integer(i) => json!(i),
                rusqlite::types::Value::Real(f) => json!(f),
                rusqlite::types::Value::Text(s) => serde_json::from_str::<Value>(&s)
                    .ok()
                    .filter(|j| j.is_object() || j.is_array())
                    .unwrap_or(json!(s)),
                _ => Value::Null,
            };
            (value, n)
        })
        .collect();
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
    if !STANDARD.iter().any(|(name, _)| *name == field) {
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
    if STANDARD.iter().any(|(name, _)| *name == field) {
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
