//! The background work the application asks for: the kinds of job ([`JobKind`]) and, for each
//! kind a use case starts, the job it enqueues, so no handler names a kind or builds a payload.
//! The scheduler registers one handler per kind.

use serde_json::json;

use crate::db::jobs::NewJob;

/// Every kind of job; [`JobKind::name`] is what the `jobs` table stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// Starts (at its time) and expands a campaign into email rows.
    CampaignSend,
    /// Takes a cancelled campaign's queued emails out of the queue.
    CampaignCancel,
    /// Picks the winner of a campaign's A/B test at the end of its wait.
    CampaignDecide,
    /// Runs a `contact_jobs` row: an import, a bulk action or a field removal.
    ContactJob,
    /// Checks the DNS of the sender domains that are due (periodic).
    DomainCheck,
    /// Deletes a project's events of one name.
    EventDelete,
    /// Refreshes the dynamic segments that track membership (periodic).
    SegmentRefresh,
    /// Computes one segment's membership.
    SegmentCompute,
    /// Resets or deletes a project.
    ProjectWipe,
    /// Forgets expired idempotency keys, sessions and tokens (periodic).
    IdempotencySweep,
    /// Forgets finished jobs (periodic).
    JobSweep,
    /// Deletes received messages past `[inbound] retention_days` (periodic).
    InboundSweep,
    /// Emits the `email.clicked` events of a project's held clicks that are due.
    ClickRelease,
    /// Removes what has outlived each project's retention periods (periodic).
    RetentionPrune,
    /// Makes a backup when `[backup] schedule` says one is due (periodic).
    BackupScheduled,
    /// Erases a contact's data, at the person's request.
    ContactErase,
    /// Writes a project's data to one zip file.
    ProjectExport,
}

impl JobKind {
    pub const fn name(self) -> &'static str {
        match self {
            Self::CampaignSend => "campaigns.send",
            Self::CampaignCancel => "campaigns.cancel",
            Self::CampaignDecide => "campaigns.decide",
            Self::ContactJob => "contacts.job",
            Self::DomainCheck => "domains.check",
            Self::EventDelete => "events.delete",
            Self::SegmentRefresh => "segments.refresh",
            Self::SegmentCompute => "segments.compute",
            Self::ProjectWipe => "project.wipe",
            Self::IdempotencySweep => "sweep.idempotency",
            Self::JobSweep => "sweep.jobs",
            Self::InboundSweep => "sweep.inbound",
            Self::ClickRelease => "engagements.release",
            Self::RetentionPrune => "retention.prune",
            Self::BackupScheduled => "backup.scheduled",
            Self::ContactErase => "contacts.erase",
            Self::ProjectExport => "project.export",
        }
    }

    /// A job of this kind with `payload`, due now.
    fn job(self, payload: &serde_json::Value) -> NewJob {
        NewJob::new(self.name(), payload)
    }
}

/// Starts (at `at`) and expands campaign `id`: one per campaign at a time.
pub fn campaign_send(project: &str, id: &str, at: i64) -> NewJob {
    let kind = JobKind::CampaignSend;
    kind.job(&json!({ "campaign": id })).project(project).dedupe(format!("{}:{id}", kind.name())).at(at)
}

/// Writes project export `id`.
pub fn project_export(project: &str, id: &str) -> NewJob {
    let kind = JobKind::ProjectExport;
    kind.job(&json!({ "export": id })).project(project).dedupe(format!("{}:{id}", kind.name()))
}

/// Finishes erasure `id` (one per erasure).
pub fn contact_erasure(project: &str, id: &str) -> NewJob {
    let kind = JobKind::ContactErase;
    kind.job(&json!({ "erasure": id })).project(project).dedupe(format!("{}:{id}", kind.name()))
}

/// Takes cancelled campaign `id`'s queued emails out of the queue.
pub fn campaign_cancel(project: &str, id: &str) -> NewJob {
    let kind = JobKind::CampaignCancel;
    kind.job(&json!({ "campaign": id })).project(project).dedupe(format!("{}:{id}", kind.name()))
}

/// Picks the winner of campaign `id`'s A/B test at `at`, the end of its wait.
pub fn campaign_decide(project: &str, id: &str, at: i64) -> NewJob {
    let kind = JobKind::CampaignDecide;
    kind.job(&json!({ "campaign": id })).project(project).dedupe(format!("{}:{id}", kind.name())).at(at)
}

/// Runs contact job `id`.
pub fn contact_job(project: &str, id: &str) -> NewJob {
    JobKind::ContactJob.job(&json!({ "id": id })).project(project)
}

/// Deletes the events named `name` in `project` (one per name at a time).
pub fn event_delete(project: &str, name: &str) -> NewJob {
    let kind = JobKind::EventDelete;
    kind.job(&json!({ "project": project, "name": name }))
        .project(project)
        .dedupe(format!("{}:{project}:{name}", kind.name()))
}

/// Emits `project`'s held clicks at `at` (with `db::jobs::enqueue_unless_queued`: one waits per
/// project).
pub fn click_release(project: &str, at: i64) -> NewJob {
    JobKind::ClickRelease.job(&json!({ "project": project })).project(project).at(at)
}

/// Computes segment `id`'s membership (one per segment at a time).
pub fn segment_compute(project: &str, id: &str) -> NewJob {
    let kind = JobKind::SegmentCompute;
    kind.job(&json!({ "segment": id })).project(project).dedupe(format!("{}:{id}", kind.name()))
}

/// Wipes `project`. Not tied to the project's row (a project's jobs go with it): it outlives
/// the project it deletes.
pub fn project_wipe(project: &str) -> NewJob {
    JobKind::ProjectWipe.job(&json!({ "project": project })).max_attempts(50)
}
