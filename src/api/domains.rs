//! Sender domains: `/domains`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::core::domains as core_domains;
use crate::core::ids::{DomainId, ProjectId};
use crate::db::domains;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::domains::{Domain as DomainView, NewDomain, Sandbox};

documented_routes!(create, sandbox, list, verify, remove);

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
    let (project, lookup, cap) =
        (access.project.id.clone(), name.clone(), state.config.limits.domains_per_project);
    state.db.run(move |conn| core_domains::may_add(conn, &project, &lookup, cap)).await?;
    let key = tokio::task::spawn_blocking(crate::mail::dkim::generate_key)
        .await
        .map_err(|e| ApiError::internal(format!("key generation: {e}")))?
        .map_err(|e| ApiError::internal(format!("key generation: {e}")))?;
    let interval = i64::from(state.config.dns.domain_check_interval_secs) * 1000;
    let domain = core_domains::new_domain(&access.project.id, &name, key, interval);
    let stored = domain.clone();
    state.db.write(move |tx| core_domains::add(tx, &stored, cap)).await?;
    Ok(Json(DomainView::from(&domain)))
}

/// The project's sandbox sender domain: verified while this server captures mail (no relay is
/// configured), so drafts, test sends, campaigns and workflows work before any DNS is set up;
/// its mail stays in the Outbox.
#[utoipa::path(
    tag = "Domains",
    operation_id = "sandboxDomain",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The sandbox domain", body = Sandbox)),
)]
#[get("/domains/sandbox")]
async fn sandbox(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Sandbox>, ApiError> {
    let verified = state.db.run(|conn| crate::core::sandbox::captured(conn)).await?;
    let reason = if verified {
        "This server captures mail (no relay is configured): mail from this domain is kept in the Outbox and never leaves the machine."
    } else {
        "A relay is configured, so mail would leave the machine: send from a domain of your own, verified on the Domains page."
    };
    Ok(Json(Sandbox {
        domain: crate::core::sandbox::domain_of(&access.project.id),
        verified,
        reason: reason.into(),
    }))
}

/// The project's domains (`project_id` is the project the key or session acts on).
#[utoipa::path(
    tag = "Domains",
    operation_id = "listDomains",
    params(("project_id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domains", body = Vec<DomainView>)),
)]
#[get("/domains/project/<project_id>", rank = 1)]
async fn list(
    state: &State<AppState>,
    access: ProjectAccess,
    project_id: Param<ProjectId>,
) -> Result<Json<Vec<DomainView>>, ApiError> {
    let project_id = project_id?;
    if project_id != access.project.id {
        return Err(ProjectId::missing(&access.project.id).into());
    }
    let project = access.project.id;
    let list = state.db.run(move |conn| Ok::<_, ApiError>(domains::for_project(conn, &project)?)).await?;
    Ok(Json(list.iter().map(DomainView::from).collect()))
}

async fn find(state: &AppState, project: String, id: DomainId) -> Result<domains::Domain, ApiError> {
    Ok(state.db.run(move |conn| core_domains::find(conn, &project, &id)).await?)
}

/// Looks the domain's records up in DNS now and saves what was found.
#[utoipa::path(
    tag = "Domains",
    operation_id = "verifyDomain",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domain as checked", body = DomainView)),
)]
#[get("/domains/<id>/verify", rank = 2)]
async fn verify(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<DomainId>,
) -> Result<Json<DomainView>, ApiError> {
    let id = id?;
    let domain = find(state, access.project.id, id).await?;
    let interval = state.config.dns.domain_check_interval_secs;
    let checked = core_domains::check_and_save(&state.dns, &state.db, interval, domain).await?;
    Ok(Json(DomainView::from(&checked)))
}

/// Removes a domain no template sends from.
#[utoipa::path(
    tag = "Domains",
    operation_id = "deleteDomain",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/domains/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<DomainId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| core_domains::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
