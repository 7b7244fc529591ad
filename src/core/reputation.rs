//! Sender reputation (issue 14): each project's hard-bounce and complaint rates over a rolling
//! window (`[reputation]`), read from the per-day counters the database keeps as emails change
//! (migration V14), and the automatic suspension when a rate goes above its threshold: the
//! project is disabled (sends answer 403 `PROJECT_DISABLED`) with the reason recorded, until an
//! owner or admin enables it again.

use crate::config::ReputationConfig;
use crate::db::Tx;
use crate::db::reputation::{self as suspensions, Suspension};

const DAY_MS: i64 = 86_400_000;

/// A project's figures over the window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rates {
    pub sent: i64,
    pub hard_bounces: i64,
    pub complaints: i64,
}

impl Rates {
    pub fn bounce_rate(&self) -> f64 {
        if self.sent == 0 { 0.0 } else { self.hard_bounces as f64 / self.sent as f64 }
    }

    pub fn complaint_rate(&self) -> f64 {
        if self.sent == 0 { 0.0 } else { self.complaints as f64 / self.sent as f64 }
    }
}

/// The first day of the window that ends today.
fn window_start(config: &ReputationConfig, now: i64) -> i64 {
    (now / DAY_MS - i64::from(config.window_days.max(1)) + 1) * DAY_MS
}

/// The project's figures over the window ending now.
pub fn rates(conn: &Tx, project: &str, config: &ReputationConfig, now: i64) -> crate::db::Result<Rates> {
    let (sent, hard_bounces, complaints) =
        suspensions::totals_since(conn, project, window_start(config, now))?;
    Ok(Rates { sent, hard_bounces, complaints })
}

/// Why the project should be suspended, if a rate is above its threshold with enough volume.
pub fn breach(rates: &Rates, config: &ReputationConfig) -> Option<String> {
    if rates.sent < i64::from(config.min_sent) {
        return None;
    }
    let percent = |r: f64| format!("{:.2} %", r * 100.0);
    let window = format!("the last {} days", config.window_days);
    if rates.complaint_rate() > config.complaint_rate {
        return Some(format!(
            "complaint rate {} over {window} ({} of {} sent) is above {}",
            percent(rates.complaint_rate()),
            rates.complaints,
            rates.sent,
            percent(config.complaint_rate)
        ));
    }
    if rates.bounce_rate() > config.bounce_rate {
        return Some(format!(
            "hard-bounce rate {} over {window} ({} of {} sent) is above {}",
            percent(rates.bounce_rate()),
            rates.hard_bounces,
            rates.sent,
            percent(config.bounce_rate)
        ));
    }
    None
}

/// After a bounce or complaint was recorded: suspends the project when a rate is now above its
/// threshold and it is not disabled already. Returns the reason when it suspended it; the
/// caller forgets cached keys once this commits.
pub fn check(
    conn: &Tx,
    project: &str,
    config: &ReputationConfig,
    now: i64,
) -> crate::db::Result<Option<String>> {
    if !config.suspend {
        return Ok(None);
    }
    let rates = rates(conn, project, config, now)?;
    let Some(reason) = breach(&rates, config) else { return Ok(None) };
    let figures = (rates.sent, rates.hard_bounces, rates.complaints);
    if !suspensions::suspend(conn, project, &reason, figures, now)? {
        return Ok(None);
    }
    // Its keys stop working once this commits.
    crate::db::effects::wake(crate::db::effects::Wake::Keys);
    tracing::warn!(project, "project suspended: {reason}");
    Ok(Some(reason))
}

/// Ends the project's open suspension (it was enabled again).
pub fn lift(conn: &Tx, project: &str, now: i64) -> crate::db::Result<()> {
    suspensions::lift(conn, project, now)
}

/// How a project's reputation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// A rate above half its threshold, with enough volume.
    Warning,
    Suspended,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warning => "warning",
            Status::Suspended => "suspended",
        }
    }
}

/// Suspensions the security state lists.
pub const LISTED_SUSPENSIONS: usize = 20;

/// The security state the two security endpoints answer.
#[derive(Debug, Clone)]
pub struct Security {
    pub project_id: String,
    pub status: Status,
    pub disabled: bool,
    /// The open suspension, while suspended.
    pub open: Option<Suspension>,
    /// The window: its days, its first millisecond, and now.
    pub window: (u32, i64, i64),
    pub rates: Rates,
    pub thresholds: ReputationConfig,
    /// The latest [`LISTED_SUSPENSIONS`], newest first.
    pub suspensions: Vec<Suspension>,
}

/// The security state: the window's figures, the thresholds, whether sending is suspended, and
/// the recent suspensions.
pub fn state(
    conn: &Tx,
    project: &str,
    disabled: bool,
    config: &ReputationConfig,
    now: i64,
) -> crate::db::Result<Security> {
    let r = rates(conn, project, config, now)?;
    let suspensions = suspensions::recent(conn, project, LISTED_SUSPENSIONS)?;
    let open = suspensions.first().filter(|s| s.lifted_at.is_none() && disabled).cloned();
    let warning = r.sent >= i64::from(config.min_sent)
        && (r.bounce_rate() > config.bounce_rate / 2.0 || r.complaint_rate() > config.complaint_rate / 2.0);
    let status = if open.is_some() {
        Status::Suspended
    } else if warning {
        Status::Warning
    } else {
        Status::Ok
    };
    Ok(Security {
        project_id: project.to_string(),
        status,
        disabled,
        open,
        window: (config.window_days, window_start(config, now), now),
        rates: r,
        thresholds: config.clone(),
        suspensions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_breach_needs_volume_and_a_rate_above_its_threshold() {
        let config = ReputationConfig::default();
        let at = |sent, hard_bounces, complaints| breach(&Rates { sent, hard_bounces, complaints }, &config);
        assert_eq!(at(199, 100, 100), None, "below the minimum volume");
        assert_eq!(at(1000, 100, 5), None, "exactly at the thresholds");
        assert!(at(1000, 101, 0).unwrap().starts_with("hard-bounce rate 10.10 %"));
        assert!(at(1000, 0, 6).unwrap().starts_with("complaint rate 0.60 %"));
        assert_eq!(window_start(&config, 10 * DAY_MS + 5), 4 * DAY_MS, "today and the six days before");
    }
}
