//! Campaigns in the background: one durable job per campaign starts it at its scheduled time
//! and expands its audience into email rows batch by batch; another takes the rows of a
//! cancelled campaign out of the queue.
//!
//! The start job is deduplicated per campaign and survives restarts (it is a row): a campaign
//! scheduled for 09:00 starts when the scheduler wakes for it, within a second. Each expansion
//! batch commits its rows with the campaign's cursor, so a restarted job carries on after the
//! last committed batch and never queues a contact twice.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{JobContext, JobOutcome, JobResult, NewJob, Registry};
use crate::clock;
use crate::core::campaigns::{EXPAND_BATCH, Expansion, expand_step};
use crate::db::campaigns::{self, Stamps};
use crate::db::{DbError, emails};

pub const SEND_KIND: &str = "campaigns.send";
pub const CANCEL_KIND: &str = "campaigns.cancel";
/// Queued emails taken out per transaction when a campaign is cancelled.
pub const CANCEL_BATCH: usize = 5000;

pub fn register(registry: &mut Registry) {
    registry.register(SEND_KIND, Duration::from_secs(6 * 3600), send);
    registry.register(CANCEL_KIND, Duration::from_secs(3600), cancel);
}

/// The job that starts (at `at`) and expands campaign `id`: one per campaign at a time.
pub fn send_job(project: &str, id: &str, at: i64) -> NewJob {
    NewJob::new(SEND_KIND, &json!({ "campaign": id }))
        .project(project)
        .dedupe(format!("{SEND_KIND}:{id}"))
        .at(at)
}

/// The job that takes a cancelled campaign's queued emails out of the queue.
pub fn cancel_job(project: &str, id: &str) -> NewJob {
    NewJob::new(CANCEL_KIND, &json!({ "campaign": id }))
        .project(project)
        .dedupe(format!("{CANCEL_KIND}:{id}"))
}

#[derive(Deserialize)]
struct Payload {
    campaign: String,
}

async fn send(ctx: JobContext) -> JobResult {
    let id = ctx.payload::<Payload>()?.campaign;
    let db = &ctx.state.db;
    // Start a scheduled campaign whose time has come (a later time means it was rescheduled).
    let start_id = id.clone();
    let started = db
        .write(move |tx| {
            let Some(c) = campaigns::by_id(tx, &start_id)? else { return Ok::<_, DbError>(Err(())) };
            let now = clock::now_ms();
            if c.status == "SCHEDULED" {
                match c.scheduled_for {
                    Some(at) if at > now => return Ok(Ok(Some(at))),
                    _ => {
                        let stamps = Stamps { sent_at: Some(now), ..Stamps::default() };
                        campaigns::transition(tx, &c.id, &["SCHEDULED"], "SENDING", stamps, now)?;
                    }
                }
            }
            Ok(Ok(None))
        })
        .await?;
    match started {
        Err(()) => return Ok(JobOutcome::Done),
        Ok(Some(later)) => return Ok(JobOutcome::RunAgainAt(later)),
        Ok(None) => {}
    }
    loop {
        let step_id = id.clone();
        let step = db.write_alone(move |tx| expand_step(tx, &step_id, EXPAND_BATCH, clock::now_ms())).await?;
        if step != Expansion::Running {
            return Ok(JobOutcome::Done);
        }
    }
}

async fn cancel(ctx: JobContext) -> JobResult {
    let id = ctx.payload::<Payload>()?.campaign;
    let mut after = String::new();
    loop {
        let (batch_id, from) = (id.clone(), after.clone());
        let last = ctx
            .state
            .db
            .write_alone(move |tx| emails::cancel_queued(tx, &batch_id, &from, CANCEL_BATCH, clock::now_ms()))
            .await?;
        match last {
            Some(last) => after = last,
            None => return Ok(JobOutcome::Done),
        }
    }
}
