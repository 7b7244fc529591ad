//! Outbound webhook endpoints (appliance.md §12): `/webhooks` CRUD, each endpoint's delivery
//! log, and a test send. The secret signing the deliveries is answered once, when the endpoint
//! is made. What is sent and when is `core::webhooks` and `scheduler::webhooks`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{FromForm, State, delete, get, patch, post};
use serde_json::json;

use super::guards::ProjectAccess;
use super::json::{JsonBody, Small};
use super::pagination;
use crate::clock;
use crate::core::webhooks::{self as core_webhooks, check_events, check_url};
use crate::core::workflows::check_text;
use crate::db::new_id;
use crate::db::webhooks::{self, Endpoint};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::NumberedPage;
use crate::views::webhooks::{Delivery, Endpoint as EndpointView, EndpointFields, TestDelivery};

documented_routes!(list, create, read, update, remove, deliveries, test);

/// Most endpoints per project.
const MAX_ENDPOINTS: usize = 20;

fn find(conn: &rusqlite::Connection, project: &str, id: &str) -> Result<Endpoint, ApiError> {
    webhooks::get(conn, project, id)?.ok_or_else(|| ApiError::not_found("Webhook endpoint not found"))
}

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
    let events = check_events(body.events.as_ref().unwrap_or(&json!(["*"])))?;
    let description = check_text(body.description, "description")?;
    let now = clock::now_ms();
    let endpoint = Endpoint {
        id: new_id(),
        project_id: access.project.id,
        url,
        events,
        enabled: body.enabled.unwrap_or(true),
        description,
        secret: core_webhooks::new_secret(),
        created_at: now,
        updated_at: now,
        ..Endpoint::default()
    };
    let saved = endpoint.clone();
    state
        .db
        .write(move |tx| {
            if webhooks::list(tx, &saved.project_id)?.len() >= MAX_ENDPOINTS {
                return Err(ApiError::bad_request(format!(
                    "a project has at most {MAX_ENDPOINTS} webhook endpoints"
                )));
            }
            Ok::<_, ApiError>(webhooks::insert(tx, &saved)?)
        })
        .await?;
    // The only time the secret is shown.
    Ok(Json(EndpointView { secret: Some(endpoint.secret.clone()), ..EndpointView::from(&endpoint) }))
}

/// Reads an endpoint (never its secret).
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "getWebhook",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoint", body = EndpointView)),
)]
#[get("/webhooks/<id>")]
async fn read(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<Json<EndpointView>, ApiError> {
    let (project, id) = (access.project.id, id.to_string());
    let endpoint = state.db.run(move |conn| find(conn, &project, &id)).await?;
    Ok(Json(EndpointView::from(&endpoint)))
}

/// Changes the fields given.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "updateWebhook",
    request_body = EndpointFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The endpoint as changed", body = EndpointView)),
)]
#[patch("/webhooks/<id>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    body: JsonBody<EndpointFields, Small>,
) -> Result<Json<EndpointView>, ApiError> {
    let body = body.0;
    let url = body.url.as_deref().map(check_url).transpose()?;
    let events = body.events.as_ref().map(check_events).transpose()?;
    let description = body.description.map(|d| check_text(Some(d), "description")).transpose()?;
    let (project, id) = (access.project.id, id.to_string());
    let updated = state
        .db
        .write(move |tx| {
            let mut endpoint = find(tx, &project, &id)?;
            if let Some(url) = url {
                endpoint.url = url;
            }
            if let Some(events) = events {
                endpoint.events = events;
            }
            if let Some(description) = description {
                endpoint.description = description;
            }
            if let Some(enabled) = body.enabled {
                if enabled && !endpoint.enabled {
                    // Enabled again: its failures start over.
                    endpoint.failing_since = None;
                    endpoint.disabled_reason = None;
                }
                endpoint.enabled = enabled;
            }
            endpoint.updated_at = clock::now_ms();
            webhooks::update(tx, &endpoint)?;
            Ok::<_, ApiError>(endpoint)
        })
        .await?;
    Ok(Json(EndpointView::from(&updated)))
}

/// Removes an endpoint and its deliveries.
#[utoipa::path(
    tag = "Webhooks",
    operation_id = "deleteWebhook",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/webhooks/<id>")]
async fn remove(state: &State<AppState>, access: ProjectAccess, id: &str) -> Result<Status, ApiError> {
    let (project, id) = (access.project.id, id.to_string());
    state
        .db
        .write(move |tx| {
            let endpoint = find(tx, &project, &id)?;
            Ok::<_, ApiError>(webhooks::delete(tx, &endpoint.id)?)
        })
        .await?;
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
    params(PageParams),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "A page of deliveries", body = NumberedPage<Delivery>)),
)]
#[get("/webhooks/<id>/deliveries?<params..>")]
async fn deliveries(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
    params: PageParams<'_>,
) -> Result<Json<NumberedPage<Delivery>>, ApiError> {
    let (page, size) = pagination::page_params(params.page, params.page_size, pagination::MAX_LIMIT)?;
    let (project, id) = (access.project.id, id.to_string());
    let (rows, total) = state
        .db
        .run(move |conn| {
            let endpoint = find(conn, &project, &id)?;
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
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 202, description = "Queued", body = TestDelivery)),
)]
#[post("/webhooks/<id>/test")]
async fn test(
    state: &State<AppState>,
    access: ProjectAccess,
    id: &str,
) -> Result<(Status, Json<TestDelivery>), ApiError> {
    let (project, id) = (access.project.id, id.to_string());
    let delivery = state
        .db
        .write(move |tx| {
            let endpoint = find(tx, &project, &id)?;
            if !endpoint.enabled {
                return Err(ApiError::bad_request("the endpoint is disabled: enable it to send a test"));
            }
            let now = clock::now_ms();
            let payload = json!({ "type": "webhook.test", "timestamp": clock::iso(now),
                "data": { "endpointId": endpoint.id, "message": "A test delivery from Tidings" } });
            Ok::<_, ApiError>(core_webhooks::queue(tx, &endpoint, "webhook.test", &payload.to_string(), now)?)
        })
        .await?;
    Ok((Status::Accepted, Json(TestDelivery { delivery_id: delivery, status: "pending".into() })))
}
