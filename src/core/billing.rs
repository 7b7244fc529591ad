//! Monthly caps and consumption per category: the API's view of the `billing_limits` and
//! `billing_usage` tables, which the triggers of migration V19 keep and enforce.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use time::{Date, Month, OffsetDateTime, Time};

use crate::clock;
use crate::core::error::{Error, FieldError, Result};
use crate::views::billing::{CategoryUsage, Consumption, Limits, MonthlyUsage, Period};

/// The categories, as the API names them: emails queued by `/v1/send`, by campaigns and by
/// workflows, and events tracked by the app.
pub const CATEGORIES: [&str; 4] = ["transactional", "marketing", "workflow", "events"];
/// Largest cap accepted.
pub const MAX_CAP: i64 = 1_000_000_000_000;

/// The calendar month (UTC) holding `ms`: its `yyyymm` and its first and next month's first
/// millisecond.
pub fn month_of(ms: i64) -> (i64, i64, i64) {
    let at = OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let (year, month) = (at.year(), at.month());
    let start = Date::from_calendar_date(year, month, 1).unwrap_or(Date::MIN);
    let (next_year, next_month) =
        if month == Month::December { (year + 1, Month::January) } else { (year, month.next()) };
    let end = Date::from_calendar_date(next_year, next_month, 1).unwrap_or(Date::MAX);
    let ms_of = |d: Date| d.with_time(Time::MIDNIGHT).assume_utc().unix_timestamp() * 1000;
    (i64::from(year) * 100 + i64::from(u8::from(month)), ms_of(start), ms_of(end))
}

/// The project's caps, every category named (null for none).
pub fn limits(conn: &Connection, project: &str) -> crate::db::Result<Limits> {
    let mut stmt = conn
        .prepare_cached("SELECT monthly_cap FROM billing_limits WHERE project_id = ?1 AND category = ?2")?;
    let mut cap = |category: &str| -> crate::db::Result<Option<i64>> {
        Ok(stmt.query_row(params![project, category], |r| r.get(0)).optional()?)
    };
    Ok(Limits {
        transactional: cap("transactional")?,
        marketing: cap("marketing")?,
        workflow: cap("workflow")?,
        events: cap("events")?,
    })
}

/// Checks a `PUT` body: an object of categories, each a whole number from 0 to [`MAX_CAP`] or
/// null (no cap). A category left out has no cap afterwards, as with null.
pub fn check_limits(body: &Value) -> Result<Vec<(&'static str, Option<i64>)>> {
    let Some(object) = body.as_object() else {
        return Err(Error::invalid("body", "invalid_type", "the limits are a JSON object"));
    };
    let mut errors = Vec::new();
    for key in object.keys().filter(|k| !CATEGORIES.contains(&k.as_str())) {
        errors.push(FieldError::new(
            key,
            "unknown_field",
            format!("the categories are {}", CATEGORIES.join(", ")),
        ));
    }
    let mut caps = Vec::new();
    for category in CATEGORIES {
        match object.get(category) {
            None | Some(Value::Null) => caps.push((category, None)),
            Some(value) => match value.as_i64().filter(|n| (0..=MAX_CAP).contains(n)) {
                Some(n) => caps.push((category, Some(n))),
                None => errors.push(
                    FieldError::new(
                        category,
                        "invalid_number",
                        format!("a whole number from 0 to {MAX_CAP}, or null"),
                    )
                    .received(value.clone()),
                ),
            },
        }
    }
    if errors.is_empty() { Ok(caps) } else { Err(Error::Invalid(errors)) }
}

/// Replaces the project's caps.
pub fn set_limits(conn: &Connection, project: &str, caps: &[(&str, Option<i64>)]) -> crate::db::Result<()> {
    for (category, cap) in caps {
        match cap {
            Some(cap) => conn.execute(
                "INSERT INTO billing_limits (project_id, category, monthly_cap) VALUES (?1, ?2, ?3)
                 ON CONFLICT (project_id, category) DO UPDATE SET monthly_cap = excluded.monthly_cap",
                params![project, category, cap],
            )?,
            None => conn.execute(
                "DELETE FROM billing_limits WHERE project_id = ?1 AND category = ?2",
                params![project, category],
            )?,
        };
    }
    Ok(())
}

/// What the project used in the month holding `now`, by category, with its cap and what is left.
pub fn consumption(conn: &Connection, project: &str, now: i64) -> crate::db::Result<Consumption> {
    let (month, start, end) = month_of(now);
    let caps = limits(conn, project)?;
    let mut used_stmt = conn.prepare_cached(
        "SELECT used FROM billing_usage WHERE project_id = ?1 AND month = ?2 AND category = ?3",
    )?;
    let mut usage = |category: &str, limit: Option<i64>| -> crate::db::Result<CategoryUsage> {
        let used: i64 =
            used_stmt.query_row(params![project, month, category], |r| r.get(0)).optional()?.unwrap_or(0);
        Ok(CategoryUsage { used, limit, remaining: limit.map(|l| (l - used).max(0)) })
    };
    Ok(Consumption {
        period: Period { start: clock::iso(start), end: clock::iso(end) },
        usage: MonthlyUsage {
            transactional: usage("transactional", caps.transactional)?,
            marketing: usage("marketing", caps.marketing)?,
            workflow: usage("workflow", caps.workflow)?,
            events: usage("events", caps.events)?,
        },
        subscription: None,
    })
}

/// The project's Stripe customer and subscription, when a checkout made them.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub customer: String,
    pub subscription: Option<String>,
    pub status: Option<String>,
}

pub fn subscription(conn: &Connection, project: &str) -> crate::db::Result<Option<Subscription>> {
    Ok(conn.query_row(
        "SELECT stripe_customer, stripe_subscription, subscription_status FROM project_billing WHERE project_id = ?1",
        [project],
        |r| Ok(Subscription { customer: r.get(0)?, subscription: r.get(1)?, status: r.get(2)? }),
    )
    .optional()?)
}

/// Acts on an event from Stripe (its signature checked): a completed checkout links the
/// customer and subscription to the project it was made for; a subscription's changes update
/// its status. An event older than what is stored changes nothing; other types are ignored.
/// Returns whether anything changed.
pub fn apply_stripe_event(conn: &Connection, event: &Value) -> crate::db::Result<bool> {
    let at = event["created"].as_i64().unwrap_or(0) * 1000;
    let object = &event["data"]["object"];
    let text = |key: &str| object[key].as_str().map(str::to_string);
    let changed = match event["type"].as_str().unwrap_or_default() {
        "checkout.session.completed" => {
            let (Some(project), Some(customer)) = (text("client_reference_id"), text("customer")) else {
                return Ok(false);
            };
            conn.execute(
                "INSERT INTO project_billing (project_id, stripe_customer, stripe_subscription, subscription_status, updated_at)
                 SELECT ?1, ?2, ?3, 'active', ?4 WHERE EXISTS (SELECT 1 FROM projects WHERE id = ?1)
                 ON CONFLICT (project_id) DO UPDATE SET stripe_customer = excluded.stripe_customer,
                     stripe_subscription = excluded.stripe_subscription, subscription_status = 'active',
                     updated_at = excluded.updated_at
                 WHERE project_billing.updated_at <= excluded.updated_at",
                params![project, customer, text("subscription"), at],
            )?
        }
        "customer.subscription.created"
        | "customer.subscription.updated"
        | "customer.subscription.deleted" => {
            let (Some(customer), Some(id)) = (text("customer"), text("id")) else { return Ok(false) };
            conn.execute(
                "UPDATE project_billing SET stripe_subscription = ?2, subscription_status = ?3, updated_at = ?4
                 WHERE stripe_customer = ?1 AND updated_at <= ?4",
                params![customer, id, text("status"), at],
            )?
        }
        _ => 0,
    };
    Ok(changed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn months_are_calendar_months_in_utc() {
        // 2026-11-24T09:00:00Z
        let (month, start, end) = month_of(1_795_510_800_000);
        assert_eq!(month, 202611);
        assert_eq!(
            (clock::iso(start), clock::iso(end)),
            ("2026-11-01T00:00:00.000Z".into(), "2026-12-01T00:00:00.000Z".into())
        );
        // The last millisecond of November, and the first of December.
        assert_eq!(month_of(1_796_083_200_000 - 1).0, 202611);
        assert_eq!(month_of(1_796_083_200_000).0, 202612);
        let (month, _, end) = month_of(1_798_761_600_000 - 1); // 2026-12-31T23:59:59.999Z
        assert_eq!((month, clock::iso(end)), (202612, "2027-01-01T00:00:00.000Z".into()));
    }

    #[test]
    fn limits_are_whole_numbers_or_null() {
        let caps = check_limits(&json!({ "transactional": 10, "events": null })).unwrap();
        assert_eq!(
            caps,
            vec![("transactional", Some(10)), ("marketing", None), ("workflow", None), ("events", None)]
        );
        for bad in [
            json!({ "marketing": -1 }),
            json!({ "marketing": 1.5 }),
            json!({ "marketing": "10" }),
            json!({ "sms": 1 }),
            json!([1]),
        ] {
            assert!(check_limits(&bad).is_err(), "{bad}");
        }
    }
}
