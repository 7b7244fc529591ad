//! The retention job (issue 35, item 1): `retention.prune`, every `[retention] interval_secs`,
//! removes from each project what has outlived its periods ([`crate::db::retention`]), in paced
//! steps that never hold the writer long ([`pacing`]), then gives the freed pages back to the
//! file system with an incremental vacuum, paced the same way.

use std::time::{Duration, Instant};

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use super::pacing::{self, Paced};
use crate::clock;
use crate::core::jobs::JobKind;
use crate::core::retention::Policy;
use crate::db::retention::{self, Step};
use crate::db::{Db, DbError, batches};
use crate::state::AppState;

/// How long one step prunes before it commits.
pub const STEP_BUDGET: Duration = Duration::from_millis(15);
/// The longest one run goes on (three quarters of its period, inside its time limit, and at
/// most 45 minutes); the next run carries on.
fn run_limit(config: &crate::config::Config) -> Duration {
    Duration::from_secs((u64::from(config.retention.interval_secs) * 3 / 4).clamp(45, 45 * 60))
}

pub fn register(registry: &mut Registry, config: &crate::config::Config) {
    let every = Duration::from_secs(config.retention.interval_secs.into());
    registry.periodic(JobKind::RetentionPrune.name(), every, run);
}

async fn run(ctx: JobContext) -> JobResult {
    let pruned = prune(&ctx.state, |_| {}).await?;
    if pruned.rows > 0 {
        tracing::info!(rows = pruned.rows, pages = pruned.pages_returned, "pruned data past its retention");
    }
    Ok(JobOutcome::Done)
}

/// What a pruning run did.
#[derive(Debug, Default, Clone, Copy)]
pub struct Pruned {
    /// Rows deleted or emptied.
    pub rows: usize,
    /// Pages given back to the file system.
    pub pages_returned: i64,
}

/// One step of a pruning run, for [`prune`]'s observer: deleting, or giving space back.
pub enum Taken<'a> {
    Prune(&'a Paced<Step>),
    /// The free pages left after the step.
    Vacuum(&'a Paced<i64>),
}

/// Prunes every project's data past its periods, then returns the space; `observe` sees each
/// step (for the benchmark).
pub async fn prune(state: &AppState, mut observe: impl FnMut(Taken)) -> Result<Pruned, DbError> {
    let started = Instant::now();
    let limit = run_limit(&state.config);
    let defaults = Policy::defaults(&state.config);
    let projects = state.db.run(|conn| retention::projects(conn)).await?;
    let mut pruned = Pruned::default();
    for project in projects {
        if started.elapsed() > limit {
            break;
        }
        let id = project.clone();
        let policy = state
            .db
            .run(move |conn| crate::core::retention::policy(conn, &id, defaults))
            .await
            .map_err(|e| DbError::Join(e.to_string()))?;
        let cutoffs = policy.cutoffs(clock::now_ms());
        pacing::run(&state.db, |before: Option<&Paced<Step>>| {
            let chunk = match before {
                None => batches::CHUNK,
                Some(taken) => {
                    observe(Taken::Prune(taken));
                    match taken.step {
                        Step::More { pruned: n, chunk, .. } => {
                            pruned.rows += n;
                            if started.elapsed() > limit {
                                return None;
                            }
                            chunk
                        }
                        Step::Done { pruned: n } => {
                            pruned.rows += n;
                            return None;
                        }
                    }
                }
            };
            let id = project.clone();
            Some(move |tx: &crate::db::Tx| retention::step(tx, &id, cutoffs, STEP_BUDGET, chunk))
        })
        .await?;
    }
    if pruned.rows > 0 {
        pruned.pages_returned = return_space(&state.db, |taken| observe(Taken::Vacuum(taken))).await?;
    }
    Ok(pruned)
}

/// Gives the database's free pages back to the file system, for [`STEP_BUDGET`] a step; how many.
/// Nothing when the file does not return space (`auto_vacuum` is not INCREMENTAL: see
/// [`retention::enable_space_return`]).
pub async fn return_space(db: &Db, mut observe: impl FnMut(&Paced<i64>)) -> Result<i64, DbError> {
    let (free, returns) = db.run(|conn| retention::free_pages(conn)).await?;
    if !returns || free == 0 {
        return Ok(0);
    }
    let mut left = free;
    pacing::run(db, |before: Option<&Paced<i64>>| {
        if let Some(taken) = before {
            observe(taken);
            left = taken.step;
        }
        (left > 0).then_some(|tx: &crate::db::Tx| retention::vacuum_step(tx, STEP_BUDGET))
    })
    .await?;
    Ok(free - left)
}
