//! Erasing a contact's data (issue 35, item 6): `contacts.erase` runs the erasure's steps
//! ([`crate::db::erasure::step`]) paced like a wipe ([`pacing`]) until the contact is gone.
//! The request that asks for it runs the same loop for a moment first, so a small erasure is
//! done when it answers; the job finishes a large one, and resumes one a restart interrupted.

use std::time::{Duration, Instant};

use serde::Deserialize;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use super::pacing::{self, Paced};
use crate::clock;
use crate::core::jobs::JobKind;
use crate::db::erasure::{self, Step};
use crate::db::{DbError, batches};
use crate::state::AppState;

/// How long one step erases before it commits.
const STEP_BUDGET: Duration = Duration::from_millis(15);

pub fn register(registry: &mut Registry) {
    registry.register(JobKind::ContactErase.name(), Duration::from_secs(24 * 3600), run);
}

#[derive(Deserialize)]
struct Payload {
    erasure: String,
}

async fn run(ctx: JobContext) -> JobResult {
    let Payload { erasure } = ctx.payload()?;
    let project = ctx.job.project_id.clone().unwrap_or_default();
    erase(&ctx.state, &project, &erasure, None).await?;
    Ok(JobOutcome::Done)
}

/// Runs erasure `id` of `project` until it is done, or until `until` passes; whether it is
/// done.
pub async fn erase(
    state: &AppState,
    project: &str,
    id: &str,
    until: Option<Instant>,
) -> Result<bool, DbError> {
    let (project, id) = (project.to_string(), id.to_string());
    let found = {
        let (project, id) = (project.clone(), id.clone());
        state.db.run(move |conn| erasure::get(conn, &project, &id)).await?
    };
    let Some(found) = found.filter(|e| e.status == "running") else { return Ok(true) };
    let contact = found.contact_id;
    let mut done = false;
    pacing::run(&state.db, |before: Option<&Paced<Step>>| {
        let chunk = match before {
            None => batches::CHUNK,
            Some(taken) => match taken.step {
                Step::More { chunk, .. } if until.is_none_or(|t| Instant::now() < t) => chunk,
                Step::More { .. } => return None,
                Step::Done { .. } => {
                    done = true;
                    return None;
                }
            },
        };
        let (project, contact, id) = (project.clone(), contact.clone(), id.clone());
        Some(move |tx: &crate::db::Tx| {
            let step = erasure::step(tx, &project, &contact, (STEP_BUDGET, chunk), clock::now_ms())?;
            match step {
                Step::More { rows, .. } => erasure::progress(tx, &id, rows as i64)?,
                Step::Done { rows } => erasure::finish(tx, &id, rows as i64, clock::now_ms())?,
            }
            Ok(step)
        })
    })
    .await?;
    Ok(done)
}
