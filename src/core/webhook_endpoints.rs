//! Webhook endpoints (appliance.md §12): the use cases that add, change, remove and test one.
//! What is delivered to them, and when, is [`super::webhooks`].
//!
//! An inbound route's webhook action has an endpoint of its own ([`super::inbound::routes`]):
//! it shows here with its log, and can be tested, enabled again or described, but its URL and
//! events are the route's, and it goes with the route: changing those or deleting it here is
//! 409, naming the route.

use serde_json::json;

use super::error::{Error, Result};
use super::ids::WebhookId;
use super::webhooks;
use crate::clock;
use crate::db::webhooks::{self as rows, Endpoint};
use crate::db::{Tx, inbound};

/// Most endpoints per project.
pub const MAX_ENDPOINTS: usize = 20;

/// An endpoint's settings as checked ([`webhooks::check_url`], [`webhooks::check_events`]);
/// `None` keeps a value.
#[derive(Debug, Default)]
pub struct Changes {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<Option<String>>,
    pub enabled: Option<bool>,
}

/// Endpoint `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &WebhookId) -> Result<Endpoint> {
    rows::get(conn, project, id)?.ok_or_else(|| WebhookId::missing(id))
}

/// Adds an endpoint to `project` with a new signing secret (at most [`MAX_ENDPOINTS`]).
pub fn create(
    tx: &Tx,
    project: &str,
    url: String,
    events: Vec<String>,
    changes: Changes,
    now: i64,
) -> Result<Endpoint> {
    if rows::list(tx, project)?.len() >= MAX_ENDPOINTS {
        return Err(Error::malformed(format!("a project has at most {MAX_ENDPOINTS} webhook endpoints")));
    }
    let endpoint = Endpoint {
        id: WebhookId::fresh().into(),
        project_id: project.to_string(),
        url,
        events,
        enabled: changes.enabled.unwrap_or(true),
        description: changes.description.flatten(),
        secret: webhooks::new_secret(),
        created_at: now,
        updated_at: now,
        ..Endpoint::default()
    };
    rows::insert(tx, &endpoint)?;
    Ok(endpoint)
}

/// Refuses `what` on an endpoint an inbound route made.
fn not_a_routes(tx: &Tx, endpoint: &Endpoint, what: &str) -> Result<()> {
    match inbound::route_with_endpoint(tx, &endpoint.project_id, &endpoint.id)? {
        Some(route) => Err(Error::conflict(format!(
            "this endpoint belongs to the inbound route for {}@{} ({}): {what} the route instead",
            route.local_part, route.domain, route.id
        ))),
        None => Ok(()),
    }
}

/// Changes endpoint `id`; enabled again, its failures start over.
pub fn update(tx: &Tx, project: &str, id: &WebhookId, changes: Changes, now: i64) -> Result<Endpoint> {
    let mut endpoint = find(tx, project, id)?;
    if changes.url.is_some() || changes.events.is_some() {
        not_a_routes(tx, &endpoint, "change")?;
    }
    if let Some(url) = changes.url {
        endpoint.url = url;
    }
    if let Some(events) = changes.events {
        endpoint.events = events;
    }
    if let Some(description) = changes.description {
        endpoint.description = description;
    }
    if let Some(enabled) = changes.enabled {
        if enabled && !endpoint.enabled {
            endpoint.failing_since = None;
            endpoint.disabled_reason = None;
        }
        endpoint.enabled = enabled;
    }
    endpoint.updated_at = now;
    rows::update(tx, &endpoint)?;
    Ok(endpoint)
}

/// Removes endpoint `id` and its deliveries.
pub fn remove(tx: &Tx, project: &str, id: &WebhookId) -> Result<()> {
    let endpoint = find(tx, project, id)?;
    not_a_routes(tx, &endpoint, "delete")?;
    rows::delete(tx, &endpoint.id)?;
    Ok(())
}

/// Queues a `webhook.test` delivery to endpoint `id`, which must be enabled; the delivery's id.
pub fn send_test(tx: &Tx, project: &str, id: &WebhookId, now: i64) -> Result<String> {
    let endpoint = find(tx, project, id)?;
    if !endpoint.enabled {
        return Err(Error::malformed("the endpoint is disabled: enable it to send a test"));
    }
    let payload = json!({ "type": "webhook.test", "timestamp": clock::iso(now),
        "data": { "endpointId": endpoint.id, "message": "A test delivery from Tidings" } });
    Ok(webhooks::queue(tx, &endpoint, "webhook.test", &payload.to_string(), now)?)
}
