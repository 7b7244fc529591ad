//! What comes back about a sent email, from any source (SES through SNS, a DSN or a feedback
//! report at the bounce listener): one code path for its effects (appliance.md §11, §12).
//!
//! - The email's status moves forward only (`SENT < DELIVERED < … < BOUNCED < COMPLAINED`), and
//!   the campaign counters follow it (the triggers of migration V7).
//! - `email.delivered`, `email.bounced` (with `bounceType`) and `email.complained` are emitted
//!   once each: a notification delivered twice changes nothing the second time. A hard bounce
//!   after a soft one is recorded and emitted again, as hard.
//! - A hard bounce or a complaint unsubscribes the contact (`contact.unsubscribed`, source
//!   `bounce` or `complaint`) and suppresses it: no MARKETING mail reaches it again, even after
//!   it subscribes again.

use crate::core::vocabulary::EmailStatus;
use crate::db::Tx;
use serde_json::json;

use super::contacts::set_subscribed;
use super::events::{self, email_data};
use super::reputation;
use crate::config::ReputationConfig;
use crate::core::error::Result;
use crate::db::contacts;
use crate::db::emails::{self, Email};
use crate::db::suppressions::{self, Suppression};

/// What a source reports about an email.
#[derive(Debug, Clone, PartialEq)]
pub enum Feedback {
    /// The receiving server took it.
    Delivered,
    /// It came back: `hard` (permanent, 5.x.x) or soft (temporary, 4.x.x), with what the source
    /// said.
    Bounce { hard: bool, detail: Option<String> },
    /// The recipient marked it as spam.
    Complaint { detail: Option<String> },
}

/// What applying a report changed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Applied {
    /// The event it emitted, if any (`email.delivered`, `email.bounced`, `email.complained`).
    pub event: Option<&'static str>,
    /// Whether the contact was suppressed by it.
    pub suppressed: bool,
    /// Why the project was suspended by it, when it pushed a rate over its threshold
    /// ([`super::reputation`]; its keys stop working once this commits).
    pub suspended: Option<String>,
}

/// Applies a report (from SES) to the email it is about: the first of its Message-IDs that names
/// emails of ours, narrowed to those to one of its recipients (a submitted message's recipients
/// share its Message-ID). An app chooses its Message-IDs, so two projects may hold one: a report
/// whose emails are not all of one project is applied to none (logged), so no project's report
/// can reach another's contacts or reputation.
pub fn apply_to_message(
    conn: &Tx,
    (message_ids, recipients): (&[String], &[String]),
    feedback: &Feedback,
    reputation: &ReputationConfig,
    now: i64,
) -> Result<Applied> {
    let recipients: Vec<String> = recipients.iter().filter_map(|r| super::email::normalize(r).ok()).collect();
    for id in message_ids {
        let mut found = emails::all_by_message_id(conn, id, MATCHES)?;
        if found.is_empty() {
            continue;
        }
        if !recipients.is_empty() && found.iter().any(|e| recipients.contains(&e.to_email)) {
            found.retain(|e| recipients.contains(&e.to_email));
        }
        if found.iter().any(|e| e.project_id != found[0].project_id) {
            tracing::warn!(
                message_id = id,
                "a report names emails of several projects; it is applied to none"
            );
            return Ok(Applied::default());
        }
        return apply(conn, &found[0], feedback, reputation, now);
    }
    Ok(Applied::default())
}

/// Most emails one Message-ID is looked up among (a message's recipients).
const MATCHES: usize = 1000;

/// Applies `feedback` to `email` in the caller's transaction, then checks the project's
/// reputation against `reputation`.
pub fn apply(
    conn: &Tx,
    email: &Email,
    feedback: &Feedback,
    reputation: &ReputationConfig,
    now: i64,
) -> Result<Applied> {
    let mut applied = Applied::default();
    if email.sent_at.is_none() {
        // Nothing to report on a message that never left.
        return Ok(applied);
    }
    let mut data = email_data(email, &email.subject);
    let (event, suppress) = match feedback {
        Feedback::Delivered => {
            let moved = emails::advance(conn, &email.id, EmailStatus::Delivered.as_str(), now)?;
            (moved.then_some("email.delivered"), None)
        }
        Feedback::Bounce { hard, detail } => {
            let kind = if *hard { "hard" } else { "soft" };
            emails::advance(conn, &email.id, EmailStatus::Bounced.as_str(), now)?;
            let recorded = emails::set_bounce_type(conn, &email.id, kind, now)?;
            data["bounceType"] = json!(kind);
            if let Some(detail) = detail {
                data["diagnostic"] = json!(detail);
            }
            (recorded.then_some("email.bounced"), hard.then(|| ("hard_bounce", detail.clone())))
        }
        Feedback::Complaint { detail } => {
            let moved = emails::advance(conn, &email.id, EmailStatus::Complained.as_str(), now)?;
            if let Some(detail) = detail {
                data["feedbackType"] = json!(detail);
            }
            (moved.then_some("email.complained"), Some(("complaint", detail.clone())))
        }
    };
    if let Some(name) = event {
        events::emit(conn, &email.project_id, email.contact_id.as_deref(), name, &data, now)?;
        applied.event = Some(name);
    }
    if let (Some((reason, detail)), Some(contact_id)) = (suppress, &email.contact_id)
        && let Some(contact) = contacts::by_id(conn, &email.project_id, contact_id)?
    {
        let already = suppressions::get(conn, &contact.id)?;
        let source = if reason == "complaint" { "complaint" } else { "bounce" };
        set_subscribed(conn, contact.clone(), false, source, now)?;
        if already.as_ref().is_none_or(|s| s.reason != "complaint" && reason == "complaint") {
            let suppression = Suppression {
                contact_id: contact.id.clone(),
                reason: reason.to_string(),
                email_id: Some(email.id.clone()),
                detail,
                created_at: now,
            };
            suppressions::put(conn, &email.project_id, &suppression)?;
            // The address lands on the project's suppression list too, saying which it was.
            let target = super::suppressions::Target::Address(contact.email.clone());
            let detail = suppression
                .detail
                .as_ref()
                .map(|d| d.chars().take(super::suppressions::MAX_REASON).collect());
            super::suppressions::add(conn, &email.project_id, target, source, detail, now)?;
            applied.suppressed = true;
        }
    }
    if applied.event.is_some() && !matches!(feedback, Feedback::Delivered) {
        applied.suspended = reputation::check(conn, &email.project_id, reputation, now)?;
    }
    Ok(applied)
}
