//! Emitting events. Every event the service stores goes through [`emit`], which also queues its
//! outbound webhook deliveries and hands it to the workflow engine in the same transaction: the executions waiting for it resume and the
//! workflows it triggers start, whoever emitted it (`/v1/track`, a send, an import, a segment
//! computation, a campaign).

use crate::db::Tx;
use serde_json::{Value, json};

use crate::db::emails::Email;
use crate::db::events;

/// `contact.subscribed`.
pub const CONTACT_SUBSCRIBED: &str = "contact.subscribed";
/// `contact.unsubscribed`.
pub const CONTACT_UNSUBSCRIBED: &str = "contact.unsubscribed";
/// `contact.snoozed`: marketing mail paused until a time.
pub const CONTACT_SNOOZED: &str = "contact.snoozed";
/// `contact.unsnoozed`: marketing mail resumed before the pause ended.
pub const CONTACT_UNSNOOZED: &str = "contact.unsnoozed";
/// A contact followed its confirmation link and pressed the page's button (double opt-in).
pub const CONTACT_CONFIRMED: &str = "contact.confirmed";
/// A subscription with confirmation was asked for and its mail queued.
pub const CONTACT_CONFIRMATION_REQUESTED: &str = "contact.confirmation_requested";

/// Stores an event for a contact in the caller's transaction, and runs what it triggers;
/// returns its id (empty for the system project, which records none).
pub fn emit(
    conn: &Tx,
    project: &str,
    contact: Option<&str>,
    name: &str,
    data: &Value,
    now: i64,
) -> crate::db::Result<String> {
    emit_by(conn, project, contact, name, data, now, None)
}

/// [`emit`] for an event a person made (`machine` is `None`) or a machine (`machine` names
/// why: a privacy proxy's open, a scanner's click). A machine's event is stored and sent to
/// webhooks as any other, marked, but never starts or resumes a workflow: a workflow waits
/// for what a person does.
pub fn emit_by(
    conn: &Tx,
    project: &str,
    contact: Option<&str>,
    name: &str,
    data: &Value,
    now: i64,
    machine: Option<&str>,
) -> crate::db::Result<String> {
    // The system project's mail (verification, resets, invitations) records no events: no
    // one reads them, and they would only swell the tables.
    if project == crate::db::projects::SYSTEM {
        return Ok(String::new());
    }
    let id = events::insert(conn, project, contact, name, data, now, machine)?;
    let (workflows, webhooks) = events::interest(conn, project, contact, name)?;
    if let Some(contact) = contact.filter(|_| workflows && machine.is_none()) {
        crate::core::workflows::start::on_event(conn, project, contact, name, data, &id, now)?;
    }
    if webhooks {
        crate::core::webhooks::on_event(conn, project, &id, name, contact, data, now)?;
    }
    Ok(id)
}

/// The event for a subscription change, with where it came from (`api`, `bulk`, `import`, ...).
pub fn subscription_changed(
    conn: &Tx,
    project: &str,
    contact: &str,
    subscribed: bool,
    source: &str,
    now: i64,
) -> crate::db::Result<String> {
    let name = if subscribed { CONTACT_SUBSCRIBED } else { CONTACT_UNSUBSCRIBED };
    emit(conn, project, Some(contact), name, &json!({ "source": source }), now)
}

/// The data every `email.*` event carries (appliance.md section 11).
pub fn email_data(email: &Email, subject: &str) -> Value {
    json!({
        "emailId": email.id,
        "subject": subject,
        "from": email.from_email,
        "templateId": email.template_id,
        "campaignId": email.campaign_id,
        "workflowId": email.workflow_id,
        "sourceType": email.source_type,
    })
}

/// Events deleted per transaction when a project's events of one name are deleted.
pub const DELETE_BATCH: usize = 5000;

/// Deletes `project`'s events named `name`: at once when they fit in one batch, else by a job.
/// How many there were and whether a job deletes them; `None` when there are none.
pub fn delete_named(tx: &Tx, project: &str, name: &str) -> crate::core::Result<Option<(i64, bool)>> {
    let total = events::count_named(tx, project, name)?;
    if total == 0 {
        return Ok(None);
    }
    if total as usize <= DELETE_BATCH {
        events::delete_named(tx, project, name, DELETE_BATCH)?;
        return Ok(Some((total, false)));
    }
    crate::db::jobs::enqueue(tx, &super::jobs::event_delete(project, name))?;
    Ok(Some((total, true)))
}
