//! Templates: `/templates`.

use crate::core::vocabulary::EmailKind;
use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};
use serde_json::{Value, json};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Message};
use super::pagination;
use crate::clock;
use crate::core::compose;
use crate::core::contacts::parse_email;
use crate::core::domains::require_verified_sender;
use crate::db::templates::{self, Template};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::templates::{Template as TemplateView, TemplateFields};
use crate::views::usage::TemplateUsage;

documented_routes!(list, create, read, change, remove, duplicate, usage);

/// A template as the API shows it.
pub fn view(t: &Template) -> TemplateView {
    TemplateView::from(t)
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct ListParams<'r> {
    /// From 1; default 1.
    #[param(value_type = Option<i64>, minimum = 1)]
    page: Option<&'r str>,
    /// Default 20, at most 100.
    #[field(name = "pageSize")]
    #[param(rename = "pageSize", value_type = Option<i64>, minimum = 1)]
    page_size: Option<&'r str>,
    /// `TRANSACTIONAL`, `MARKETING` or `HEADLESS`.
    #[field(name = "type")]
    #[param(rename = "type", value_type = Option<String>)]
    kind: Option<&'r str>,
    /// Part of the name, description or subject, any case.
    #[param(value_type = Option<String>)]
    search: Option<&'r str>,
    /// `name`, `createdAt` (the default) or `updatedAt`.
    #[param(value_type = Option<String>)]
    sort: Option<&'r str>,
    /// `desc` (the default) or `asc`.
    #[param(value_type = Option<String>)]
    dir: Option<&'r str>,
}

/// The project's templates, a page at a time.
#[utoipa::path(
    tag = "Templates",
    operation_id = "listTemplates",
    params(ListParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of templates", body = NumberedPage<TemplateView>)),
)]
#[get("/templates?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<NumberedPage<TemplateView>>, ApiError> {
    let kind = match params.kind {
        None => None,
        Some(kind) if compose::TYPES.contains(&kind) => Some(("type", kind.to_string())),
        Some(kind) => {
            return Err(ApiError::bad_request(format!(
                "type must be TRANSACTIONAL, MARKETING or HEADLESS (found {kind:?})"
            )));
        }
    };
    let (query, page, page_size) = pagination::list_query(
        access.project.id,
        (params.page, params.page_size),
        params.search,
        (params.sort, params.dir),
        kind,
    )?;
    let (rows, total) = state.db.run(move |conn| Ok::<_, ApiError>(templates::page(conn, &query)?)).await?;
    Ok(Json(NumberedPage::new(rows.iter().map(view).collect(), total, page, page_size)))
}

/// Applies and checks the fields on a template; sender domains are checked by the caller.
fn apply(t: &mut Template, f: TemplateFields) -> Result<(), ApiError> {
    if let Some(name) = f.name {
        let name = name.trim().to_string();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(ApiError::invalid_field(
                "name",
                "invalid_string",
                "name must be 1 to 200 characters",
            ));
        }
        t.name = name;
    }
    if let Some(description) = f.description {
        t.description = Some(description).filter(|d| !d.trim().is_empty());
    }
    if let Some(subject) = f.subject {
        compose::check_subject(&subject, "subject")?;
        t.subject = subject;
    }
    if let Some(body) = f.body {
        compose::check_body(&body, "body")?;
        t.body = body;
    }
    if let Some(from) = f.from {
        t.from_email = parse_email(&from, "from")?;
    }
    if let Some(name) = f.from_name {
        t.from_name = Some(compose::check_name(&name, "fromName")?).filter(|n| !n.is_empty());
    }
    if let Some(reply) = f.reply_to {
        t.reply_to = if reply.trim().is_empty() { None } else { Some(parse_email(&reply, "replyTo")?) };
    }
    if let Some(kind) = f.kind {
        t.kind = compose::check_type(Some(&kind), "type", EmailKind::Marketing.as_str())?;
    }
    Ok(())
}

/// Makes a template; its sender must be on a verified domain.
#[utoipa::path(
    tag = "Templates",
    operation_id = "createTemplate",
    request_body = TemplateFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The template", body = TemplateView)),
)]
#[post("/templates", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<TemplateFields, Message>,
) -> Result<Json<TemplateView>, ApiError> {
    let fields = body.0;
    if fields.from.as_deref().is_none_or(|f| f.trim().is_empty()) {
        return Err(ApiError::simple_bad_request("from is required"));
    }
    for (present, field) in [
        (fields.name.is_some(), "name"),
        (fields.subject.is_some(), "subject"),
        (fields.body.is_some(), "body"),
    ] {
        if !present {
            return Err(ApiError::invalid_field(field, "required", format!("{field} is required")));
        }
    }
    let now = clock::now_ms();
    let mut template = Template {
        id: crate::db::new_id(),
        project_id: access.project.id,
        name: String::new(),
        description: None,
        subject: String::new(),
        body: String::new(),
        from_email: String::new(),
        from_name: None,
        reply_to: None,
        kind: EmailKind::Marketing.into(),
        created_at: now,
        updated_at: now,
    };
    let template =
        crate::core::blocking::blocking(move || apply(&mut template, fields).map(|()| template)).await??;
    let saved = template.clone();
    state
        .db
        .write(move |tx| {
            require_verified_sender(tx, &saved.project_id, &saved.from_email)?;
            Ok::<_, ApiError>(templates::save(tx, &saved)?)
        })
        .await?;
    Ok(Json(view(&template)))
}

async fn find(state: &AppState, project: String, id: &str) -> Result<Template, ApiError> {
    let id = id.to_string();
    state
        .db
        .run(move |conn| Ok::<_, ApiError>(templates::get(conn, &project, &id)?))
        .await?
        .ok_or_else(|| ApiError::not_found("Template not found"))
}

/// Reads a template.
#[utoipa::path(
    tag = "Templates",
    operation_id = "getTemplate",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The template", body = TemplateView)),
)]
#[get("/templates/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<TemplateView>, ApiError> {
    Ok(Json(view(&find(state, access.project.id, id).await?)))
}

/// Changes the fields given.
#[utoipa::path(
    tag = "Templates",
    operation_id = "updateTemplate",
    request_body = TemplateFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The template as changed", body = TemplateView)),
)]
#[patch("/templates/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<TemplateFields, Message>,
) -> Result<Json<TemplateView>, ApiError> {
    let mut template = find(state, access.project.id, id).await?;
    let from_changed = body.0.from.is_some();
    let fields = body.0;
    let mut template =
        crate::core::blocking::blocking(move || apply(&mut template, fields).map(|()| template)).await??;
    template.updated_at = clock::now_ms();
    let saved = template.clone();
    state
        .db
        .write(move |tx| {
            if from_changed {
                require_verified_sender(tx, &saved.project_id, &saved.from_email)?;
            }
            Ok::<_, ApiError>(templates::save(tx, &saved)?)
        })
        .await?;
    Ok(Json(view(&template)))
}

/// Deletes a template; 409 while a workflow's step sends it.
#[utoipa::path(
    tag = "Templates",
    operation_id = "deleteTemplate",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/templates/<id>")]
async fn remove(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Status, ApiError> {
    let template = find(state, access.project.id, id).await?;
    state
        .db
        .write(move |tx| {
            // A workflow's SEND_EMAIL step would fail on every execution from then on.
            let workflows = crate::db::refs::workflows(tx, &template.project_id, "template", &template.id)?;
            if !workflows.is_empty() {
                let names: Vec<Value> =
                    workflows.iter().map(|(id, name, _)| json!({ "id": id, "name": name })).collect();
                return Err(ApiError::conflict(format!(
                    "the template is sent by {} workflow(s): change or delete their SEND_EMAIL steps first",
                    names.len()
                ))
                .with_details(json!({ "workflows": names })));
            }
            Ok::<_, ApiError>(templates::delete(tx, &template.project_id, &template.id)?)
        })
        .await?;
    Ok(Status::NoContent)
}

/// Copies a template, named "<name> (copy)".
#[utoipa::path(
    tag = "Templates",
    operation_id = "duplicateTemplate",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The copy", body = TemplateView)),
)]
#[post("/templates/<id>/duplicate")]
async fn duplicate(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<TemplateView>, ApiError> {
    let original = find(state, access.project.id, id).await?;
    let now = clock::now_ms();
    let copy = Template {
        id: crate::db::new_id(),
        name: format!("{} (copy)", original.name).chars().take(200).collect(),
        created_at: now,
        updated_at: now,
        ..original
    };
    let saved = copy.clone();
    state.db.write(move |tx| Ok::<_, ApiError>(templates::save(tx, &saved)?)).await?;
    Ok(Json(view(&copy)))
}

/// Campaigns and workflows that send the template.
#[utoipa::path(
    tag = "Templates",
    operation_id = "templateUsage",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What sends it", body = TemplateUsage)),
)]
#[get("/templates/<id>/usage")]
async fn usage(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<TemplateUsage>, ApiError> {
    let template = find(state, access.project.id, id).await?;
    let usage = super::usage::lists(state, &template.project_id, "template", &template.id).await?;
    Ok(Json(TemplateUsage {
        template_id: template.id,
        campaigns: usage.campaigns,
        workflows: usage.workflows,
    }))
}
