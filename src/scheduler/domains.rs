//! The periodic re-check of sender domains and inbound domains: every pending and verified domain is checked once per
//! `[dns] domain_check_interval_secs`, each at its own time (new domains start at a random point
//! of the interval), a few at a time, so many domains never make a burst of lookups.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::handlers::{JobContext, JobOutcome, JobResult, Registry};
use crate::clock;
use crate::config::Config;
use crate::core::Error as CoreError;
use crate::core::domains as core_domains;
use crate::core::inbound;
use crate::core::jobs::JobKind;
use crate::db::domains;
use crate::db::inbound as inbound_rows;
use crate::state::AppState;

/// Domains checked at once.
const CONCURRENCY: usize = 8;
/// Domains taken per run.
const BATCH: usize = 200;

pub fn register(registry: &mut Registry, config: &Config) {
    let interval = u64::from(config.dns.domain_check_interval_secs);
    let tick = Duration::from_secs((interval / 4).clamp(1, 60));
    registry.periodic(JobKind::DomainCheck.name(), tick, run);
}

async fn run(ctx: JobContext) -> JobResult {
    let (due, inbound_due) = ctx
        .state
        .db
        .run(|conn| {
            let now = clock::now_ms();
            Ok::<_, CoreError>((
                domains::due(conn, now, BATCH)?,
                inbound_rows::due_domains(conn, now, BATCH)?,
            ))
        })
        .await
        .map_err(|e| super::handlers::JobError::Retry(e.to_string()))?;
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut checks = JoinSet::new();
    for item in due.into_iter().map(Due::Sender).chain(inbound_due.into_iter().map(Due::Inbound)) {
        let (state, permits) = (ctx.state.clone(), permits.clone());
        checks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            check(&state, item).await
        });
    }
    while let Some(done) = checks.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("domain check failed: {e}"),
            Err(e) => tracing::warn!("domain check task failed: {e}"),
        }
    }
    Ok(JobOutcome::Done)
}

/// A domain whose check is due, by its id.
enum Due {
    Sender(String),
    Inbound(String),
}

/// Checks a due domain (gone meanwhile: nothing to do) and saves what DNS said.
async fn check(state: &AppState, due: Due) -> Result<(), CoreError> {
    let interval = state.config.dns.domain_check_interval_secs;
    match due {
        Due::Sender(id) => {
            let domain = state.db.run(move |conn| Ok::<_, CoreError>(domains::by_id(conn, &id)?)).await?;
            if let Some(domain) = domain {
                core_domains::check_and_save(&state.dns, &state.db, interval, domain).await?;
            }
        }
        Due::Inbound(id) => {
            let domain =
                state.db.run(move |conn| Ok::<_, CoreError>(inbound_rows::domain_by_id(conn, &id)?)).await?;
            if let Some(domain) = domain {
                let host = state.config.inbound_host();
                inbound::check_and_save(&state.dns, &state.db, (&host, interval), domain).await?;
            }
        }
    }
    Ok(())
}
