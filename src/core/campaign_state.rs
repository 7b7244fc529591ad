//! A campaign's life (appliance.md §11): DRAFT → SCHEDULED → SENDING → SENT, or CANCELLED, and
//! the use cases that move it: send (now or at a time), start when the time comes, cancel,
//! delete, duplicate, and the one-off test send. Each runs in the caller's transaction and
//! enqueues the job that carries it on, so no handler names a status or a job.

#[cfg(doc)]
use super::campaigns::check_content;
use super::campaigns::{audience, check_references, test_email};
use super::conditions::Condition;
use super::contacts::test_recipient;
use super::domains::require_verified_sender;
use super::error::{Error, Result};
use super::ids::CampaignId;
use super::jobs;
use crate::core::outbound;
pub use crate::core::vocabulary::CampaignStatus;
use crate::core::vocabulary::EmailSource;
use crate::db::Tx;
use crate::db::campaigns::{self, Campaign, Stamps};
use crate::db::emails::Email;
use crate::db::jobs as queue;

/// Every status's name, as a list filter accepts them.
pub const STATUSES: [&str; 5] = [
    CampaignStatus::Draft.as_str(),
    CampaignStatus::Scheduled.as_str(),
    CampaignStatus::Sending.as_str(),
    CampaignStatus::Sent.as_str(),
    CampaignStatus::Cancelled.as_str(),
];

/// A new, empty DRAFT of `project`.
pub fn draft(project: &str, now: i64) -> Campaign {
    Campaign {
        id: crate::db::new_id(),
        project_id: project.to_string(),
        status: CampaignStatus::Draft.as_str().into(),
        format: crate::core::formats::Format::Html.as_str().into(),
        track_links: true,
        created_at: now,
        updated_at: now,
        ..Campaign::default()
    }
}

/// Campaign `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &CampaignId) -> Result<Campaign> {
    campaigns::get(conn, project, id)?.ok_or_else(|| CampaignId::missing(id))
}

/// Saves a new DRAFT whose content was checked ([`check_content`]), with its references.
pub fn create(tx: &Tx, c: &Campaign, condition: Option<Condition>) -> Result<()> {
    // Checked first: a topic the project lacks is a 422 naming it, not the row's foreign key.
    check_references(tx, c, condition)?;
    campaigns::insert(tx, c)?;
    Ok(())
}

/// Saves the checked content ([`check_content`]) of a campaign that may still change. It is read
/// again in this write, so one that started sending since the caller read it is refused.
pub fn edit(tx: &Tx, c: &Campaign, condition: Option<Condition>) -> Result<()> {
    require_editable(&find(tx, &c.project_id, &CampaignId::from_row(c.id.as_str()))?)?;
    check_references(tx, c, condition)?;
    campaigns::update_content(tx, c)?;
    Ok(())
}

/// Refuses a change to a campaign that has left DRAFT and SCHEDULED.
pub fn require_editable(c: &Campaign) -> Result<()> {
    if CampaignStatus::of(c).is_some_and(CampaignStatus::is_editable) {
        return Ok(());
    }
    Err(Error::malformed(format!(
        "Only DRAFT and SCHEDULED campaigns can be changed; this one is {}. Duplicate it to make a new draft.",
        c.status
    )))
}

/// What a send of `c` would go to, once it may be sent: DRAFT or SCHEDULED, from a verified
/// sender. Count it (outside the writer) and pass the count to [`send`].
pub fn send_audience(conn: &Tx, c: &Campaign) -> Result<Condition> {
    if !CampaignStatus::of(c).is_some_and(CampaignStatus::is_editable) {
        return Err(Error::malformed(format!(
            "Only DRAFT and SCHEDULED campaigns can be sent; this one is {}",
            c.status
        )));
    }
    require_verified_sender(conn, &c.project_id, &c.from_email)?;
    audience(conn, c)
}

/// Sends campaign `id` now (SENDING) or at `at` (SCHEDULED) to the `recipients` its audience
/// was counted to hold, and enqueues the job that starts and expands it; the campaign as it is
/// now. Refused when nobody would receive it or it changed since it was read.
///
/// `local_time`, with `at`, sends at that wall-clock time in each contact's zone: the job starts
/// at `at` (where it happens first) and each email is due when it happens where its contact is.
pub fn send(
    tx: &Tx,
    id: &str,
    recipients: i64,
    at: Option<i64>,
    local_time: Option<&str>,
    now: i64,
) -> Result<Campaign> {
    if recipients == 0 {
        return Err(Error::malformed(
            "The audience is empty: no contact would receive this campaign (MARKETING campaigns go to subscribed contacts only)",
        ));
    }
    let (to, stamps) = match at {
        Some(at) => {
            (CampaignStatus::Scheduled, Stamps { scheduled_for: Some(Some(at)), ..Stamps::default() })
        }
        None => (
            CampaignStatus::Sending,
            Stamps { sent_at: Some(now), scheduled_for: Some(None), ..Stamps::default() },
        ),
    };
    if local_time.is_some() && campaigns::by_id(tx, id)?.is_some_and(|c| c.ab.is_some()) {
        return Err(Error::invalid(
            "localTime",
            "invalid_union",
            "an A/B test sends its test share at once and the winner after the wait; it cannot go at a local time",
        ));
    }
    let from = [CampaignStatus::Draft.as_str(), CampaignStatus::Scheduled.as_str()];
    if !campaigns::transition(tx, id, &from, to.as_str(), stamps, now)? {
        return Err(Error::malformed("The campaign changed meanwhile; it can no longer be sent"));
    }
    campaigns::set_local_time(tx, id, local_time)?;
    let sent = campaigns::by_id(tx, id)?.ok_or_else(|| CampaignId::missing(id))?;
    queue::enqueue_soonest(tx, &jobs::campaign_send(&sent.project_id, id, at.unwrap_or(now)))?;
    Ok(sent)
}

/// What the send job found when it came to campaign `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The campaign is gone: nothing to do.
    Gone,
    /// It is scheduled for this later time (it was rescheduled): come back then.
    Later(i64),
    /// It is SENDING (started now if its time had come): expand it.
    Expand,
}

/// Starts campaign `id` if it is SCHEDULED and its time has come.
pub fn start(tx: &Tx, id: &str, now: i64) -> Result<Start> {
    let Some(c) = campaigns::by_id(tx, id)? else { return Ok(Start::Gone) };
    if CampaignStatus::of(&c) == Some(CampaignStatus::Scheduled) {
        match c.scheduled_for {
            Some(at) if at > now => return Ok(Start::Later(at)),
            _ => {
                let stamps = Stamps { sent_at: Some(now), ..Stamps::default() };
                let from = [CampaignStatus::Scheduled.as_str()];
                campaigns::transition(tx, &c.id, &from, CampaignStatus::Sending.as_str(), stamps, now)?;
            }
        }
    }
    Ok(Start::Expand)
}

/// Cancels a SCHEDULED or SENDING campaign and enqueues the job that takes its queued mail out
/// of the queue; the campaign as it is now.
pub fn cancel(tx: &Tx, c: &Campaign, now: i64) -> Result<Campaign> {
    let stamps = Stamps { finished_at: Some(now), ..Stamps::default() };
    let from = [CampaignStatus::Scheduled.as_str(), CampaignStatus::Sending.as_str()];
    if !campaigns::transition(tx, &c.id, &from, CampaignStatus::Cancelled.as_str(), stamps, now)? {
        let current = campaigns::by_id(tx, &c.id)?.map(|c| c.status).unwrap_or_default();
        return Err(Error::malformed(format!(
            "Only SCHEDULED and SENDING campaigns can be cancelled; this one is {current}"
        )));
    }
    queue::enqueue(tx, &jobs::campaign_cancel(&c.project_id, &c.id))?;
    campaigns::by_id(tx, &c.id)?.ok_or_else(|| CampaignId::missing(&c.id))
}

/// Deletes campaign `id` of `project` unless it is sending.
pub fn delete(tx: &Tx, project: &str, id: &CampaignId) -> Result<()> {
    let current = find(tx, project, id)?;
    if CampaignStatus::of(&current) == Some(CampaignStatus::Sending) {
        return Err(Error::conflict("The campaign is sending; cancel it first, then delete it"));
    }
    campaigns::delete(tx, &current.id)?;
    Ok(())
}

/// A new DRAFT with `original`'s content and audience.
pub fn copy_of(original: &Campaign, now: i64) -> Campaign {
    Campaign {
        name: format!("{} (copy)", original.name).chars().take(200).collect(),
        description: original.description.clone(),
        subject: original.subject.clone(),
        body: original.body.clone(),
        format: original.format.clone(),
        source: original.source.clone(),
        from_email: original.from_email.clone(),
        from_name: original.from_name.clone(),
        reply_to: original.reply_to.clone(),
        kind: original.kind.clone(),
        audience_type: original.audience_type.clone(),
        segment_id: original.segment_id.clone(),
        audience_condition: original.audience_condition.clone(),
        template_id: original.template_id.clone(),
        topic_id: original.topic_id.clone(),
        public: original.public,
        track_links: original.track_links,
        archive_data: original.archive_data.clone(),
        ..draft(&original.project_id, now)
    }
}

/// Saves a copy of `original` as a new DRAFT, references included.
pub fn duplicate(tx: &Tx, original: &Campaign, now: i64) -> Result<Campaign> {
    let copy = copy_of(original, now);
    campaigns::insert(tx, &copy)?;
    super::campaigns::copy_references(tx, original, &copy)?;
    if original.ab.is_some() {
        crate::db::ab_tests::copy(tx, &original.id, &copy.id, now)?;
        return campaigns::by_id(tx, &copy.id)?.ok_or_else(|| CampaignId::missing(&copy.id));
    }
    Ok(copy)
}

/// Lists campaign `c` in the archive or takes it out, and sets what its archived copy is
/// rendered with, in any state: neither changes what was or will be sent.
pub fn publish(
    tx: &Tx,
    c: &Campaign,
    public: bool,
    archive_data: Option<String>,
    now: i64,
) -> Result<Campaign> {
    campaigns::set_publication(tx, &c.id, public, archive_data.as_deref(), now)?;
    campaigns::get(tx, &c.project_id, &c.id)?
        .ok_or_else(|| CampaignId::missing(&CampaignId::from_row(c.id.as_str())))
}

/// Queues the campaign once to `to`, marked as a test, from a verified sender, rendered as the
/// `chosen` contact (else as the contact with that address, if any).
pub fn send_test(tx: &Tx, c: &Campaign, to: &str, chosen: Option<&str>, now: i64) -> Result<Email> {
    require_verified_sender(tx, &c.project_id, &c.from_email)?;
    let contact = test_recipient(tx, &c.project_id, chosen, to)?;
    Ok(outbound::queue(tx, EmailSource::Test, test_email(c, to, contact), now)?)
}
