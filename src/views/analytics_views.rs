//! The project-wide analytics views named as Plunk v2's newest: links, heatmap,
//! deliverability and audience.

use serde::Serialize;
use utoipa::ToSchema;

use crate::views::campaign_report::LinkReport;

/// `GET /analytics/links`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinksView {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    pub stream: String,
    /// Most clicked by people first, at most 100.
    pub links: Vec<LinkReport>,
}

/// People's opens and clicks in one local weekday and hour.
#[derive(Debug, Serialize, ToSchema)]
pub struct HeatCell {
    /// 0 for Monday to 6 for Sunday.
    pub weekday: i64,
    /// 0 to 23.
    pub hour: i64,
    pub opens: i64,
    pub clicks: i64,
}

/// `GET /analytics/heatmap`: all 168 cells, Monday 0:00 first.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeatmapView {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    pub stream: String,
    /// The zone the weekdays and hours are in.
    pub tz: String,
    pub cells: Vec<HeatCell>,
}

/// Bounces by kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct Bounces {
    pub hard: i64,
    pub soft: i64,
}

/// A receiving provider's delivery.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderDelivery {
    /// `Gmail`, `Outlook`, ... or the domain.
    pub name: String,
    pub domains: Vec<String>,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub bounced: Bounces,
    pub complained: i64,
    pub failed: i64,
}

/// `GET /analytics/deliverability`: mail created in the range and no longer queued.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliverabilityView {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    pub stream: String,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub bounced: Bounces,
    pub complained: i64,
    pub failed: i64,
    /// Most mail first, at most 50.
    pub providers: Vec<ProviderDelivery>,
}

/// The audience's change in one day.
#[derive(Debug, Serialize, ToSchema)]
pub struct AudienceDay {
    #[schema(format = DateTime)]
    pub date: String,
    /// Contacts created.
    pub created: i64,
    /// Contacts who unsubscribed.
    pub unsubscribed: i64,
    /// Addresses and domains added to the suppression list.
    pub suppressed: i64,
}

/// `GET /analytics/audience`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AudienceView {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    /// Contacts now.
    pub total: i64,
    /// Subscribed contacts now.
    pub subscribed: i64,
    /// Every day of the range.
    pub days: Vec<AudienceDay>,
}
