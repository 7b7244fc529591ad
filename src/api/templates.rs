//! Templates: `/templates`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Message, Small};
use super::pagination;
use crate::clock;
use crate::core::compose;
use crate::core::ids::TemplateId;
use crate::core::templates as core_templates;
use crate::db::templates::{self, Template};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::campaigns::{TestBody, TestSent};
use crate::views::templates::{Template as TemplateView, TemplateFields};
use crate::views::usage::TemplateUsage;

documented_routes!(list, create, read, change, remove, duplicate, usage, test);

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
    let mut template = core_templates::draft(&access.project.id, clock::now_ms());
    let template = crate::core::blocking::blocking(move || {
        core_templates::apply(&mut template, fields.into()).map(|()| template)
    })
    .await??;
    let saved = template.clone();
    state.db.write(move |tx| core_templates::create(tx, &saved)).await?;
    Ok(Json(view(&template)))
}

async fn find(state: &AppState, project: String, id: TemplateId) -> Result<Template, ApiError> {
    Ok(state.db.run(move |conn| core_templates::find(conn, &project, &id)).await?)
}

/// Reads a template.
#[utoipa::path(
    tag = "Templates",
    operation_id = "getTemplate",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The template", body = TemplateView)),
)]
#[get("/templates/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
) -> Result<Json<TemplateView>, ApiError> {
    let id = id?;
    Ok(Json(view(&find(state, access.project.id, id).await?)))
}

/// Changes the fields given.
#[utoipa::path(
    tag = "Templates",
    operation_id = "updateTemplate",
    params(("id" = String, Path)),
    request_body = TemplateFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The template as changed", body = TemplateView)),
)]
#[patch("/templates/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
    body: JsonBody<TemplateFields, Message>,
) -> Result<Json<TemplateView>, ApiError> {
    let id = id?;
    let mut template = find(state, access.project.id, id).await?;
    let from_changed = body.0.from.is_some();
    let fields = body.0;
    let mut template = crate::core::blocking::blocking(move || {
        core_templates::apply(&mut template, fields.into()).map(|()| template)
    })
    .await??;
    template.updated_at = clock::now_ms();
    let saved = template.clone();
    state.db.write(move |tx| core_templates::edit(tx, &saved, from_changed)).await?;
    Ok(Json(view(&template)))
}

/// Deletes a template; 409 while a workflow's step sends it.
#[utoipa::path(
    tag = "Templates",
    operation_id = "deleteTemplate",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/templates/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| core_templates::delete(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// Copies a template, named "<name> (copy)".
#[utoipa::path(
    tag = "Templates",
    operation_id = "duplicateTemplate",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The copy", body = TemplateView)),
)]
#[post("/templates/<id>/duplicate")]
async fn duplicate(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
) -> Result<Json<TemplateView>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let copy =
        state.db.write(move |tx| core_templates::duplicate(tx, &project, &id, clock::now_ms())).await?;
    Ok(Json(view(&copy)))
}

/// Campaigns and workflows that send the template.
#[utoipa::path(
    tag = "Templates",
    operation_id = "templateUsage",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "What sends it", body = TemplateUsage)),
)]
#[get("/templates/<id>/usage")]
async fn usage(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
) -> Result<Json<TemplateUsage>, ApiError> {
    let id = id?;
    let template = find(state, access.project.id, id).await?;
    let usage = super::usage::lists(state, &template.project_id, "template", &template.id).await?;
    Ok(Json(TemplateUsage {
        template_id: template.id,
        campaigns: usage.campaigns,
        workflows: usage.workflows,
    }))
}

/// Sends the template once to one address, marked as a test (`[Test]` before the subject),
/// rendered as `contactId` (else as the contact with that address, if any); it counts toward
/// nothing.
#[utoipa::path(
    tag = "Templates",
    operation_id = "testTemplate",
    params(("id" = String, Path)),
    request_body = TestBody,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The test email, queued", body = TestSent)),
)]
#[post("/templates/<id>/test", data = "<body>")]
async fn test(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TemplateId>,
    body: JsonBody<TestBody, Small>,
) -> Result<Json<TestSent>, ApiError> {
    let id = id?;
    let (to, contact_id) = super::campaigns::test_target(body.0)?;
    let template = find(state, access.project.id, id).await?;
    let queued = state
        .db
        .write(move |tx| {
            core_templates::send_test(tx, &template, &to, contact_id.as_deref(), clock::now_ms())
        })
        .await?;
    Ok(Json(TestSent::from(queued)))
}
