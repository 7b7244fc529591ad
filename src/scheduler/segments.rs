//! Segments in the background: a periodic job refreshes every segment's count and queues a
//! membership computation for each tracked segment; a computation job runs one segment's run
//! batch by batch (each batch commits its cursor, so a restarted job carries on where it was).

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{JobContext, JobOutcome, JobResult, NewJob, Registry};
use crate::clock;
use crate::config::Config;
use crate::core::segments::{self as core_segments, COMPUTE_BATCH, Step};
use crate::db::jobs;
use crate::db::segments::{self, Segment};

pub const REFRESH_KIND: &str = "segments.refresh";
pub const COMPUTE_KIND: &str = "segments.compute";
/// Segments read per query of the periodic refresh.
const PAGE: usize = 100;

pub fn register(registry: &mut Registry, config: &Config) {
    let every = Duration::from_secs(config.scheduler.segment_refresh_secs.into());
    registry.periodic(REFRESH_KIND, every, refresh_all);
    registry.register(COMPUTE_KIND, Duration::from_secs(3600), compute);
}

/// The job that computes `segment`'s membership (one per segment at a time).
pub fn compute_job(segment: &Segment) -> NewJob {
    NewJob::new(COMPUTE_KIND, &json!({ "segment": segment.id }))
        .project(&segment.project_id)
        .dedupe(format!("{COMPUTE_KIND}:{}", segment.id))
}

async fn refresh_all(ctx: JobContext) -> JobResult {
    let state = &ctx.state;
    let mut after = String::new();
    loop {
        let from = after.clone();
        let page = state.db.run(move |conn| segments::page_all(conn, &from, PAGE)).await?;
        for segment in &page {
            if core_segments::is_tracked_dynamic(segment) {
                let job = compute_job(segment);
                state.db.write(move |tx| jobs::enqueue(tx, &job)).await?;
            } else if let Err(e) = core_segments::recount(state, segment.clone()).await {
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
