//! Billing: monthly caps per category, what the month used, and with Stripe configured, the
//! subscription, checkout, portal and invoices.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::billing::{self, Caps, Use};

/// A project's monthly caps by category; `null` is no cap.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({ "transactional": 10000, "marketing": 50000, "workflow": null, "events": 1000000 }))]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Emails queued by `/v1/send`.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub transactional: Option<i64>,
    /// Campaign emails.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub marketing: Option<i64>,
    /// Emails sent by workflows.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub workflow: Option<i64>,
    /// Events tracked by the app.
    #[schema(minimum = 0, maximum = 1_000_000_000_000_i64)]
    pub events: Option<i64>,
}

/// What the project used this month (UTC), by category.
#[derive(Debug, Serialize, ToSchema)]
pub struct Consumption {
    pub period: Period,
    pub usage: MonthlyUsage,
    /// Only with billing on: the Stripe subscription, `null` before a checkout.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<SubscriptionState>)]
    pub subscription: Option<Option<SubscriptionState>>,
}

/// A calendar month: its first millisecond, and the next month's.
#[derive(Debug, Serialize, ToSchema)]
pub struct Period {
    #[schema(format = DateTime)]
    pub start: String,
    #[schema(format = DateTime)]
    pub end: String,
}

/// Each category's use.
#[derive(Debug, Serialize, ToSchema)]
pub struct MonthlyUsage {
    pub transactional: CategoryUsage,
    pub marketing: CategoryUsage,
    pub workflow: CategoryUsage,
    pub events: CategoryUsage,
}

/// One category's use, cap and what is left (`null` without a cap).
#[derive(Debug, Serialize, ToSchema)]
pub struct CategoryUsage {
    pub used: i64,
    pub limit: Option<i64>,
    pub remaining: Option<i64>,
}

/// The project's subscription as Stripe last reported it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubscriptionState {
    /// Stripe's status (`active`, `past_due`, `canceled`…); `null` until Stripe reports one.
    pub status: Option<String>,
}

/// `POST /users/@me/projects/{projectId}/checkout`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckoutBody {
    /// One of `[billing] price_ids`; the first by default.
    pub price_id: Option<String>,
}

/// A Stripe Checkout session: send the user to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CheckoutSession {
    pub id: Option<String>,
    pub url: Option<String>,
}

/// A Stripe billing portal session: send the user to `url`.
#[derive(Debug, Serialize, ToSchema)]
pub struct PortalSession {
    pub url: Option<String>,
}

/// The project's invoices from Stripe, newest first (none before a checkout).
#[derive(Debug, Serialize, ToSchema)]
pub struct Invoices {
    pub data: Vec<Invoice>,
}

/// An invoice, as Stripe has it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invoice {
    pub id: Option<String>,
    pub number: Option<String>,
    pub status: Option<String>,
    pub currency: Option<String>,
    /// In the currency's smallest unit (cents).
    pub amount_due: Option<i64>,
    pub amount_paid: Option<i64>,
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    /// Stripe's page for it.
    pub url: Option<String>,
    pub pdf: Option<String>,
}

impl From<Caps> for Limits {
    fn from(c: Caps) -> Self {
        Limits {
            transactional: c.transactional,
            marketing: c.marketing,
            workflow: c.workflow,
            events: c.events,
        }
    }
}

impl From<Use> for CategoryUsage {
    fn from(u: Use) -> Self {
        CategoryUsage { used: u.used, limit: u.limit, remaining: u.remaining }
    }
}

impl From<billing::Consumption> for Consumption {
    /// This month's use; `subscription` is added with billing on.
    fn from(c: billing::Consumption) -> Self {
        let u = c.usage;
        Consumption {
            period: Period { start: iso(c.start), end: iso(c.end) },
            usage: MonthlyUsage {
                transactional: u.transactional.into(),
                marketing: u.marketing.into(),
                workflow: u.workflow.into(),
                events: u.events.into(),
            },
            subscription: None,
        }
    }
}
