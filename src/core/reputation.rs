//! Sender reputation (issue 14): each project's hard-bounce and complaint rates over a rolling
//! window (`[reputation]`), read from the per-day counters the database keeps as emails change
//! (migration V14), and the automatic suspension when a rate goes above its threshold: the
//! project is disabled (sends answer 403 `PROJECT_DISABLED`) with the reason recorded, until an
//! owner or admin enables it again.

use rusqlite::{Connection, params};

use crate::clock;
use crate::config::ReputationConfig;
use crate::db::new_id;
use crate::views::projects::{Security, Suspension, Thresholds, Window};

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
pub fn rates(
    conn: &Connection,
    project: &str,
    config: &ReputationConfig,
    now: i64,
) -> crate::db::Result<Rates> {
    Ok(conn
        .prepare_cached(
            "SELECT coalesce(sum(sent), 0), coalesce(sum(hard_bounces), 0), coalesce(sum(complaints), 0)
         FROM sending_days WHERE project_id = ?1 AND day >= ?2",
        )?
        .query_row(params![project, window_start(config, now)], |r| {
            Ok(Rates { sent: r.get(0)?, hard_bounces: r.get(1)?, complaints: r.get(2)? })
        })?)
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
    conn: &Connection,
    project: &str,
    config: &ReputationConfig,
    now: i64,
) -> crate::db::Result<Option<String>> {
    if !config.suspend {
        return Ok(None);
    }
    let rates = rates(conn, project, config, now)?;
    let Some(reason) = breach(&rates, config) else { return Ok(None) };
    let disabled = conn.execute(
        "UPDATE projects SET disabled = 1, updated_at = ?2 WHERE id = ?1 AND disabled = 0",
        params![project, now],
    )?;
    if disabled == 0 {
        return Ok(None);
    }
    conn.execute(
        "INSERT INTO suspensions (id, project_id, reason, sent, hard_bounces, complaints, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![new_id(), project, reason, rates.sent, rates.hard_bounces, rates.complaints, now],
    )?;
    // Its keys stop working once this commits.
    crate::db::effects::wake(crate::db::effects::Wake::Keys);
    tracing::warn!(project, "project suspended: {reason}");
    Ok(Some(reason))
}

/// Ends the project's open suspension (it was enabled again).
pub fn lift(conn: &Connection, project: &str, now: i64) -> crate::db::Result<()> {
    conn.execute(
        "UPDATE suspensions SET lifted_at = ?2 WHERE project_id = ?1 AND lifted_at IS NULL",
        params![project, now],
    )?;
    Ok(())
}

/// The security state the two security endpoints answer: the window's figures, the thresholds,
/// whether sending is suspended, and the recent suspensions.
pub fn state(
    conn: &Connection,
    project: &str,
    disabled: bool,
    config: &ReputationConfig,
    now: i64,
) -> crate::db::Result<Security> {
    let r = rates(conn, project, config, now)?;
    let suspensions: Vec<Suspension> = conn
        .prepare_cached(
            "SELECT id, reason, sent, hard_bounces, complaints, created_at, lifted_at FROM suspensions
             WHERE project_id = ?1 ORDER BY created_at DESC LIMIT 20",
        )?
        .query_map([project], |row| {
            Ok(Suspension {
                id: row.get(0)?,
                reason: row.get(1)?,
                sent: row.get(2)?,
                hard_bounces: row.get(3)?,
                complaints: row.get(4)?,
                created_at: clock::iso(row.get(5)?),
                lifted_at: row.get::<_, Option<i64>>(6)?.map(clock::iso),
            })
        })?
        .collect::<Result<_, _>>()?;
    let open = suspensions.first().filter(|s| s.lifted_at.is_none() && disabled).cloned();
    let warning = r.sent >= i64::from(config.min_sent)
        && (r.bounce_rate() > config.bounce_rate / 2.0 || r.complaint_rate() > config.complaint_rate / 2.0);
    let status = if open.is_some() {
        "suspended"
    } else if warning {
        "warning"
    } else {
        "ok"
    };
    Ok(Security {
        project_id: project.to_string(),
        status,
        disabled,
        suspension: open,
        window: Window {
            days: config.window_days,
            from: clock::iso(window_start(config, now)),
            to: clock::iso(now),
        },
        sent: r.sent,
        hard_bounces: r.hard_bounces,
        complaints: r.complaints,
        bounce_rate: r.bounce_rate(),
        complaint_rate: r.complaint_rate(),
        thresholds: Thresholds {
            bounce_rate: config.bounce_rate,
            complaint_rate: config.complaint_rate,
            min_sent: config.min_sent,
            suspend: config.suspend,
        },
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
