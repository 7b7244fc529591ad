//! `[retention]`: how long the data of mail and events is kept (issue 35). Each project may keep
//! its own periods (`PATCH /retention`); these are the defaults.

use serde::{Deserialize, Serialize};

/// `[retention]`, in days.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// An email's content (body, one-off variables, headers, attachments) and the captured
    /// messages of the outbox; the email row, its status and its events stay.
    pub email_content_days: u32,
    /// Events, and the opens and clicks recorded with them; the hourly counts analytics read
    /// are kept for ever.
    pub events_days: u32,
    /// Received mail (its record and stored content).
    pub inbound_days: u32,
    /// The log of webhook deliveries that are over.
    pub webhook_deliveries_days: u32,
    /// How often the pruning runs, in seconds.
    pub interval_secs: u32,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            email_content_days: 30,
            events_days: 365,
            inbound_days: 30,
            webhook_deliveries_days: 30,
            interval_secs: 3600,
        }
    }
}
