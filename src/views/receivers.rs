//! What the internal receivers (SES through SNS, Stripe) answer their senders.

use serde::Serialize;
use utoipa::ToSchema;

/// `POST /webhooks/sns`: the message was taken.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct SnsAnswer {
    pub success: bool,
    /// A subscription confirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmed: Option<bool>,
    /// Whether a notification changed an email of this server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    /// The event it recorded: `email.delivered`, `email.bounced` or `email.complained`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<Option<String>>,
}

/// `POST /webhooks/incoming/stripe`: the event was taken (200 for every signed event, so
/// Stripe does not send it again).
#[derive(Debug, Serialize, ToSchema)]
pub struct StripeAnswer {
    pub received: bool,
    /// Whether it changed the project's billing.
    pub applied: bool,
}
