//! Opens and clicks of sent mail (appliance.md section 8): the email moves forward (OPENED,
//! CLICKED; a status never goes back) and its events are emitted: `email.opened` on the first
//! open of a sent email, `email.clicked` on every click, with the link.

use serde_json::json;

use super::error::Result;
use super::events;
use super::vocabulary::EmailStatus;
use crate::db::Tx;
use crate::db::emails;

/// What a recipient did with an email.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engagement {
    /// The open pixel was fetched.
    Open,
    /// A tracked link was followed to this address.
    Click(String),
}

/// Records `what` the recipient of email `id` did; an email that is gone is nothing to record.
pub fn record(tx: &Tx, id: &str, what: Engagement, now: i64) -> Result<()> {
    let Some(row) = emails::get(tx, id)? else { return Ok(()) };
    let first_open = row.opened_at.is_none();
    let status = match what {
        Engagement::Open => EmailStatus::Opened,
        Engagement::Click(_) => EmailStatus::Clicked,
    };
    emails::advance(tx, id, status.as_str(), now)?;
    let mut data = events::email_data(&row, &row.subject);
    let name = match what {
        Engagement::Click(link) => {
            data["link"] = json!(link);
            Some("email.clicked")
        }
        Engagement::Open if first_open && row.sent_at.is_some() => Some("email.opened"),
        Engagement::Open => None,
    };
    if let Some(name) = name {
        events::emit(tx, &row.project_id, row.contact_id.as_deref(), name, &data, now)?;
    }
    Ok(())
}
