//! `[limits]` and `[reputation]`: what one project may use, and when its mail is stopped.

use serde::{Deserialize, Serialize};

/// A mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// `[limits]`: request rates and body sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Per project, over every endpoint reached with an API key (public keys may use 80 %);
    /// also per dashboard user.
    pub requests_per_minute: u32,
    pub idempotency_ttl_hours: u32,
    pub attachment_bytes: u64,
    /// Also the cap on the JSON bodies of `/v1/send` and templates.
    pub message_bytes: u64,
    pub csv_bytes: u64,
    pub upload_bytes: u64,
    /// All the images one project may keep (`POST /uploads/image`), so no key can fill the disk.
    pub upload_total_bytes: u64,
    /// Sender domains one project may have (each costs an RSA key generation).
    pub domains_per_project: u32,
    /// Custom fields one project's catalogue may hold: a write that would add one more is 422,
    /// so no key can grow the catalogue, and every list made from it, without bound.
    pub fields_per_project: u32,
    /// Event names one project may track (the service's own `email.*`, `contact.*` and
    /// `segment.*` aside): tracking one more is 422.
    pub event_names_per_project: u32,
    /// Executions one workflow may start for one contact in an hour; an event past it starts
    /// nothing (allowReentry or not), so a workflow that triggers itself stops.
    pub workflow_runs_per_contact_hour: u32,
    /// Executions one contact may have started in an hour by events that workflows emitted
    /// (a step's subscription change, a workflow email's events), so workflows that trigger
    /// one another stop.
    pub chained_runs_per_contact_hour: u32,
    /// Memory all JSON bodies being read and parsed at once may take, as the server reckons it
    /// from their declared lengths (appliance.md §13): a body past what is left waits for it.
    pub body_memory_bytes: u64,
    /// Submissions one signup form takes in an hour, from everyone (429 past it).
    pub form_submissions_per_form_hour: u32,
    /// Submissions to signup forms one address may make in an hour (429 past it).
    pub form_submissions_per_address_hour: u32,
    /// Least time between loading a form and sending it, in milliseconds: faster is a script.
    pub form_min_fill_ms: u32,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            requests_per_minute: 1000,
            idempotency_ttl_hours: 24,
            attachment_bytes: 10 * MIB,
            message_bytes: 40 * MIB,
            csv_bytes: 5 * MIB,
            upload_bytes: 5 * MIB,
            upload_total_bytes: 1024 * MIB,
            domains_per_project: 50,
            fields_per_project: 1000,
            event_names_per_project: 10_000,
            workflow_runs_per_contact_hour: 60,
            chained_runs_per_contact_hour: 100,
            body_memory_bytes: 512 * MIB,
            form_submissions_per_form_hour: 50_000,
            form_submissions_per_address_hour: 20,
            form_min_fill_ms: 3_000,
        }
    }
}

/// `[reputation]`: bounce and complaint rates per project over a rolling window, and the
/// automatic suspension above them (SES's own review thresholds by default).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReputationConfig {
    /// Suspend a project (disable it) when a rate goes above its threshold.
    pub suspend: bool,
    /// The rolling window, in days.
    pub window_days: u32,
    /// Hard bounces per sent email above which a project is suspended.
    pub bounce_rate: f64,
    /// Complaints per sent email above which a project is suspended.
    pub complaint_rate: f64,
    /// Emails sent within the window before the rates count.
    pub min_sent: u32,
}

impl Default for ReputationConfig {
    fn default() -> Self {
        ReputationConfig {
            suspend: true,
            window_days: 7,
            bounce_rate: 0.10,
            complaint_rate: 0.005,
            min_sent: 200,
        }
    }
}
