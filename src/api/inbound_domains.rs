//! Inbound domains and routes (issue 31): `/inbound-domains` and `/inbound-routes`. The
//! listener is `listeners::smtp::inbound`; what receiving does is `core::inbound`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::domains as sender_domains;
use crate::core::ids::{InboundDomainId, InboundRouteId};
use crate::core::inbound::{self, routes};
use crate::db::inbound as rows;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::inbound::{InboundDomain, InboundRoute, NewInboundDomain, NewInboundRoute};

documented_routes!(
    create_domain,
    list_domains,
    verify_domain,
    remove_domain,
    list_routes,
    create_route,
    update_route,
    remove_route
);

fn host(state: &AppState) -> String {
    state.config.inbound_host()
}

/// Adds a domain to receive mail for; publish its MX and ownership records, then verify it.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "createInboundDomain",
    request_body = NewInboundDomain,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domain and the records to publish", body = InboundDomain)),
)]
#[post("/inbound-domains", data = "<body>")]
async fn create_domain(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewInboundDomain, Small>,
) -> Result<Json<InboundDomain>, ApiError> {
    let name =
        body.0.domain.ok_or_else(|| ApiError::invalid_field("domain", "required", "domain is required"))?;
    let name = sender_domains::normalize(&name)?;
    let interval = i64::from(state.config.dns.domain_check_interval_secs) * 1000;
    let domain = inbound::new_domain(&access.project.id, &name, interval);
    let (stored, cap) = (domain.clone(), state.config.inbound.domains_per_project);
    state.db.write(move |tx| inbound::add(tx, &stored, cap)).await?;
    Ok(Json(InboundDomain::new(&domain, &host(state))))
}

/// The project's inbound domains, oldest first.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "listInboundDomains",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domains", body = Vec<InboundDomain>)),
)]
#[get("/inbound-domains")]
async fn list_domains(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<Vec<InboundDomain>>, ApiError> {
    let project = access.project.id;
    let list = state.db.run(move |conn| Ok::<_, ApiError>(rows::domains(conn, &project)?)).await?;
    let host = host(state);
    Ok(Json(list.iter().map(|d| InboundDomain::new(d, &host)).collect()))
}

/// Looks the domain's records up in DNS now and saves what was found.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "verifyInboundDomain",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The domain as checked", body = InboundDomain)),
)]
#[get("/inbound-domains/<id>/verify")]
async fn verify_domain(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundDomainId>,
) -> Result<Json<InboundDomain>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let domain = state.db.run(move |conn| inbound::find(conn, &project, &id)).await?;
    let (host, interval) = (host(state), state.config.dns.domain_check_interval_secs);
    let checked = inbound::check_and_save(&state.dns, &state.db, (&host, interval), domain).await?;
    Ok(Json(InboundDomain::new(&checked, &host)))
}

/// Removes a domain with its routes (and the webhook endpoints they made); its mail is refused
/// from then on.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "deleteInboundDomain",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/inbound-domains/<id>")]
async fn remove_domain(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundDomainId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| inbound::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

/// The project's routes, oldest first.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "listInboundRoutes",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The routes", body = Vec<InboundRoute>)),
)]
#[get("/inbound-routes")]
async fn list_routes(
    state: &State<AppState>,
    access: ProjectAccess,
) -> Result<Json<Vec<InboundRoute>>, ApiError> {
    let project = access.project.id;
    let list = state.db.run(move |conn| Ok::<_, ApiError>(rows::routes(conn, &project)?)).await?;
    Ok(Json(list.iter().map(InboundRoute::from).collect()))
}

/// Makes a route: what becomes of mail to an address (or `*@domain`) of an inbound domain.
#[utoipa::path(
    tag = "Inbound",
    operation_id = "createInboundRoute",
    request_body = NewInboundRoute,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The route", body = InboundRoute)),
)]
#[post("/inbound-routes", data = "<body>")]
async fn create_route(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<NewInboundRoute, Small>,
) -> Result<Json<InboundRoute>, ApiError> {
    let asked = routes::check(body.0.matching.as_deref(), body.0.actions.as_ref())?;
    let (project, cap) = (access.project.id, state.config.inbound.routes_per_project);
    let route = state.db.write(move |tx| routes::create(tx, &project, asked, cap, clock::now_ms())).await?;
    Ok(Json(InboundRoute::from(&route)))
}

/// Replaces a route's match and actions (both are required, as when it was made).
#[utoipa::path(
    tag = "Inbound",
    operation_id = "updateInboundRoute",
    params(("id" = String, Path)),
    request_body = NewInboundRoute,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The route", body = InboundRoute)),
)]
#[patch("/inbound-routes/<id>", data = "<body>")]
async fn update_route(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundRouteId>,
    body: JsonBody<NewInboundRoute, Small>,
) -> Result<Json<InboundRoute>, ApiError> {
    let id = id?;
    let asked = routes::check(body.0.matching.as_deref(), body.0.actions.as_ref())?;
    let project = access.project.id;
    let route = state.db.write(move |tx| routes::update(tx, &project, &id, asked, clock::now_ms())).await?;
    Ok(Json(InboundRoute::from(&route)))
}

/// Deletes a route (and the webhook endpoints it made).
#[utoipa::path(
    tag = "Inbound",
    operation_id = "deleteInboundRoute",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/inbound-routes/<id>")]
async fn remove_route(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<InboundRouteId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| routes::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
