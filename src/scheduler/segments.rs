//! Segments in the background: a periodic job refreshes every segment's count and queues a
//! membership computation for each tracked segment; a computation job runs one segment's run
//! batch by batch (each batch commits its cursor, so a restarted job carries on where it was).

use std::time::Duration;

use serde::Deserialize;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::config::Config;
use crate::core::jobs::JobKind;
use crate::core::segments::{self as core_segments, COMPUTE_BATCH, Step};
use crate::db::segments::{self};

/// Segments read per query of the periodic refresh.
const PAGE: usize = 100;

pub fn register(registry: &mut Registry, config: &Config) {
    let every = Duration::from_secs(config.scheduler.segment_refresh_secs.into());
    registry.periodic(JobKind::SegmentRefresh.name(), every, refresh_all);
    registry.register(JobKind::SegmentCompute.name(), Duration::from_secs(3600), compute);
}

async fn refresh_all(ctx: JobContext) -> JobResult {
    let state = &ctx.state;
    let mut after = String::new();
    loop {
        let from = after.clone();
        let page = state.db.run(move |conn| segments::page_all(conn, &from, PAGE)).await?;
        for segment in &page {
            if core_segments::is_tracked_dynamic(segment) {
                let segment = segment.clone();
                state.db.write(move |tx| core_segments::start_computing(tx, &segment)).await?;
            } else if let Err(e) = core_segments::recount(&state.db, segment.clone()).await {
                tracing::warn!(segment = segment.id, "could not refresh a segment's count: {e}");
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE => after = last.id.clone(),
            _ => return Ok(JobOutcome::Done),
        }
    }
}

#[derive(Deserialize)]
struct Payload {
    segment: String,
}

async fn compute(ctx: JobContext) -> JobResult {
    let id = ctx.payload::<Payload>()?.segment;
    loop {
        let id = id.clone();
        let step = ctx
            .state
            .db
            .write_alone(move |tx| core_segments::compute_step(tx, &id, COMPUTE_BATCH, clock::now_ms()))
            .await?;
        if step != Step::Running {
            return Ok(JobOutcome::Done);
        }
    }
}
