//! Billing: the monthly caps (`billing_limits`), what each month used (`billing_usage`, kept by
//! the triggers of migration V19) and the Stripe subscription a checkout linked
//! (`project_billing`).

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// The project's cap on `category`, when it has one.
pub fn cap(conn: &Connection, project: &str, category: &str) -> Result<Option<i64>> {
    let mut stmt = conn
        .prepare_cached("SELECT monthly_cap FROM billing_limits WHERE project_id = ?1 AND category = ?2")?;
    Ok(stmt.query_row(params![project, category], |r| r.get(0)).optional()?)
}

/// Sets (or with `None` removes) the project's cap on `category`.
pub fn set_cap(conn: &Connection, project: &str, category: &str, cap: Option<i64>) -> Result<()> {
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
    Ok(())
}

/// What the project used of `category` in `month` (`yyyymm`).
pub fn used(conn: &Connection, project: &str, month: i64, category: &str) -> Result<i64> {
    let mut stmt = conn.prepare_cached(
        "SELECT used FROM billing_usage WHERE project_id = ?1 AND month = ?2 AND category = ?3",
    )?;
    Ok(stmt.query_row(params![project, month, category], |r| r.get(0)).optional()?.unwrap_or(0))
}

/// The project's Stripe customer and subscription, when a checkout made them.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    pub customer: String,
    pub subscription: Option<String>,
    pub status: Option<String>,
}

/// The project's subscription, when a checkout linked one.
pub fn subscription(conn: &Connection, project: &str) -> Result<Option<Subscription>> {
    Ok(conn
        .query_row(
            "SELECT stripe_customer, stripe_subscription, subscription_status FROM project_billing WHERE project_id = ?1",
            [project],
            |r| Ok(Subscription { customer: r.get(0)?, subscription: r.get(1)?, status: r.get(2)? }),
        )
        .optional()?)
}

/// Links a completed checkout's customer and subscription (active) to an existing project,
/// unless what is stored is newer than `at`. Whether anything changed.
pub fn link_checkout(
    conn: &Connection,
    project: &str,
    customer: &str,
    subscription: Option<&str>,
    at: i64,
) -> Result<bool> {
    let changed = conn.execute(
        "INSERT INTO project_billing (project_id, stripe_customer, stripe_subscription, subscription_status, updated_at)
         SELECT ?1, ?2, ?3, 'active', ?4 WHERE EXISTS (SELECT 1 FROM projects WHERE id = ?1)
         ON CONFLICT (project_id) DO UPDATE SET stripe_customer = excluded.stripe_customer,
             stripe_subscription = excluded.stripe_subscription, subscription_status = 'active',
             updated_at = excluded.updated_at
         WHERE project_billing.updated_at <= excluded.updated_at",
        params![project, customer, subscription, at],
    )?;
    Ok(changed > 0)
}

/// Records the subscription and status Stripe reports for `customer`, unless what is stored is
/// newer than `at`. Whether anything changed.
pub fn update_subscription(
    conn: &Connection,
    customer: &str,
    subscription: &str,
    status: Option<&str>,
    at: i64,
) -> Result<bool> {
    let changed = conn.execute(
        "UPDATE project_billing SET stripe_subscription = ?2, subscription_status = ?3, updated_at = ?4
         WHERE stripe_customer = ?1 AND updated_at <= ?4",
        params![customer, subscription, status, at],
    )?;
    Ok(changed > 0)
}
