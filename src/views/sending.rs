//! `/sending-settings`: a project's time zone and the quiet hours and days when its marketing
//! mail waits (issue 34, item 3).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::core::delivery_windows::{DAYS, minute_text};
use crate::db::sending::Settings;

/// From `start` to `end` each day, as `HH:MM` in each contact's time zone (over midnight when
/// `start` is later than `end`).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    #[schema(example = "21:00")]
    pub start: String,
    #[schema(example = "08:00")]
    pub end: String,
}

/// When the project's marketing mail may go.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendingSettings {
    /// The IANA time zone of contacts without their own `data.timezone`.
    #[schema(example = "Europe/Berlin")]
    pub timezone: String,
    /// When marketing mail waits each day; `null`: never.
    pub quiet_hours: Option<QuietHours>,
    /// Days marketing mail waits all day: `monday` to `sunday`.
    pub quiet_days: Vec<String>,
}

impl From<&Settings> for SendingSettings {
    fn from(s: &Settings) -> Self {
        SendingSettings {
            timezone: s.timezone.clone(),
            quiet_hours: s
                .quiet_hours
                .map(|(start, end)| QuietHours { start: minute_text(start), end: minute_text(end) }),
            quiet_days: DAYS
                .iter()
                .enumerate()
                .filter(|(i, _)| s.quiet_days & (1 << i) != 0)
                .map(|(_, d)| d.to_string())
                .collect(),
        }
    }
}

/// `PATCH /sending-settings`: what is left out stays.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendingSettingsChanges {
    pub timezone: Option<String>,
    /// `null` ends the quiet hours.
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<QuietHours>)]
    pub quiet_hours: Option<Option<QuietHours>>,
    pub quiet_days: Option<Vec<String>>,
}
