//! Outbound webhook endpoints (appliance.md §12): `/webhooks` CRUD, each endpoint's delivery
//! log, and a test send. The secret signing the deliveries is answered once, when the endpoint
//! is made. What is sent and when is `core::webhooks` and `scheduler::webhooks`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};
use serde_json::json;

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::ids::WebhookId;
use crate::core::webhook_endpoints::{self as endpoints, Changes};
use crate::core::webhooks::{check_events, check_url};
use crate::core::workflows::check_text;
use crate::db::webhooks;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::webhooks::{Delivery, Endpoint as EndpointView, EndpointFields, TestDelivery};

documented_routes!(list, create, read, update, remove, deliveries, test);

/// The project's webhook endpoints.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "listWebhooks",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoints", body = Vec<EndpointView>)),
)]
#[get("/webhooks")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<EndpointView>>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| webhooks::list(conn, &project)).await?;
    Ok(Json(all.iter().map(EndpointView::from).collect()))
}

/// A url deliveries could reach: not a loopback, private or link-local address (unless
/// `[webhooks] allow_private`), 422 on `url` otherwise.
async fn reachable(state: &AppState, url: &str) -> Result<(), ApiError> {
    state.http.may_call(url).await.map_err(|why| ApiError::invalid_field("url", "private_address", why))
}

/// Adds an endpoint (at most 20); the answer shows its signing secret, once.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "createWebhook",
    request_body = EndpointFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoint, with its secret", body = EndpointView)),
)]
#[post("/webhooks", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<EndpointFields, Small>,
) -> Result<Json<EndpointView>, ApiError> {
    let body = body.0;
    let url = check_url(body.url.as_deref().unwrap_or_default())?;
    reachable(state, &url).await?;
    let events = check_events(body.events.as_ref().unwrap_or(&json!(["*"])))?;
    let changes = Changes {
        description: Some(check_text(body.description, "description")?),
        enabled: body.enabled,
        ..Changes::default()
    };
    let project = access.project.id;
    let endpoint = state
        .db
        .write(move |tx| endpoints::create(tx, &project, url, events, changes, clock::now_ms()))
        .await?;
    // The only time the secret is shown.
    Ok(Json(EndpointView { secret: Some(endpoint.secret.clone()), ..EndpointView::from(&endpoint) }))
}

/// Reads an endpoint (never its secret).
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "getWebhook",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoint", body = EndpointView)),
)]
#[get("/webhooks/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WebhookId>,
) -> Result<Json<EndpointView>, ApiError> {
    let id = id?;
    let project = access.project.id;
    let endpoint = state.db.run(move |conn| endpoints::find(conn, &project, &id)).await?;
    Ok(Json(EndpointView::from(&endpoint)))
}

/// Changes the fields given.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "updateWebhook",
    params(("id" = String, Path)),
    request_body = EndpointFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoint as changed", body = EndpointView)),
)]
#[patch("/webhooks/<id>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WebhookId>,
    body: JsonBody<EndpointFields, Small>,
) -> Result<Json<EndpointView>, ApiError> {
    let id = id?;
    let body = body.0;
    let url = body.url.as_deref().map(check_url).transpose()?;
    if let Some(url) = &url {
        reachable(state, url).await?;
    }
    let changes = Changes {
        url,
        events: body.events.as_ref().map(check_events).transpose()?,
        description: body.description.map(|d| check_text(Some(d), "description")).transpose()?,
        enabled: body.enabled,
    };
    let project = access.project.id;
    let updated =
        state.db.write(move |tx| endpoints::update(tx, &project, &id, changes, clock::now_ms())).await?;
    Ok(Json(EndpointView::from(&updated)))
}

/// Removes an endpoint and its deliveries.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "deleteWebhook",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/webhooks/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WebhookId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let project = access.project.id;
    state.db.write(move |tx| endpoints::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}

#[derive(FromForm, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
struct PageParams<'r> {
    /// From 1; default 1.
    #[param(value_type = Option<i64>, minimum = 1)]
    page: Option<&'r str>,
    /// Default 20, at most 100.
    #[field(name = "pageSize")]
    #[param(rename = "pageSize", value_type = Option<i64>, minimum = 1)]
    page_size: Option<&'r str>,
}

/// The endpoint's deliveries, newest first.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "listWebhookDeliveries",
    params(PageParams, ("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of deliveries", body = NumberedPage<Delivery>)),
)]
#[get("/webhooks/<id>/deliveries?<params..>")]
async fn deliveries(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WebhookId>,
    params: PageParams<'_>,
) -> Result<Json<NumberedPage<Delivery>>, ApiError> {
    let id = id?;
    let (page, size) = pagination::page_params(params.page, params.page_size, pagination::MAX_LIMIT)?;
    let project = access.project.id;
    let (rows, total) = state
        .db
        .run(move |conn| {
            let endpoint = endpoints::find(conn, &project, &id)?;
            Ok::<_, ApiError>(webhooks::deliveries(
                conn,
                &endpoint.id,
                (size, pagination::offset(page, size)),
            )?)
        })
        .await?;
    Ok(Json(NumberedPage::new(rows.iter().map(Delivery::from).collect(), total, page, size)))
}

/// Queues a `webhook.test` delivery to the endpoint; it shows in the log like any other.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "testWebhook",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = TestDelivery)),
)]
#[post("/webhooks/<id>/test")]
async fn test(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<WebhookId>,
) -> Result<(Status, Json<TestDelivery>), ApiError> {
    let id = id?;
    let project = access.project.id;
    let delivery = state.db.write(move |tx| endpoints::send_test(tx, &project, &id, clock::now_ms())).await?;
    Ok((Status::Accepted, Json(TestDelivery { delivery_id: delivery, status: "pending".into() })))
}
