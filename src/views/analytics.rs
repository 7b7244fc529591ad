//! Activity and analytics: the feed, counts by activity type, time series, top events and the
//! figures of sent campaigns.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::views::campaigns::CampaignStats;
use crate::views::events::Event;

/// An event in the activity feed, with its activity type.
#[derive(Debug, Serialize, ToSchema)]
pub struct Activity {
    #[serde(flatten)]
    pub event: Event,
    /// `send`, `delivery`, `open`, `click`, `bounce`, `complaint`, `failure`, `inbound`,
    /// `subscribe`, `unsubscribe`, `event` (tracked by the app) or `other`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// `GET /activity/types`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityTypes {
    pub types: Vec<ActivityType>,
}

/// An activity type, the event it is, and how many the last 30 days had.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityType {
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The event name; `*` for `event`, every event the app tracked.
    pub event: &'static str,
    pub count: i64,
}

/// Counts per activity type over a range, with rates per send.
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityStats {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    /// By activity type, every type named.
    pub counts: BTreeMap<&'static str, i64>,
    pub rates: ActivityRates,
}

/// Opens, clicks, bounces and complaints per send (0 without sends).
#[derive(Debug, Serialize, ToSchema)]
pub struct ActivityRates {
    pub open: f64,
    pub click: f64,
    pub bounce: f64,
    pub complaint: f64,
}

/// Events recorded in the last hours.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecentCount {
    pub count: i64,
    pub hours: i64,
    /// The start of the first hour counted.
    #[schema(format = DateTime)]
    pub since: String,
}

/// What is due: scheduled campaigns and waiting workflow executions, soonest first (20 each).
#[derive(Debug, Serialize, ToSchema)]
pub struct Upcoming {
    pub campaigns: Vec<UpcomingCampaign>,
    pub executions: Vec<UpcomingExecution>,
}

/// A scheduled campaign.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpcomingCampaign {
    pub id: String,
    pub name: String,
    #[schema(format = DateTime)]
    pub scheduled_for: Option<String>,
}

/// A workflow execution waiting for its delay or timeout.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpcomingExecution {
    pub execution_id: String,
    pub workflow_id: String,
    pub workflow_name: String,
    pub contact_id: String,
    #[schema(format = DateTime)]
    pub due_at: String,
}

impl From<crate::db::campaigns::Campaign> for UpcomingCampaign {
    fn from(c: crate::db::campaigns::Campaign) -> Self {
        UpcomingCampaign { id: c.id, name: c.name, scheduled_for: c.scheduled_for.map(iso) }
    }
}

impl From<crate::db::executions::Waiting> for UpcomingExecution {
    fn from(d: crate::db::executions::Waiting) -> Self {
        UpcomingExecution {
            execution_id: d.execution_id,
            workflow_id: d.workflow_id,
            workflow_name: d.workflow_name,
            contact_id: d.contact_id,
            due_at: iso(d.due_at),
        }
    }
}

/// Mail figures per day or hour, every bucket present.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimeSeries {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    /// `day` or `hour`.
    pub interval: &'static str,
    pub series: Vec<SeriesPoint>,
}

/// One bucket of a time series.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct SeriesPoint {
    /// The bucket's start.
    #[schema(format = DateTime)]
    pub date: String,
    pub sent: i64,
    pub delivered: i64,
    pub opened: i64,
    pub clicked: i64,
    pub bounced: i64,
    pub complained: i64,
}

/// The most frequent event names over a range.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopEvents {
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
    pub events: Vec<TopEvent>,
}

/// An event name and how many events had it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopEvent {
    pub name: String,
    pub count: i64,
    /// Its activity type.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// A sent (or sending) campaign's figures, with its name.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignFigures {
    #[serde(flatten)]
    pub stats: CampaignStats,
    pub name: String,
}

/// `GET /analytics/top-campaigns`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopCampaigns {
    /// What they are ranked by.
    pub metric: String,
    pub campaigns: Vec<CampaignFigures>,
}

/// `GET /analytics/campaign-stats`: newest first, at most 500.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignFiguresList {
    pub campaigns: Vec<CampaignFigures>,
}
