//! Sender domains: `/domains`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, post};

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use crate::core::domains as core_domains;

use crate::db::domains;
use crate::error::{ApiError, conflict_on_unique};
use crate::state::AppState;
use crate::views::domains::{Domain as DomainView, NewDomain};

documented_routes!(create, list, verify, remove);

fn too_many_domains(cap: u32) -> ApiError {
    ApiError::new(
        403,
        "FORBIDDEN",
        format!("This project has {cap} sender domains, the most one project may have"),
    )
    .with_suggestion("Remove a domain you no longer send from, or raise [limits] domains_per_project")
}

/// Adds a sender domain with a new DKIM key; publish its records, then verify it.
#[utoipa::path(
    tag = "Domains",
    operation_id = "createDomain",
    request_body = NewDomain,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domain and the records to publish", body = DomainView)),
)]
#[post("/domains", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewDomain, Small>,
) -> Result<Json<DomainView>, ApiError> {
    let name =
        body.0.domain.ok_or_else(|| ApiError::invalid_field("domain", "required", "domain is required"))?;
    let name = core_domains::normalize(&name)?;
    let (project, lookup) = (access.project.id.clone(), name.clone());
    let (exists, count) = state
        .db
        .run(move |conn| {
            Ok::<_, ApiError>((domains::exists(conn, &project, &lookup)?, domains::count(conn, &project)?))
        })
        .await?;
    if exists {
        return Err(ApiError::conflict(format!("{name} is already a domain of this project")));
    }
    let cap = state.config.limits.domains_per_project;
    if count >= u64::from(cap) {
        return Err(too_many_domains(cap));
    }
    let key = tokio::task::spawn_blocking(crate::mail::dkim::generate_key)
        .await
        .map_err(|e| ApiError::internal(format!("key generation: {e}")))?
        .map_err(|e| ApiError::internal(format!("key generation: {e}")))?;
    let interval = i64::from(state.config.dns.domain_check_interval_secs) * 1000;
    let domain = core_domains::new_domain(&access.project.id, &name, key, interval);
    let stored = domain.clone();
    state
        .db
        .write(move |tx| {
            // Checked again where it is written: requests made at the same time all passed the
            // first check.
            if domains::count(tx, &stored.project_id)? >= u64::from(cap) {
                return Err(too_many_domains(cap));
            }
            domains::insert(tx, &stored).map_err(|e| {
                conflict_on_unique(e, &format!("{} is already a domain of this project", stored.domain))
            })
        })
        .await?;
    Ok(Json(DomainView::from(&domain)))
}

/// The project's domains (`project_id` is the project the key or session acts on).
#[utoipa::path(
    tag = "Domains",
    operation_id = "listDomains",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domains", body = Vec<DomainView>)),
)]
#[get("/domains/project/<project_id>", rank = 1)]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    project_id: &str,
) -> Result<Json<Vec<DomainView>>, ApiError> {
    if project_id != access.project.id {
        return Err(ApiError::not_found("Project not found"));
    }
    let project = access.project.id;
    let list = state.db.run(move |conn| Ok::<_, ApiError>(domains::for_project(conn, &project)?)).await?;
    Ok(Json(list.iter().map(DomainView::from).collect()))
}

async fn find(state: &AppState, project: String, id: &str) -> Result<domains::Domain, ApiError> {
    let id = id.to_string();
    state
        .db
        .run(move |conn| Ok::<_, ApiError>(domains::get(conn, &project, &id)?))
        .await?
        .ok_or_else(|| ApiError::not_found("Domain not found"))
}

/// Looks the domain's records up in DNS now and saves what was found.
#[utoipa::path(
    tag = "Domains",
    operation_id = "verifyDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domain as checked", body = DomainView)),
)]
#[get("/domains/<id>/verify", rank = 2)]
async fn verify(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<DomainView>, ApiError> {
    let domain = find(state, access.project.id, id).await?;
    let interval = state.config.dns.domain_check_interval_secs;
    let checked = core_domains::check_and_save(&state.dns, &state.db, interval, domain).await?;
    Ok(Json(DomainView::from(&checked)))
}

/// Removes a domain no template sends from.
#[utoipa::path(
    tag = "Domains",
    operation_id = "deleteDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/domains/<id>")]
async fn remove(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Status, ApiError> {
    let domain = find(state, access.project.id, id).await?;
    state.db.write(move |tx| core_domains::remove(tx, &domain)).await?;
    Ok(Status::NoContent)
}
