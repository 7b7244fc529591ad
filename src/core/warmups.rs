//! Warm-up plans (issue 34, item 4): a new sender domain sends a small volume on its first day
//! and more each day, growing geometrically from `startDaily` to `targetDaily` over `days` days;
//! once a day's volume is sent, its marketing mail waits for the next day (in the project's time
//! zone). Transactional mail is never held (a password reset cannot wait a day) but counts
//! toward the day's volume.
//!
//! What was sent each day is counted in the transaction that records each send
//! (`db::warmups`); the delivery worker reserves a send before it hands a message over
//! ([`Ledger`]), so messages in flight count too and a day's volume is held exactly.

use std::collections::HashMap;
use std::sync::Mutex;

use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde_json::json;

use super::error::{Error, FieldError, Result};
use super::ids::DomainId;
use crate::db::Tx;
use crate::db::domains::Domain;
use crate::db::warmups::{self, Plan};

/// The longest plan, in days.
pub const MAX_DAYS: i64 = 90;
/// The largest daily volume a plan may name.
pub const MAX_DAILY: i64 = 10_000_000;

/// A plan as a client gives it.
#[derive(Debug, Default, Clone)]
pub struct PlanInput {
    pub start_daily: Option<i64>,
    pub target_daily: Option<i64>,
    pub days: Option<i64>,
    pub starts_on: Option<String>,
}

fn within(field: &str, value: Option<i64>, min: i64, max: i64) -> Result<i64> {
    let value = value.ok_or_else(|| Error::invalid(field, "required", format!("{field} is required")))?;
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    Err(Error::Invalid(vec![
        FieldError::new(
            field,
            if value < min { "too_small" } else { "too_big" },
            format!("{field} is {min} to {max}"),
        )
        .received(json!(value)),
    ]))
}

/// Checks a plan for `domain`, starting `today` (in the project's zone) unless it names a later
/// day.
pub fn check(domain: &Domain, input: PlanInput, today: Date, now: i64) -> Result<Plan> {
    let start_daily = within("startDaily", input.start_daily, 1, MAX_DAILY)?;
    let target_daily = within("targetDaily", input.target_daily, start_daily, MAX_DAILY)?;
    let days = within("days", input.days, 2, MAX_DAYS)?;
    let starts_on = match input.starts_on.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => today,
        Some(text) => {
            let bad = || {
                Error::Invalid(vec![
                    FieldError::new(
                        "startsOn",
                        "invalid_date",
                        "startsOn is a date such as 2027-03-01, today or later",
                    )
                    .received(json!(text)),
                ])
            };
            let day: Date = text.parse().map_err(|_| bad())?;
            if day < today {
                return Err(bad());
            }
            day
        }
    };
    Ok(Plan {
        domain_id: domain.id.clone(),
        project_id: domain.project_id.clone(),
        start_daily,
        target_daily,
        days,
        starts_on: starts_on.to_string(),
        created_at: now,
    })
}

/// The volume of day `n` of a plan (0: its first day), `None` once the plan is over.
pub fn volume(plan: &Plan, n: i64) -> Option<i64> {
    if n < 0 || n >= plan.days {
        return None;
    }
    let (start, target) = (plan.start_daily as f64, plan.target_daily as f64);
    let grown = start * (target / start).powf(n as f64 / (plan.days - 1) as f64);
    Some((grown.round() as i64).clamp(plan.start_daily, plan.target_daily))
}

/// What a plan allows on `day`: `None` before it starts and after it ends (no cap).
pub fn allowed(plan: &Plan, day: Date) -> Option<i64> {
    let start: Date = plan.starts_on.parse().ok()?;
    let n = start.until(day).ok()?.get_days() as i64;
    volume(plan, n)
}

/// The day `at` falls on in `zone`.
pub fn day_of(zone: &TimeZone, at: i64) -> Date {
    jiff::Timestamp::from_millisecond(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH).to_zoned(zone.clone()).date()
}

/// When the day after `day` starts in `zone`, in milliseconds.
pub fn next_day_start(zone: &TimeZone, day: Date) -> i64 {
    let next = day.tomorrow().unwrap_or(day);
    next.to_zoned(zone.clone()).map(|z| z.timestamp().as_millisecond()).unwrap_or(i64::MAX / 2)
}

/// A plan, where it stands today and its days.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub plan: Plan,
    pub today: Date,
    /// What today allows, `None` when the plan has not started or is over.
    pub allowed_today: Option<i64>,
    pub sent_today: i64,
    /// Each day of the plan: its date, its volume, and what was sent.
    pub schedule: Vec<(Date, i64, i64)>,
}

/// The project's zone and today in it.
fn today_of(conn: &Tx, project: &str, now: i64) -> Result<(TimeZone, Date)> {
    let zone = super::delivery_windows::Windows::of(&crate::db::sending::get(conn, project)?).zone_of(None);
    let today = day_of(&zone, now);
    Ok((zone, today))
}

fn none() -> Error {
    Error::NotFound("This domain has no warm-up plan".into())
}

/// Where domain `id`'s plan stands.
pub fn status(conn: &Tx, project: &str, id: &DomainId, now: i64) -> Result<Status> {
    let domain = super::domains::find(conn, project, id)?;
    let plan = warmups::get(conn, &domain.id)?.ok_or_else(none)?;
    let (_, today) = today_of(conn, project, now)?;
    let sent: HashMap<String, i64> =
        warmups::days(conn, &domain.id, MAX_DAYS as usize + 1)?.into_iter().collect();
    let start: Date = plan.starts_on.parse().unwrap_or(today);
    let schedule = (0..plan.days)
        .filter_map(|n| {
            let day = start.checked_add(jiff::Span::new().days(n)).ok()?;
            Some((day, volume(&plan, n)?, sent.get(&day.to_string()).copied().unwrap_or(0)))
        })
        .collect();
    Ok(Status {
        allowed_today: allowed(&plan, today),
        sent_today: sent.get(&today.to_string()).copied().unwrap_or(0),
        today,
        schedule,
        plan,
    })
}

/// Gives domain `id` a plan (in place of the one it had).
pub fn set(tx: &Tx, project: &str, id: &DomainId, input: PlanInput, now: i64) -> Result<Status> {
    let domain = super::domains::find(tx, project, id)?;
    let (_, today) = today_of(tx, project, now)?;
    warmups::set(tx, &check(&domain, input, today, now)?)?;
    status(tx, project, id, now)
}

/// Ends domain `id`'s plan: its mail goes at any volume again.
pub fn remove(tx: &Tx, project: &str, id: &DomainId) -> Result<()> {
    let domain = super::domains::find(tx, project, id)?;
    if !warmups::delete(tx, &domain.id)? {
        return Err(none());
    }
    Ok(())
}

/// One domain's day as the worker keeps it: what the day allows, what was sent, and what is
/// being sent.
#[derive(Debug, Clone)]
struct Day {
    day: String,
    allowed: i64,
    sent: i64,
    in_flight: i64,
}

/// The delivery worker's reservations against each warm-up domain's day.
#[derive(Debug, Default)]
pub struct Ledger {
    days: Mutex<HashMap<String, Day>>,
}

impl Ledger {
    /// Whether the ledger holds `domain`'s count for `day` (else read it: [`Ledger::load`]).
    pub fn knows(&self, domain: &str, day: &str) -> bool {
        self.days.lock().unwrap_or_else(|e| e.into_inner()).get(domain).is_some_and(|d| d.day == day)
    }

    /// Starts `domain`'s `day` with what it has sent so far, unless it is started already.
    pub fn load(&self, domain: &str, day: &str, allowed: i64, sent: i64) {
        let mut days = self.days.lock().unwrap_or_else(|e| e.into_inner());
        let known = days.get(domain).is_some_and(|d| d.day == day);
        if !known {
            days.insert(domain.to_string(), Day { day: day.to_string(), allowed, sent, in_flight: 0 });
        }
    }

    /// Reserves a send of `domain` on `day` when the day's volume allows it (`held`: only when
    /// it has room; otherwise the send is counted anyway, as transactional mail is).
    pub fn reserve(&self, domain: &str, day: &str, allowed: i64, held: bool) -> bool {
        let mut days = self.days.lock().unwrap_or_else(|e| e.into_inner());
        let Some(d) = days.get_mut(domain).filter(|d| d.day == day) else { return !held };
        d.allowed = allowed;
        if held && d.sent + d.in_flight >= allowed {
            return false;
        }
        d.in_flight += 1;
        true
    }

    /// A reserved send ended: sent, or not.
    pub fn settle(&self, domain: &str, day: &str, sent: bool) {
        let mut days = self.days.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = days.get_mut(domain).filter(|d| d.day == day) {
            d.in_flight = (d.in_flight - 1).max(0);
            if sent {
                d.sent += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: i64, target: i64, days: i64) -> Plan {
        Plan {
            domain_id: "d".into(),
            project_id: "p".into(),
            start_daily: start,
            target_daily: target,
            days,
            starts_on: "2027-03-01".into(),
            created_at: 0,
        }
    }

    #[test]
    fn the_volume_grows_from_the_start_to_the_target_then_the_plan_is_over() {
        let p = plan(100, 1000, 3);
        let on = |d: &str| allowed(&p, d.parse().unwrap());
        assert_eq!(on("2027-02-28"), None, "before it starts");
        assert_eq!(on("2027-03-01"), Some(100));
        assert_eq!(on("2027-03-02"), Some(316));
        assert_eq!(on("2027-03-03"), Some(1000));
        assert_eq!(on("2027-03-04"), None, "over");
        let long = plan(50, 50_000, 30);
        let volumes: Vec<i64> = (0..30).map(|n| volume(&long, n).unwrap()).collect();
        assert!(volumes.windows(2).all(|w| w[0] <= w[1]), "{volumes:?}");
        assert_eq!((volumes[0], volumes[29]), (50, 50_000));
    }

    #[test]
    fn the_ledger_counts_sends_in_flight_and_holds_the_rest() {
        let ledger = Ledger::default();
        assert!(!ledger.knows("d", "2027-03-01"));
        ledger.load("d", "2027-03-01", 3, 1);
        assert!(ledger.reserve("d", "2027-03-01", 3, true));
        assert!(ledger.reserve("d", "2027-03-01", 3, true));
        assert!(!ledger.reserve("d", "2027-03-01", 3, true), "1 sent and 2 in flight fill 3");
        assert!(ledger.reserve("d", "2027-03-01", 3, false), "transactional mail goes and counts");
        ledger.settle("d", "2027-03-01", false);
        ledger.settle("d", "2027-03-01", true);
        ledger.settle("d", "2027-03-01", true);
        assert!(!ledger.reserve("d", "2027-03-01", 3, true), "3 sent, 1 more counted");
        ledger.load("d", "2027-03-02", 5, 0);
        assert!(ledger.reserve("d", "2027-03-02", 5, true), "a new day");
    }
}
