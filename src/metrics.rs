//! What an operator graphs: the series of `GET /metrics` (appliance.md §12), kept with
//! `prometheus-client` and encoded by it in the OpenMetrics text format that Prometheus scrapes.
//!
//! Counters and histograms are updated where things happen (the response fairing, the delivery
//! worker); the queue and job gauges are read from the database when the endpoint is scraped,
//! so they are exact and cost nothing between scrapes.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// `route`: the route's template (`/contacts/<id>`), so ids never become series; `status`: the
/// HTTP status code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabel {
    pub route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabel {
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct JobLabels {
    pub kind: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CapLabel {
    pub cap: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: String,
}

/// `provider`: a named receiving provider (`gmail`, `microsoft`, `yahoo`, `apple`) or `other`,
/// so domains never become series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabels {
    pub provider: String,
    pub outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ProviderLabel {
    pub provider: String,
}

/// The receiving providers' series: the named providers (`core::providers::NAMED`) and the
/// rest summed as `other`.
const PROVIDERS: [&str; 5] = ["gmail", "microsoft", "yahoo", "apple", "other"];

fn latency_histogram() -> Histogram {
    // 0.5 ms to about 16 s.
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// The series, and the registry that encodes them.
pub struct Metrics {
    registry: Registry,
    pub http_requests: Family<HttpLabels, Counter>,
    pub http_duration: Family<RouteLabel, Histogram, fn() -> Histogram>,
    /// Emails by what became of them at the relay: `sent`, `failed`, `deferred` (a temporary
    /// refusal, tried again later).
    pub emails: Family<StatusLabel, Counter>,
    pub relay_handoff: Histogram,
    pub webhook_deliveries: Family<ResultLabel, Counter>,
    delivery_queue: Family<StateLabel, Gauge>,
    jobs: Family<JobLabels, Gauge>,
    /// Workflow starts a loop cap refused, by the cap's setting (issue 29).
    workflow_starts_refused: Family<CapLabel, Counter>,
    /// Emails by receiving provider and what happened: `sent`, `deferred` (by the provider),
    /// `held_rate`, `held_backoff`, `held_warmup` (held back by its queue or warm-up).
    provider_emails: Family<ProviderLabels, Counter>,
    /// Seconds left of each resting provider's rest.
    provider_resting: Family<ProviderLabel, Gauge>,
    /// When the newest checked backup started, in seconds since the epoch (0: none yet).
    backup_last_success: Gauge,
    data_bytes: Gauge,
    data_budget_bytes: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("tidings");
        let http_requests = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            http_requests.clone(),
        );
        let http_duration =
            Family::<RouteLabel, Histogram, fn() -> Histogram>::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response, by route",
            http_duration.clone(),
        );
        let emails = Family::<StatusLabel, Counter>::default();
        registry.register("emails", "Emails by outcome at the relay: sent, failed, deferred", emails.clone());
        let delivery_queue = Family::<StateLabel, Gauge>::default();
        registry.register(
            "delivery_queue",
            "Emails waiting to be delivered: due now, waiting for a retry, being handed over",
            delivery_queue.clone(),
        );
        let jobs = Family::<JobLabels, Gauge>::default();
        registry.register("jobs", "Background jobs by kind and status", jobs.clone());
        let relay_handoff = latency_histogram();
        registry.register(
            "relay_handoff_seconds",
            "Time to hand one signed message to the relay (SMTP transaction)",
            relay_handoff.clone(),
        );
        let webhook_deliveries = Family::<ResultLabel, Counter>::default();
        registry.register(
            "webhook_deliveries",
            "Outbound webhook deliveries by result",
            webhook_deliveries.clone(),
        );
        let workflow_starts_refused = Family::<CapLabel, Counter>::default();
        registry.register(
            "workflow_starts_refused",
            "Workflow executions not started because a contact reached a loop cap, by the cap's setting",
            workflow_starts_refused.clone(),
        );
        let provider_emails = Family::<ProviderLabels, Counter>::default();
        registry.register(
            "provider_emails",
            "Emails by receiving provider: sent, deferred by the provider, or held back by its rate, its rest or a warm-up",
            provider_emails.clone(),
        );
        let provider_resting = Family::<ProviderLabel, Gauge>::default();
        registry.register(
            "provider_resting_seconds",
            "Seconds left of a receiving provider's rest after it deferred mail",
            provider_resting.clone(),
        );
        let backup_last_success = Gauge::default();
        registry.register(
            "backup_last_success_timestamp_seconds",
            "When the newest backup that passed its integrity check was started (0: none yet)",
            backup_last_success.clone(),
        );
        let data_bytes = Gauge::default();
        registry.register(
            "data_bytes",
            "Bytes the data directory takes (database, log, uploads, backups kept there)",
            data_bytes.clone(),
        );
        let data_budget_bytes = Gauge::default();
        registry.register(
            "data_budget_bytes",
            "The data directory's budget, [database] disk_budget_bytes (0: none); alert at 90 %",
            data_budget_bytes.clone(),
        );
        // The known outcomes exist from the start, at zero, so graphs and alerts have a series.
        for status in ["sent", "failed", "deferred"] {
            emails.get_or_create_owned(&StatusLabel { status: status.into() });
        }
        for result in ["success", "failure"] {
            webhook_deliveries.get_or_create_owned(&ResultLabel { result: result.into() });
        }
        for cap in ["workflow_runs_per_contact_hour", "chained_runs_per_contact_hour"] {
            workflow_starts_refused.get_or_create_owned(&CapLabel { cap: cap.into() });
        }
        for provider in PROVIDERS {
            for outcome in ["sent", "deferred", "held_rate", "held_backoff", "held_warmup"] {
                let labels = ProviderLabels { provider: provider.into(), outcome: outcome.into() };
                provider_emails.get_or_create_owned(&labels);
            }
        }
        Metrics {
            registry,
            http_requests,
            http_duration,
            emails,
            relay_handoff,
            webhook_deliveries,
            delivery_queue,
            jobs,
            workflow_starts_refused,
            provider_emails,
            provider_resting,
            backup_last_success,
            data_bytes,
            data_budget_bytes,
        }
    }
}

/// What the database says at scrape time.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Snapshot {
    /// `(state, count)` of queued emails.
    pub queue: Vec<(String, i64)>,
    /// `(kind, status, count)` of jobs.
    pub jobs: Vec<(String, String, i64)>,
    /// `(cap, total)` of workflow starts refused by the loop caps since the process started.
    pub refused_starts: Vec<(String, u64)>,
    /// `(provider series, seconds)` left of each resting receiving provider's rest.
    pub resting: Vec<(String, i64)>,
    /// When the newest checked backup started (ms), if there is one.
    pub last_backup_ms: Option<i64>,
    /// The bytes the data takes, and its budget (0: none).
    pub data_bytes: u64,
    pub data_budget_bytes: u64,
}

impl Metrics {
    pub fn shared() -> Arc<Metrics> {
        Arc::new(Metrics::default())
    }

    /// Counts an answered request.
    pub fn request(&self, route: &str, status: u16, took: Duration) {
        self.http_requests.get_or_create(&HttpLabels { route: route.to_string(), status }).inc();
        self.http_duration
            .get_or_create(&RouteLabel { route: route.to_string() })
            .observe(took.as_secs_f64());
    }

    /// Counts an email's outcome at the relay.
    pub fn email(&self, status: &str) {
        self.emails.get_or_create(&StatusLabel { status: status.to_string() }).inc();
    }

    /// Counts an email of receiving `provider` (its series: `core::providers::series`) by
    /// `outcome`: `sent`, `deferred`, or `held_` and the reason it was held back.
    pub fn provider(&self, provider: &str, outcome: &str) {
        let labels = ProviderLabels { provider: provider.to_string(), outcome: outcome.to_string() };
        self.provider_emails.get_or_create(&labels).inc();
    }

    /// The text of a scrape, with the gauges set from `snapshot`.
    pub fn encode(&self, snapshot: &Snapshot) -> String {
        self.delivery_queue.clear();
        for state in ["due", "retrying", "sending"] {
            self.delivery_queue.get_or_create(&StateLabel { state: state.into() }).set(0);
        }
        for (state, count) in &snapshot.queue {
            self.delivery_queue.get_or_create(&StateLabel { state: state.clone() }).set(*count);
        }
        self.jobs.clear();
        for (kind, status, count) in &snapshot.jobs {
            self.jobs.get_or_create(&JobLabels { kind: kind.clone(), status: status.clone() }).set(*count);
        }
        for (cap, total) in &snapshot.refused_starts {
            let counter = self.workflow_starts_refused.get_or_create(&CapLabel { cap: cap.clone() });
            counter.inc_by(total.saturating_sub(counter.get()));
        }
        self.provider_resting.clear();
        for provider in PROVIDERS {
            self.provider_resting.get_or_create(&ProviderLabel { provider: provider.into() }).set(0);
        }
        for (provider, seconds) in &snapshot.resting {
            let labels = ProviderLabel { provider: provider.clone() };
            let gauge = self.provider_resting.get_or_create(&labels);
            gauge.set(gauge.get().max(*seconds));
        }
        self.backup_last_success.set(snapshot.last_backup_ms.map_or(0, |ms| ms / 1000));
        self.data_bytes.set(i64::try_from(snapshot.data_bytes).unwrap_or(i64::MAX));
        self.data_budget_bytes.set(i64::try_from(snapshot.data_budget_bytes).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_named_and_encoded() {
        let metrics = Metrics::default();
        metrics.request("/contacts/<id>", 200, Duration::from_millis(3));
        metrics.email("sent");
        metrics.relay_handoff.observe(0.01);
        let text = metrics.encode(&Snapshot {
            queue: vec![("due".into(), 4)],
            jobs: vec![("campaigns.send".into(), "queued".into(), 1)],
            refused_starts: vec![("chained_runs_per_contact_hour".into(), 3)],
            resting: vec![("gmail".into(), 42)],
            last_backup_ms: Some(1_795_000_000_123),
            data_bytes: 900,
            data_budget_bytes: 1_000,
        });
        for expected in [
            "# TYPE tidings_http_requests counter",
            r#"tidings_http_requests_total{route="/contacts/<id>",status="200"} 1"#,
            "# TYPE tidings_http_request_duration_seconds histogram",
            r#"tidings_emails_total{status="sent"} 1"#,
            r#"tidings_delivery_queue{state="due"} 4"#,
            r#"tidings_jobs{kind="campaigns.send",status="queued"} 1"#,
            "tidings_relay_handoff_seconds_count 1",
            "# TYPE tidings_webhook_deliveries counter",
            r#"tidings_webhook_deliveries_total{result="failure"} 0"#,
            r#"tidings_emails_total{status="deferred"} 0"#,
            r#"tidings_workflow_starts_refused_total{cap="chained_runs_per_contact_hour"} 3"#,
            r#"tidings_workflow_starts_refused_total{cap="workflow_runs_per_contact_hour"} 0"#,
            r#"tidings_provider_resting_seconds{provider="gmail"} 42"#,
            "tidings_backup_last_success_timestamp_seconds 1795000000",
            "tidings_data_bytes 900",
            "tidings_data_budget_bytes 1000",
            "# EOF",
        ] {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
        // Gauges follow the database: what is gone from it is gone from the scrape (the queue's
        // three states stay, at zero).
        let text = metrics.encode(&Snapshot::default());
        assert!(text.contains(r#"tidings_delivery_queue{state="due"} 0"#), "{text}");
        assert!(!text.contains("tidings_jobs{"), "{text}");
    }
}
