//! Templates: `/templates`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, Route, State, delete, get, patch, post, routes};
use serde::Deserialize;
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
use crate::views::usage::TemplateUsage;

pub fn routes() -> Vec<Route> {
    routes![list, create, read, change, remove, duplicate, usage]
}

/// A template as the API shows it.
pub fn view(t: &Template) -> Value {
    json!({
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "subject": t.subject,
        "body": t.body,
        "from": t.from_email,
        "fromName": t.from_name,
        "replyTo": t.reply_to,
        "type": t.kind,
        "projectId": t.project_id,
        "createdAt": clock::iso(t.created_at),
        "updatedAt": clock::iso(t.updated_at),
    })
}

#[derive(FromForm)]
struct ListParams<'r> {
    page: Option<&'r str>,
    #[field(name = "pageSize")]
    page_size: Option<&'r str>,
    #[field(name = "type")]
    kind: Option<&'r str>,
    search: Option<&'r str>,
    sort: Option<&'r str>,
    dir: Option<&'r str>,
}

#[get("/templates?<params..>")]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    params: ListParams<'_>,
) -> Result<Json<Value>, ApiError> {
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
    Ok(Json(pagination::page_list(rows.iter().map(view).collect(), total, page, page_size)))
}

/// The body of POST and PATCH; on PATCH every field is optional.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TemplateFields {
    name: Option<String>,
    description: Option<String>,
    subject: Option<String>,
    body: Option<String>,
    from: Option<String>,
    from_name: Option<String>,
    reply_to: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
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
        t.kind = compose::check_type(Some(&kind), "type", "MARKETING")?;
    }
    Ok(())
}

#[post("/templates", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<TemplateFields, Message>,
) -> Result<Json<Value>, ApiError> {
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
        kind: "MARKETING".into(),
        created_at: now,
        updated_at: now,
    };
    let template = super::blocking(move || apply(&mut template, fields).map(|()| template)).await??;
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

#[get("/templates/<id>")]
async fn read(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Json<Value>, ApiError> {
    Ok(Json(view(&find(state, access.project.id, id).await?)))
}

#[patch("/templates/<id>", data = "<body>")]
async fn change(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<TemplateFields, Message>,
) -> Result<Json<Value>, ApiError> {
    let mut template = find(state, access.project.id, id).await?;
    let from_changed = body.0.from.is_some();
    let fields = body.0;
    let mut template = super::blocking(move || apply(&mut template, fields).map(|()| template)).await??;
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

#[post("/templates/<id>/duplicate")]
async fn duplicate(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<Value>, ApiError> {
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
