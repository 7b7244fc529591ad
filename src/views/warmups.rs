//! A sender domain's warm-up plan: the body that sets it and the view of where it stands.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::core::warmups::{PlanInput, Status};

/// The body of `PUT /domains/{id}/warmup`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[schema(example = json!({ "startDaily": 50, "targetDaily": 20000, "days": 30 }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WarmupBody {
    /// The first day's volume (1 to 10,000,000).
    pub start_daily: Option<i64>,
    /// The last day's volume, at least `startDaily`.
    pub target_daily: Option<i64>,
    /// Days from the first to the last (2 to 90); after them, no cap.
    pub days: Option<i64>,
    /// The first day (`YYYY-MM-DD` in the project's time zone), today or later; today when
    /// left out.
    pub starts_on: Option<String>,
}

impl From<WarmupBody> for PlanInput {
    fn from(b: WarmupBody) -> Self {
        PlanInput {
            start_daily: b.start_daily,
            target_daily: b.target_daily,
            days: b.days,
            starts_on: b.starts_on,
        }
    }
}

/// One day of a plan.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarmupDay {
    #[schema(format = Date)]
    pub date: String,
    /// What the day allows.
    pub volume: i64,
    /// What the domain sent that day.
    pub sent: i64,
}

/// A sender domain's warm-up plan and where it stands.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WarmupView {
    pub domain_id: String,
    pub start_daily: i64,
    pub target_daily: i64,
    pub days: i64,
    #[schema(format = Date)]
    pub starts_on: String,
    /// Today in the project's time zone.
    #[schema(format = Date)]
    pub today: String,
    /// What today allows; `null` before the plan starts and once it is over (no cap).
    pub allowed_today: Option<i64>,
    pub sent_today: i64,
    pub schedule: Vec<WarmupDay>,
}

impl From<Status> for WarmupView {
    fn from(s: Status) -> Self {
        WarmupView {
            domain_id: s.plan.domain_id,
            start_daily: s.plan.start_daily,
            target_daily: s.plan.target_daily,
            days: s.plan.days,
            starts_on: s.plan.starts_on,
            today: s.today.to_string(),
            allowed_today: s.allowed_today,
            sent_today: s.sent_today,
            schedule: s
                .schedule
                .into_iter()
                .map(|(date, volume, sent)| WarmupDay { date: date.to_string(), volume, sent })
                .collect(),
        }
    }
}
