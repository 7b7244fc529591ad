//! `[server]`, `[database]`, `[dns]`, `[metrics]` and `[scheduler]`: how the appliance runs.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[server]`: where the HTTP server listens and how it is reached from outside.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub address: IpAddr,
    /// 0 picks a free port (useful in tests).
    pub port: u16,
    /// Base of every link put in mail; `http://<address>:<port>` when absent.
    pub public_url: Option<String>,
    /// Peers whose `X-Forwarded-For` is believed. Loopback by default: a reverse proxy on the
    /// same machine is the recommended setup, and without this every client would look like
    /// 127.0.0.1 (one guesser would lock sign-in for everyone).
    pub trusted_proxies: Vec<IpAddr>,
    /// Directory holding the database (unless `[database] path` is set) and uploads.
    pub data_dir: PathBuf,
    /// Seconds in-flight requests and jobs get to finish after SIGTERM.
    pub shutdown_grace_secs: u32,
    /// `error`, `warn`, `info`, `debug` or `trace`, or a tracing filter directive.
    pub log_level: String,
    /// Sender of the mail the server sends itself (verification, password reset, invitations):
    /// `"Name <address>"` or an address. Default: `Tidings <tidings@<public_url's host>>`.
    pub system_from: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            address: IpAddr::from([127, 0, 0, 1]),
            port: 8080,
            public_url: None,
            trusted_proxies: vec![IpAddr::from([127, 0, 0, 1]), IpAddr::from(std::net::Ipv6Addr::LOCALHOST)],
            data_dir: PathBuf::from("./data"),
            shutdown_grace_secs: 5,
            log_level: "info".into(),
            system_from: None,
        }
    }
}

/// `[database]`: the SQLite file and its connection pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `<data_dir>/tidings.db` when absent.
    pub path: Option<PathBuf>,
    pub pool_size: u32,
    pub busy_timeout_ms: u32,
    /// The room the data directory may take, in bytes (0: no budget): `/metrics` and the
    /// dashboard warn at 90 % of it.
    pub disk_budget_bytes: u64,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self { path: None, pool_size: 8, busy_timeout_ms: 5000, disk_budget_bytes: 0 }
    }
}

/// `[dns]`: the resolver used for domain checks and email verification.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DnsConfig {
    /// `ip:port` entries; empty means the system's resolvers.
    pub nameservers: Vec<SocketAddr>,
    pub timeout_ms: u32,
    pub domain_check_interval_secs: u32,
}

impl Default for DnsConfig {
    fn default() -> Self {
        Self { nameservers: Vec::new(), timeout_ms: 5000, domain_check_interval_secs: 300 }
    }
}

/// `[metrics]`: `GET /metrics` in the Prometheus (OpenMetrics) text format.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    pub enabled: bool,
    /// When set, scrapes must send `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self { enabled: true, token: None }
    }
}

/// `[scheduler]`: the durable job runner.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Jobs run at the same time.
    pub workers: u32,
    /// How long a claimed job stays locked before another worker may take it.
    pub lease_secs: u32,
    /// First retry delay; doubles on every further attempt.
    pub retry_base_secs: u32,
    /// Longest sleep between looks at the jobs table when nothing wakes the scheduler.
    pub max_idle_secs: u32,
    pub idempotency_sweep_secs: u32,
    /// Finished and failed jobs are deleted after this long.
    pub job_retention_hours: u32,
    /// How often segment counts are refreshed and tracked segments recomputed.
    pub segment_refresh_secs: u32,
    /// Shifts the server's clock by this many seconds: to rehearse a schedule (a campaign at
    /// 09:00 in three time zones) on a copy of the database, and for tests. 0 in production.
    pub clock_offset_secs: i64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            lease_secs: 300,
            retry_base_secs: 30,
            max_idle_secs: 60,
            idempotency_sweep_secs: 3600,
            job_retention_hours: 168,
            segment_refresh_secs: 300,
            clock_offset_secs: 0,
        }
    }
}
