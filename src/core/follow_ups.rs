//! Following a sent campaign up (issue 34, item 2): a new campaign with its content, and a new
//! subject if wanted, to the recipients who did not open it (or did not click). Only a
//! person's open counts: a privacy proxy's fetch on delivery is no open. The audience is a
//! condition (`campaign.<id>` with `notOpened` or `notClicked`), so it is decided when the
//! follow-up goes, after the delay, and stays editable as any FILTERED campaign's.

use serde_json::json;

use super::campaign_state::{self, CampaignStatus};
use super::conditions::Condition;
use super::error::{Error, FieldError, Result};
use crate::db::Tx;
use crate::db::campaigns::Campaign;

/// The longest delay after the original's send, in hours: 30 days.
pub const MAX_DELAY_HOURS: i64 = 30 * 24;
/// The longest subject, as for any campaign.
const MAX_SUBJECT: usize = 998;

/// Who a follow-up goes to among the original's recipients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Those no person opened it for (a click counts as an open).
    Opened,
    /// Those who did not click in it.
    Clicked,
}

impl Missed {
    /// From the API's `audience`: `notOpened` (the default) or `notClicked`.
    pub fn parse(audience: Option<&str>) -> Result<Self> {
        match audience {
            None | Some("notOpened") => Ok(Self::Opened),
            Some("notClicked") => Ok(Self::Clicked),
            Some(other) => Err(Error::Invalid(vec![
                FieldError::new("audience", "invalid_enum_value", "audience is notOpened or notClicked")
                    .received(json!(other)),
            ])),
        }
    }

    fn operator(self) -> &'static str {
        match self {
            Self::Opened => "notOpened",
            Self::Clicked => "notClicked",
        }
    }
}

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct FollowUp {
    pub name: Option<String>,
    pub subject: Option<String>,
    pub missed: Missed,
    /// Send this many hours after the original was sent (now, if that has passed); a draft
    /// when `None`.
    pub delay_hours: Option<i64>,
}

/// The follow-up of `original` as a new, unsaved DRAFT, and when it is to go. 400 for a
/// campaign that has not been sent; 422 for a bad subject or delay.
pub fn plan(original: &Campaign, asked: &FollowUp, now: i64) -> Result<(Campaign, Option<i64>)> {
    let sent = matches!(CampaignStatus::of(original), Some(CampaignStatus::Sending | CampaignStatus::Sent));
    let Some(sent_at) = original.sent_at.filter(|_| sent) else {
        return Err(Error::malformed(format!(
            "Only a campaign that has been sent can be followed up; this one is {}",
            original.status
        )));
    };
    let subject = match asked.subject.as_deref().map(str::trim) {
        None => original.subject.clone(),
        Some(s) if s.is_empty() || s.chars().count() > MAX_SUBJECT || s.contains(['\r', '\n']) => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    "subject",
                    "invalid_string",
                    format!("subject is one line of 1 to {MAX_SUBJECT} characters"),
                )
                .received(json!(s)),
            ]));
        }
        Some(s) => s.to_string(),
    };
    let at = match asked.delay_hours {
        None => None,
        Some(h) if (0..=MAX_DELAY_HOURS).contains(&h) => Some((sent_at + h * 3_600_000).max(now)),
        Some(h) => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    "delayHours",
                    "too_big",
                    format!("delayHours is 0 to {MAX_DELAY_HOURS} hours after the campaign was sent"),
                )
                .received(json!(h)),
            ]));
        }
    };
    let mut copy = campaign_state::copy_of(original, now);
    copy.name = asked
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("{} (follow-up)", original.name), str::to_string)
        .chars()
        .take(200)
        .collect();
    copy.subject = subject;
    copy.audience_type = "FILTERED".into();
    copy.segment_id = None;
    copy.public = false;
    let tree = json!({ "logic": "AND", "groups": [{ "filters": [
        { "field": format!("campaign.{}", original.id), "operator": asked.missed.operator() }
    ] }] });
    copy.audience_condition = Some(tree.to_string());
    Ok((copy, at))
}

/// Saves the planned follow-up `copy` with its references and, when `scheduled` says when and
/// to how many, schedules it; all or nothing.
pub fn create(tx: &Tx, copy: &Campaign, scheduled: Option<(i64, i64)>, now: i64) -> Result<Campaign> {
    let tree = copy.audience_condition.as_deref().and_then(|t| serde_json::from_str(t).ok());
    let condition = tree.map(|t| Condition::parse(&t, "audienceCondition")).transpose()?;
    campaign_state::create(tx, copy, condition)?;
    match scheduled {
        Some((at, recipients)) => campaign_state::send(tx, &copy.id, recipients, Some(at), None, now),
        None => Ok(copy.clone()),
    }
}
