//! Monthly caps and consumption per category: the API's view of the `billing_limits` and
//! `billing_usage` tables, which the triggers of migration V19 keep and enforce.

use serde_json::Value;
use time::{Date, Month, OffsetDateTime, Time};

use crate::core::error::{Error, FieldError, Result};
use crate::db::{Tx, billing};

pub use crate::db::billing::{Subscription, subscription};

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

/// One value per category.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ByCategory<T> {
    pub transactional: T,
    pub marketing: T,
    pub workflow: T,
    pub events: T,
}

impl<T> ByCategory<T> {
    /// Each category's value made from its name and its value here, in [`CATEGORIES`] order.
    pub fn try_map<U, E>(
        self,
        mut f: impl FnMut(&'static str, T) -> Result<U, E>,
    ) -> Result<ByCategory<U>, E> {
        Ok(ByCategory {
            transactional: f(CATEGORIES[0], self.transactional)?,
            marketing: f(CATEGORIES[1], self.marketing)?,
            workflow: f(CATEGORIES[2], self.workflow)?,
            events: f(CATEGORIES[3], self.events)?,
        })
    }
}

/// A project's monthly caps; `None` is no cap.
pub type Caps = ByCategory<Option<i64>>;

/// The project's caps, every category named.
pub fn limits(conn: &Tx, project: &str) -> crate::db::Result<Caps> {
    ByCategory::default().try_map(|category, ()| billing::cap(conn, project, category))
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

/// Replaces the project's caps (checked by [`check_limits`]); the caps as they are now.
pub fn set_limits(conn: &Tx, project: &str, caps: &[(&str, Option<i64>)]) -> crate::db::Result<Caps> {
    for (category, cap) in caps {
        billing::set_cap(conn, project, category, *cap)?;
    }
    limits(conn, project)
}

/// One category's use in a month, its cap and what is left of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Use {
    pub used: i64,
    pub limit: Option<i64>,
    /// `None` without a cap; never below 0.
    pub remaining: Option<i64>,
}

/// What a project used in a month (from `start` to the next month's first millisecond, `end`).
#[derive(Debug, Clone, PartialEq)]
pub struct Consumption {
    pub start: i64,
    pub end: i64,
    pub usage: ByCategory<Use>,
}

/// What the project used in the month holding `now`, by category, with its cap and what is left.
pub fn consumption(conn: &Tx, project: &str, now: i64) -> crate::db::Result<Consumption> {
    let (month, start, end) = month_of(now);
    let usage = limits(conn, project)?.try_map(|category, limit| {
        let used = billing::used(conn, project, month, category)?;
        Ok::<_, crate::db::DbError>(Use { used, limit, remaining: limit.map(|l| (l - used).max(0)) })
    })?;
    Ok(Consumption { start, end, usage })
}

/// Acts on an event from Stripe (its signature checked): a completed checkout links the
/// customer and subscription to the project it was made for; a subscription's changes update
/// its status. An event older than what is stored changes nothing; other types are ignored.
/// Returns whether anything changed.
pub fn apply_stripe_event(conn: &Tx, event: &Value) -> crate::db::Result<bool> {
    let at = event["created"].as_i64().unwrap_or(0) * 1000;
    let object = &event["data"]["object"];
    let text = |key: &str| object[key].as_str().map(str::to_string);
    let changed = match event["type"].as_str().unwrap_or_default() {
        "checkout.session.completed" => {
            let (Some(project), Some(customer)) = (text("client_reference_id"), text("customer")) else {
                return Ok(false);
            };
            billing::link_checkout(conn, &project, &customer, text("subscription").as_deref(), at)?
        }
        "customer.subscription.created"
        | "customer.subscription.updated"
        | "customer.subscription.deleted" => {
            let (Some(customer), Some(id)) = (text("customer"), text("id")) else { return Ok(false) };
            billing::update_subscription(conn, &customer, &id, text("status").as_deref(), at)?
        }
        _ => false,
    };
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock;
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
