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

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::core::ab_tests::{self, Decision};
use crate::core::campaign_state::{self, Start};
use crate::core::campaigns::{EXPAND_BATCH, Expansion, expand_step};
use crate::core::jobs::JobKind;
use crate::db::emails;

/// Queued emails taken out per transaction when a campaign is cancelled.
pub const CANCEL_BATCH: usize = 5000;

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::CampaignSend.name(), Duration::from_secs(6 * 3600), send);
    registry.register(JobKind::CampaignCancel.name(), Duration::from_secs(3600), cancel);
    registry.register(JobKind::CampaignDecide.name(), Duration::from_secs(600), decide);
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
    match db.write(move |tx| campaign_state::start(tx, &start_id, clock::now_ms())).await? {
        Start::Gone => return Ok(JobOutcome::Done),
        Start::Later(at) => return Ok(JobOutcome::RunAgainAt(at)),
        Start::Expand => {}
    }
    loop {
        let step_id = id.clone();
        let step = db.write_alone(move |tx| expand_step(tx, &step_id, EXPAND_BATCH, clock::now_ms())).await?;
        if step != Expansion::Running {
            return Ok(JobOutcome::Done);
        }
    }
}

/// Picks the winner of a campaign's A/B test when its wait is over (the decision enqueues the
/// expansion of the rest).
async fn decide(ctx: JobContext) -> JobResult {
    let id = ctx.payload::<Payload>()?.campaign;
    match ctx.state.db.write(move |tx| ab_tests::decide_due(tx, &id, clock::now_ms())).await? {
        Decision::Later(at) => Ok(JobOutcome::RunAgainAt(at)),
        Decision::Nothing | Decision::ByHand | Decision::Decided(_) => Ok(JobOutcome::Done),
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
