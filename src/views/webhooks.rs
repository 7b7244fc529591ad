//! Outbound webhook endpoints and their deliveries.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::webhooks::{Delivery as DeliveryRow, Endpoint as Row};

/// Where the project's events are posted, signed with the endpoint's secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    /// Event names or patterns (`email.*`, `*`).
    pub events: Vec<String>,
    pub enabled: bool,
    pub description: Option<String>,
    /// Since when deliveries fail; after 24 hours of failures the endpoint is disabled.
    #[schema(format = DateTime)]
    pub failing_since: Option<String>,
    pub disabled_reason: Option<String>,
    /// Only when the endpoint is made: the signing secret, shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for Endpoint {
    fn from(e: &Row) -> Self {
        Endpoint {
            id: e.id.clone(),
            url: e.url.clone(),
            events: e.events.clone(),
            enabled: e.enabled,
            description: e.description.clone(),
            failing_since: e.failing_since.map(iso),
            disabled_reason: e.disabled_reason.clone(),
            secret: None,
            created_at: iso(e.created_at),
            updated_at: iso(e.updated_at),
        }
    }
}

/// One event's delivery to an endpoint.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub id: String,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts: i64,
    pub last_status_code: Option<i64>,
    pub last_error: Option<String>,
    /// While `pending`.
    #[schema(format = DateTime)]
    pub next_attempt_at: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub completed_at: Option<String>,
}

impl From<&DeliveryRow> for Delivery {
    fn from(d: &DeliveryRow) -> Self {
        Delivery {
            id: d.id.clone(),
            event_type: d.event_type.clone(),
            status: d.status.clone(),
            attempts: d.attempts,
            last_status_code: d.last_status_code,
            last_error: d.last_error.clone(),
            next_attempt_at: d.next_attempt_at.filter(|_| d.status == "pending").map(iso),
            created_at: iso(d.created_at),
            completed_at: d.completed_at.map(iso),
        }
    }
}

/// The body of `POST /webhooks` (`url` required) and `PATCH /webhooks/{id}` (all optional).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointFields {
    /// `https://` (or `http://`) on a public address.
    pub url: Option<String>,
    /// Event names or patterns; default `["*"]`.
    #[schema(value_type = Option<Vec<String>>)]
    pub events: Option<Value>,
    pub description: Option<String>,
    /// Default `true`; enabling again clears the failure.
    pub enabled: Option<bool>,
}

/// A test delivery queued.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestDelivery {
    pub delivery_id: String,
    /// `pending`.
    pub status: String,
}
