//! The outbound webhook worker: takes due deliveries with a lease, POSTs each (Standard Webhooks
//! headers and signature, 10 s, the private-address rule of [`crate::adapters::outbound_http`]), and
//! records the try: a 2xx succeeds; anything else is tried again with backoff (the first retry
//! within 30 s) until the delivery is 24 hours old. An endpoint whose deliveries have failed for
//! 24 hours is disabled, with the reason kept. At least once: a delivery whose answer came but
//! whose record did not (a crash, or a stop that cut it off) is sent again with the same
//! `webhook-id`.

use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::workers::{InHand, next_look};
use crate::adapters::outbound_http::Call;
use crate::clock;
use crate::core::webhooks::{GIVE_UP_MS, next_try, signature};
use crate::db::fair::Turns;
use crate::db::webhooks::{self, Delivery};
use crate::db::{DbError, projects};
use crate::metrics::ResultLabel;
use crate::state::AppState;

/// Deliveries sent at once.
const IN_FLIGHT: usize = 64;
/// Deliveries of one project sent at once: a project whose endpoints never answer holds these
/// and no more, so every other project's deliveries go out at once (issue 29).
const PER_PROJECT: usize = 8;
/// A claimed delivery's lease: the 10 s call and a margin.
const LEASE_MS: i64 = 60_000;

pub fn start(state: AppState, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(run(state, stopped))
}

async fn run(state: AppState, mut stopped: watch::Receiver<bool>) {
    let max_idle = Duration::from_secs(state.config.scheduler.max_idle_secs.into());
    let mut hand = InHand::default();
    let mut turns = Turns::new(PER_PROJECT);
    while !*stopped.borrow() {
        hand.reap();
        let mut wake_at = Instant::now() + max_idle;
        let free = IN_FLIGHT - hand.running.len();
        if free > 0 {
            hand.held(&mut turns);
            let mut claiming = turns.clone();
            let claimed = state
                .db
                .write(move |tx| {
                    let batch = webhooks::claim(tx, clock::now_ms(), free, LEASE_MS, &mut claiming)?;
                    Ok::<_, DbError>((batch, claiming))
                })
                .await;
            match claimed {
                Ok((batch, claiming)) => {
                    turns = claiming;
                    let full = batch.len() == free;
                    for delivery in batch {
                        if hand.insert(delivery.id.clone(), Some(delivery.project_id.clone())) {
                            hand.spawn(delivery.id.clone(), send(state.clone(), delivery));
                        }
                    }
                    if full {
                        wake_at = Instant::now();
                    } else if let Ok(Some(due)) =
                        state.db.run(|conn| webhooks::next_due(conn, clock::now_ms())).await
                    {
                        wake_at = wake_at.min(next_look(due));
                    }
                }
                Err(e) => {
                    tracing::warn!("could not claim webhook deliveries: {e}");
                    wake_at = Instant::now() + Duration::from_secs(1);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at) => {}
            _ = state.jobs.webhooks().notified() => {}
            Some(done) = hand.running.join_next(), if !hand.running.is_empty() => {
                hand.finished(done);
            }
            _ = stopped.changed() => {}
        }
    }
    let grace = Duration::from_secs(state.config.server.shutdown_grace_secs.into());
    let unfinished = hand.stop(grace).await;
    // Cut off: free them for the next worker now rather than when their lease runs out (a call
    // that reached its endpoint is sent again, with its webhook-id).
    if !unfinished.is_empty()
        && let Err(e) = state.db.write(move |tx| webhooks::release(tx, &unfinished)).await
    {
        tracing::error!("could not hand back webhook deliveries; their leases will run out: {e}");
    }
}

/// Sends one delivery and records the try; returns its id.
async fn send(state: AppState, delivery: Delivery) -> String {
    let id = delivery.id.clone();
    let _started = state.inflight.start(super::inflight::Kind::Delivery, &id);
    deliver(&state, delivery).await;
    id
}

async fn deliver(state: &AppState, delivery: Delivery) {
    let (endpoint_id, project) = (delivery.endpoint_id.clone(), delivery.project_id.clone());
    let found = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>((webhooks::by_id(conn, &endpoint_id)?, projects::is_wiping(conn, &project)?))
        })
        .await;
    let Ok((endpoint, wiping)) = found else { return };
    if wiping {
        // The project is being reset or deleted: the delivery goes, unsent.
        let id = delivery.id.clone();
        let dropped = state.db.write(move |tx| webhooks::drop_delivery(tx, &id)).await;
        if let Err(e) = dropped {
            tracing::error!("could not drop a webhook delivery: {e}");
        }
        return;
    }
    let Some(endpoint) = endpoint else { return };
    if !endpoint.enabled {
        // Disabled after it was queued: not sent, and the log says why.
        let id = delivery.id.clone();
        let recorded = state
            .db
            .write(move |tx| {
                let why = "not sent: the endpoint is disabled";
                webhooks::record(tx, &id, "failed", None, Some(why), None, clock::now_ms())
            })
            .await;
        if let Err(e) = recorded {
            tracing::error!("could not record a webhook delivery: {e}");
        }
        return;
    }
    let timestamp = clock::now_ms() / 1000;
    let call = Call {
        method: "POST".into(),
        url: endpoint.url.clone(),
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("webhook-id".into(), delivery.id.clone()),
            ("webhook-timestamp".into(), timestamp.to_string()),
            (
                "webhook-signature".into(),
                signature(&endpoint.secret, &delivery.id, timestamp, &delivery.payload),
            ),
        ],
        body: Some(delivery.payload.clone()),
    };
    let (code, error) = match state.http.call(&call).await {
        Ok(answer) if (200..300).contains(&answer.status) => (Some(i64::from(answer.status)), None),
        Ok(answer) => {
            let start: String = answer.body.chars().take(200).collect();
            (
                Some(i64::from(answer.status)),
                Some(format!("the endpoint answered {}: {start}", answer.status)),
            )
        }
        Err(why) => (None, Some(why)),
    };
    let result = if error.is_none() { "success" } else { "failure" };
    state.metrics.webhook_deliveries.get_or_create(&ResultLabel { result: result.into() }).inc();
    let recorded = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            let Some(mut endpoint) = webhooks::by_id(tx, &endpoint.id)? else { return Ok::<_, DbError>(()) };
            match &error {
                None => {
                    webhooks::record(tx, &delivery.id, "succeeded", code, None, None, now)?;
                    if endpoint.failing_since.is_some() {
                        endpoint.failing_since = None;
                        endpoint.updated_at = now;
                        webhooks::update(tx, &endpoint)?;
                    }
                }
                Some(why) => {
                    let next = next_try(delivery.created_at, delivery.attempts + 1, now);
                    let status = if next.is_some() { "pending" } else { "failed" };
                    webhooks::record(tx, &delivery.id, status, code, Some(why), next, now)?;
                    let since = *endpoint.failing_since.get_or_insert(now);
                    if now - since >= GIVE_UP_MS && endpoint.enabled {
                        endpoint.enabled = false;
                        endpoint.disabled_reason =
                            Some(format!("every delivery failed for 24 hours; the last: {why}"));
                        tracing::warn!(
                            endpoint = endpoint.id,
                            "webhook endpoint disabled after 24 hours of failures"
                        );
                    }
                    endpoint.updated_at = now;
                    webhooks::update(tx, &endpoint)?;
                }
            }
            Ok(())
        })
        .await;
    if let Err(e) = recorded {
        tracing::error!("could not record a webhook delivery; it is sent again when its lease runs out: {e}");
    }
}
