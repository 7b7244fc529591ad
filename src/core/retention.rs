//! How long a project keeps its data (issue 35, item 1): the server's `[retention]` defaults,
//! each replaceable per project, and the instants before which the pruning job removes each
//! kind ([`crate::db::retention`] says what goes and what stays).

use super::error::{Error, FieldError, Result};
use crate::config::Config;
use crate::db::retention::{Cutoffs, Periods};

/// The longest period, in days (100 years).
pub const MAX_DAYS: u32 = 36_500;
const DAY_MS: i64 = 86_400_000;

/// The periods in force, in days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub email_content_days: u32,
    pub events_days: u32,
    pub inbound_days: u32,
    pub webhook_deliveries_days: u32,
}

impl Policy {
    /// The server's defaults: `[retention]`, with `[inbound] retention_days` (its older name)
    /// for received mail when that is set.
    pub fn defaults(config: &Config) -> Policy {
        let r = &config.retention;
        Policy {
            email_content_days: r.email_content_days,
            events_days: r.events_days,
            inbound_days: config.inbound.retention_days.unwrap_or(r.inbound_days),
            webhook_deliveries_days: r.webhook_deliveries_days,
        }
    }

    /// These defaults with a project's own periods.
    pub fn with(self, own: &Periods) -> Policy {
        Policy {
            email_content_days: own.email_content_days.unwrap_or(self.email_content_days),
            events_days: own.events_days.unwrap_or(self.events_days),
            inbound_days: own.inbound_days.unwrap_or(self.inbound_days),
            webhook_deliveries_days: own.webhook_deliveries_days.unwrap_or(self.webhook_deliveries_days),
        }
    }

    /// What is older than these instants goes at `now`.
    pub fn cutoffs(&self, now: i64) -> Cutoffs {
        let before = |days: u32| now.saturating_sub(i64::from(days) * DAY_MS);
        Cutoffs {
            email_content: before(self.email_content_days),
            events: before(self.events_days),
            webhook_deliveries: before(self.webhook_deliveries_days),
        }
    }

    /// How long received mail is kept, in ms.
    pub fn inbound_ms(&self) -> i64 {
        i64::from(self.inbound_days) * DAY_MS
    }
}

/// `project`'s periods in force, given the server's `defaults`.
pub fn policy(tx: &crate::db::Tx, project: &str, defaults: Policy) -> Result<Policy> {
    Ok(defaults.with(&crate::db::retention::get(tx, project)?))
}

/// A change of a project's periods: `Some(None)` goes back to the default, `None` leaves it.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub email_content_days: Option<Option<u32>>,
    pub events_days: Option<Option<u32>>,
    pub inbound_days: Option<Option<u32>>,
    pub webhook_deliveries_days: Option<Option<u32>>,
}

/// Applies `changes` to `project`'s own periods; 422 names a period outside 1 to
/// [`MAX_DAYS`] days, and nothing is stored then.
pub fn update(tx: &crate::db::Tx, project: &str, changes: Changes, now: i64) -> Result<Periods> {
    let mut own = crate::db::retention::get(tx, project)?;
    let mut problems = Vec::new();
    for (field, change, period) in [
        ("emailContentDays", changes.email_content_days, &mut own.email_content_days),
        ("eventsDays", changes.events_days, &mut own.events_days),
        ("inboundDays", changes.inbound_days, &mut own.inbound_days),
        ("webhookDeliveriesDays", changes.webhook_deliveries_days, &mut own.webhook_deliveries_days),
    ] {
        match change {
            Some(Some(days)) if !(1..=MAX_DAYS).contains(&days) => problems.push(
                FieldError::new(field, "out_of_range", format!("a number of days from 1 to {MAX_DAYS}"))
                    .received(serde_json::json!(days)),
            ),
            Some(days) => *period = days,
            None => {}
        }
    }
    if !problems.is_empty() {
        return Err(Error::Invalid(problems));
    }
    crate::db::retention::put(tx, project, &own, now)?;
    Ok(own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_keeps_its_own_periods_and_the_defaults_for_the_rest() {
        let conn = crate::db::testing::memory();
        let defaults = Policy::defaults(&Config::default());
        assert_eq!((defaults.email_content_days, defaults.events_days), (30, 365));
        let changes = Changes { events_days: Some(Some(90)), ..Changes::default() };
        update(&conn, "p", changes, 1).unwrap();
        let policy = policy(&conn, "p", defaults).unwrap();
        assert_eq!((policy.events_days, policy.email_content_days), (90, 30));
        assert_eq!(policy.cutoffs(100 * DAY_MS).events, 10 * DAY_MS);

        let bad =
            Changes { email_content_days: Some(Some(0)), events_days: Some(None), ..Changes::default() };
        let err = update(&conn, "p", bad, 2).unwrap_err();
        assert_eq!(err.fields()[0].field, "emailContentDays");
        assert_eq!(super::policy(&conn, "p", defaults).unwrap().events_days, 90, "nothing stored");

        update(&conn, "p", Changes { events_days: Some(None), ..Changes::default() }, 3).unwrap();
        assert_eq!(super::policy(&conn, "p", defaults).unwrap().events_days, 365);
    }
}
