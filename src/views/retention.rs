//! `/retention`: how long a project keeps its data (issue 35, item 1).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::core::retention::Policy;
use crate::db::retention::Periods;

/// Periods in days.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPeriods {
    /// An email's content (body, one-off variables, headers, attachments) and captured
    /// messages; the email, its status and its events stay.
    pub email_content_days: u32,
    /// Events, and the opens and clicks recorded with them; the hourly counts of analytics
    /// stay.
    pub events_days: u32,
    /// Received mail.
    pub inbound_days: u32,
    /// The log of webhook deliveries.
    pub webhook_deliveries_days: u32,
}

impl From<Policy> for RetentionPeriods {
    fn from(p: Policy) -> Self {
        RetentionPeriods {
            email_content_days: p.email_content_days,
            events_days: p.events_days,
            inbound_days: p.inbound_days,
            webhook_deliveries_days: p.webhook_deliveries_days,
        }
    }
}

/// The project's periods: those in force, the server's defaults, and which the project set.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    #[serde(flatten)]
    pub periods: RetentionPeriods,
    /// The server's `[retention]` defaults, in force where the project sets none.
    pub defaults: RetentionPeriods,
    /// The periods the project set itself, by name (`eventsDays`, ...).
    pub custom: Vec<String>,
}

impl Retention {
    pub fn of(defaults: Policy, own: &Periods) -> Retention {
        let custom = [
            ("emailContentDays", own.email_content_days),
            ("eventsDays", own.events_days),
            ("inboundDays", own.inbound_days),
            ("webhookDeliveriesDays", own.webhook_deliveries_days),
        ]
        .into_iter()
        .filter(|(_, days)| days.is_some())
        .map(|(name, _)| name.to_string())
        .collect();
        Retention { periods: defaults.with(own).into(), defaults: defaults.into(), custom }
    }
}

/// `PATCH /retention`: a number of days (1 to 36,500) sets a period, `null` goes back to the
/// server's default, and what is left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetentionChanges {
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<u32>)]
    pub email_content_days: Option<Option<u32>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<u32>)]
    pub events_days: Option<Option<u32>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<u32>)]
    pub inbound_days: Option<Option<u32>>,
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<u32>)]
    pub webhook_deliveries_days: Option<Option<u32>>,
}
