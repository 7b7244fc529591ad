//! Typed configuration: embedded defaults, a TOML file, then `TIDINGS_<SECTION>__<KEY>` variables.
//!
//! Every section rejects unknown keys, so a typo stops start-up with the key named instead of being
//! silently ignored. `validate()` adds the checks serde cannot express (ranges, URLs).

use std::net::IpAddr;
use std::path::{Path, PathBuf};

mod accounts;
mod data;
mod inbound;
mod limits;
mod mail;
mod server;
mod submission;

pub use accounts::{AuthConfig, BillingConfig, GITHUB_ID, GithubProvider, OidcProvider};
pub use data::{BackupConfig, RetentionConfig, Schedule};
pub use inbound::InboundConfig;
pub use limits::{LimitsConfig, MIB, ReputationConfig};
pub use mail::{
    BouncesConfig, DEFAULT_POOL_SIZE, ProvidersConfig, RelayConfig, SmtpConfig, SmtpSecurity, TrackingConfig,
    WebhooksConfig,
};
pub use server::{DatabaseConfig, DnsConfig, MetricsConfig, SchedulerConfig, ServerConfig};
pub use submission::SubmissionConfig;

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The prefix of every configuration environment variable.
pub const ENV_PREFIX: &str = "TIDINGS_";
/// The file read when neither `--config` nor `$TIDINGS_CONFIG` names one.
pub const DEFAULT_FILE: &str = "tidings.toml";

/// The whole configuration, one field per TOML section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub smtp: SmtpConfig,
    pub dns: DnsConfig,
    pub auth: AuthConfig,
    pub limits: LimitsConfig,
    pub tracking: TrackingConfig,
    pub billing: BillingConfig,
    pub webhooks: WebhooksConfig,
    pub reputation: ReputationConfig,
    pub bounces: BouncesConfig,
    pub submission: SubmissionConfig,
    pub inbound: InboundConfig,
    pub retention: RetentionConfig,
    pub backup: BackupConfig,
    pub scheduler: SchedulerConfig,
    pub metrics: MetricsConfig,
}

/// A configuration that could not be loaded, with every problem named.
#[derive(Debug, thiserror::Error)]
#[error("{}", .problems.join("; "))]
pub struct ConfigError {
    pub problems: Vec<String>,
}

impl ConfigError {
    fn one(problem: impl Into<String>) -> Self {
        Self { problems: vec![problem.into()] }
    }
}

/// Where the file layer comes from.
pub fn resolve_file(explicit: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(path) = explicit {
        if !path.is_file() {
            return Err(ConfigError::one(format!("configuration file {} does not exist", path.display())));
        }
        return Ok(Some(path.to_path_buf()));
    }
    if let Some(path) = std::env::var_os("TIDINGS_CONFIG") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(ConfigError::one(format!(
                "configuration file {} (from TIDINGS_CONFIG) does not exist",
                path.display()
            )));
        }
        return Ok(Some(path));
    }
    let local = PathBuf::from(DEFAULT_FILE);
    Ok(local.is_file().then_some(local))
}

impl Config {
    /// Loads defaults, then the file (see [`resolve_file`]), then the environment, and validates.
    pub fn load(explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let file = resolve_file(explicit)?;
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = &file {
            figment = figment.merge(Toml::file_exact(file));
        }
        let figment = figment
            .merge(Env::raw().only(&["disable_signups"]).map(|_| "auth.disable_signups".into()))
            .merge(Env::prefixed(ENV_PREFIX).ignore(&["config"]).split("__"));
        let config: Config = figment.extract().map_err(describe)?;
        config.validate()?;
        Ok(config)
    }

    /// Loads the embedded defaults only (what an empty directory gets).
    pub fn defaults() -> Self {
        Self::default()
    }

    /// Range and format checks that types alone do not express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        // Every number has a floor and a ceiling: a value past what any machine needs is a
        // mistake, and arithmetic on it (a pool's allocation, a product of limits, a timeout
        // that does not fit) must never wrap or abort (issue 29;
        // tests/integration/config_extremes.rs starts the server with each at its ceiling).
        let mut within = |key: &str, value: u64, min: u64, max: u64| {
            if !(min..=max).contains(&value) {
                problems.push(format!("`{key}` must be between {min} and {max} (found {value})"));
            }
        };
        const DAY: u64 = 86_400;
        const GIB: u64 = 1024 * MIB;
        let (d, smtp, l, b, sc) = (&self.database, &self.smtp, &self.limits, &self.bounces, &self.scheduler);
        within("server.shutdown_grace_secs", self.server.shutdown_grace_secs.into(), 0, 3_600);
        within("database.pool_size", d.pool_size.into(), 1, 256);
        within("database.busy_timeout_ms", d.busy_timeout_ms.into(), 1, 3_600_000);
        within("database.disk_budget_bytes", d.disk_budget_bytes, 0, 1 << 50);
        within("smtp.pool_size", smtp.pool_size.into(), 1, 1_024);
        within("smtp.timeout_secs", smtp.timeout_secs.into(), 1, 3_600);
        within("smtp.max_messages_per_second", smtp.max_messages_per_second.into(), 0, 1_000_000);
        let p = &smtp.providers;
        for (name, rate) in [
            ("gmail_per_hour", p.gmail_per_hour),
            ("microsoft_per_hour", p.microsoft_per_hour),
            ("yahoo_per_hour", p.yahoo_per_hour),
            ("apple_per_hour", p.apple_per_hour),
            ("other_per_hour", p.other_per_hour),
        ] {
            within(&format!("smtp.providers.{name}"), rate.into(), 0, 100_000_000);
        }
        within("smtp.providers.backoff_secs", p.backoff_secs.into(), 1, 86_400);
        within("smtp.providers.backoff_max_secs", p.backoff_max_secs.into(), p.backoff_secs.into(), 86_400);
        within("dns.timeout_ms", self.dns.timeout_ms.into(), 1, 60_000);
        within("dns.domain_check_interval_secs", self.dns.domain_check_interval_secs.into(), 10, 365 * DAY);
        within("auth.session_hours", self.auth.session_hours.into(), 1, 87_600);
        within("limits.requests_per_minute", l.requests_per_minute.into(), 1, u32::MAX.into());
        within("limits.idempotency_ttl_hours", l.idempotency_ttl_hours.into(), 1, 8_760);
        within("limits.attachment_bytes", l.attachment_bytes, 1, GIB);
        within("limits.message_bytes", l.message_bytes, 1024, GIB);
        within("limits.csv_bytes", l.csv_bytes, 1, GIB);
        within("limits.upload_bytes", l.upload_bytes, 1, GIB);
        within("limits.upload_total_bytes", l.upload_total_bytes, 1, 1 << 50);
        within("limits.body_memory_bytes", l.body_memory_bytes, MIB, 1 << 40);
        within("limits.domains_per_project", l.domains_per_project.into(), 1, 100_000);
        within("limits.fields_per_project", l.fields_per_project.into(), 1, 1_000_000);
        within("limits.event_names_per_project", l.event_names_per_project.into(), 1, 1_000_000);
        within(
            "limits.workflow_runs_per_contact_hour",
            l.workflow_runs_per_contact_hour.into(),
            1,
            1_000_000,
        );
        within("limits.chained_runs_per_contact_hour", l.chained_runs_per_contact_hour.into(), 1, 1_000_000);
        within("bounces.max_connections", b.max_connections.into(), 1, 65_536);
        within("bounces.max_connections_per_peer", b.max_connections_per_peer.into(), 1, 65_536);
        within("bounces.max_message_bytes", b.max_message_bytes, 1024, GIB);
        within("bounces.idle_secs", b.idle_secs.into(), 1, 3_600);
        within("bounces.session_secs", b.session_secs.into(), 1, DAY);
        let sub = &self.submission;
        within("submission.max_message_bytes", sub.max_message_bytes, 1024, GIB);
        within("submission.max_recipients", sub.max_recipients.into(), 1, 1_000);
        within("submission.max_connections", sub.max_connections.into(), 1, 65_536);
        within("submission.max_connections_per_peer", sub.max_connections_per_peer.into(), 1, 65_536);
        within("submission.max_sessions_per_project", sub.max_sessions_per_project.into(), 1, 65_536);
        within("submission.idle_secs", sub.idle_secs.into(), 1, 3_600);
        within("submission.session_secs", sub.session_secs.into(), 1, DAY);
        within("submission.max_commands", sub.max_commands.into(), 10, 10_000_000);
        let inb = &self.inbound;
        if let Some(days) = inb.retention_days {
            within("inbound.retention_days", days.into(), 1, 36_500);
        }
        let r = &self.retention;
        for (key, days) in [
            ("email_content_days", r.email_content_days),
            ("events_days", r.events_days),
            ("inbound_days", r.inbound_days),
            ("webhook_deliveries_days", r.webhook_deliveries_days),
        ] {
            within(&format!("retention.{key}"), days.into(), 1, 36_500);
        }
        within("retention.interval_secs", r.interval_secs.into(), 60, DAY);
        within("backup.keep", self.backup.keep.into(), 1, 10_000);
        within("inbound.max_message_bytes", inb.max_message_bytes, 1024, GIB);
        within("inbound.max_recipients", inb.max_recipients.into(), 1, 1_000);
        within("inbound.messages_per_minute", inb.messages_per_minute.into(), 1, 10_000_000);
        within(
            "inbound.messages_per_minute_per_peer",
            inb.messages_per_minute_per_peer.into(),
            1,
            10_000_000,
        );
        within("inbound.max_bytes_per_project", inb.max_bytes_per_project, 1024, 1 << 50);
        within("inbound.domains_per_project", inb.domains_per_project.into(), 1, 100_000);
        within("inbound.routes_per_project", inb.routes_per_project.into(), 1, 100_000);
        within("inbound.max_connections", inb.max_connections.into(), 1, 65_536);
        within("inbound.max_connections_per_peer", inb.max_connections_per_peer.into(), 1, 65_536);
        within("inbound.idle_secs", inb.idle_secs.into(), 1, 3_600);
        within("inbound.session_secs", inb.session_secs.into(), 1, DAY);
        within("inbound.max_commands", inb.max_commands.into(), 10, 10_000_000);
        within("reputation.min_sent", self.reputation.min_sent.into(), 0, 1_000_000_000);
        within("reputation.window_days", self.reputation.window_days.into(), 1, 3_650);
        within("scheduler.workers", sc.workers.into(), 1, 256);
        within("scheduler.lease_secs", sc.lease_secs.into(), 5, DAY);
        within("scheduler.retry_base_secs", sc.retry_base_secs.into(), 1, DAY);
        within("scheduler.max_idle_secs", sc.max_idle_secs.into(), 1, DAY);
        within("scheduler.idempotency_sweep_secs", sc.idempotency_sweep_secs.into(), 1, DAY);
        within("scheduler.job_retention_hours", sc.job_retention_hours.into(), 1, 87_600);
        within("scheduler.segment_refresh_secs", sc.segment_refresh_secs.into(), 1, DAY);
        within("scheduler.clock_offset_secs", sc.clock_offset_secs.unsigned_abs(), 0, 400 * DAY);
        for (n, relay) in smtp.relays.iter().enumerate() {
            within(&format!("smtp.relays[{n}].pool_size"), relay.pool_size.into(), 1, 1_024);
            let rate = relay.max_messages_per_second.into();
            within(&format!("smtp.relays[{n}].max_messages_per_second"), rate, 0, 1_000_000);
        }
        problems.extend(self.submission.problems());
        if let Some(Err(why)) = self.backup.schedule.as_deref().map(Schedule::parse) {
            problems.push(format!("`backup.schedule` {why}"));
        }
        if !(4..=31).contains(&self.auth.bcrypt_cost) {
            problems.push(format!(
                "`auth.bcrypt_cost` must be between 4 and 31 (found {})",
                self.auth.bcrypt_cost
            ));
        }
        if self.limits.attachment_bytes > self.limits.message_bytes {
            problems.push("`limits.attachment_bytes` must not exceed `limits.message_bytes`".into());
        }
        if let Some(url) = &self.server.public_url
            && let Err(why) = check_public_url(url)
        {
            problems.push(format!("`server.public_url` {why} (found {url:?})"));
        }
        if let Some(from) = &self.server.system_from
            && from.parse::<lettre::message::Mailbox>().is_err()
        {
            problems.push(format!(
                "`server.system_from` must be an address or \"Name <address>\" (found {from:?})"
            ));
        }
        for (n, provider) in self.auth.oidc.iter().enumerate() {
            let ok_id = !provider.id.is_empty()
                && provider.id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if !ok_id || self.auth.oidc.iter().filter(|p| p.id == provider.id).count() > 1 {
                problems.push(format!(
                    "`auth.oidc[{n}].id` must be unique and use a-z, 0-9 and - (found {:?})",
                    provider.id
                ));
            }
            if let Err(why) = check_public_url(&provider.issuer) {
                problems.push(format!("`auth.oidc[{n}].issuer` {why} (found {:?})", provider.issuer));
            }
        }
        if let Some(github) = &self.auth.github {
            if self.auth.oidc.iter().any(|p| p.id == GITHUB_ID) {
                problems.push(format!(
                    "`auth.oidc` may not use the id {GITHUB_ID:?} while `[auth.github]` is set"
                ));
            }
            for (key, url) in [("web_base", &github.web_base), ("api_base", &github.api_base)] {
                if let Err(why) = check_public_url(url) {
                    problems.push(format!("`auth.github.{key}` {why} (found {url:?})"));
                }
            }
        }
        if let Err(why) = check_public_url(&self.billing.stripe_api_base) {
            problems
                .push(format!("`billing.stripe_api_base` {why} (found {:?})", self.billing.stripe_api_base));
        }
        if self.billing.enabled() && self.billing.price_ids.is_empty() {
            problems
                .push("`billing.price_ids` must name at least one Stripe price when billing is on".into());
        }
        if self.server.log_level.trim().is_empty() {
            problems.push("`server.log_level` must not be empty".into());
        }
        if let Some(secret) = &self.auth.jwt_secret
            && secret.len() < 32
        {
            problems.push("`auth.jwt_secret` must be at least 32 characters".into());
        }
        if self.smtp.host.as_deref().is_some_and(|h| h.trim().is_empty()) {
            problems.push("`smtp.host` must not be empty; leave it out to use the capture outbox".into());
        }
        if self.smtp.password.is_some() && self.smtp.username.is_none() {
            problems.push("`smtp.password` is set but `smtp.username` is not".into());
        }
        for (n, relay) in self.smtp.relays.iter().enumerate() {
            let key = |name: &str| format!("`smtp.relays[{n}].{name}`");
            if relay.host.trim().is_empty() {
                problems.push(format!("{} must be set", key("host")));
            }
            if relay.pool_size < 1 {
                problems.push(format!("{} must be at least 1 (found 0)", key("pool_size")));
            }
            if relay.password.is_some() && relay.username.is_none() {
                problems.push(format!("{} is set but {} is not", key("password"), key("username")));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(ConfigError { problems }) }
    }

    /// The SQLite file.
    pub fn database_path(&self) -> PathBuf {
        self.database.path.clone().unwrap_or_else(|| self.server.data_dir.join("tidings.db"))
    }

    /// Where uploaded images are kept.
    pub fn backup_dir(&self) -> PathBuf {
        self.backup.path.clone().unwrap_or_else(|| self.server.data_dir.join("backups"))
    }

    /// The backup schedule, when one is set (checked by [`Config::validate`]).
    pub fn backup_schedule(&self) -> Option<Schedule> {
        self.backup.schedule.as_deref().and_then(|s| Schedule::parse(s).ok())
    }

    pub fn uploads_dir(&self) -> PathBuf {
        self.server.data_dir.join("uploads")
    }

    /// The base URL of links in mail, without a trailing slash.
    pub fn public_url(&self) -> String {
        match &self.server.public_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => match self.server.address {
                IpAddr::V6(ip) => format!("http://[{ip}]:{}", self.server.port),
                IpAddr::V4(ip) => format!("http://{ip}:{}", self.server.port),
            },
        }
    }

    /// The host inbound domains' MX records name: `[inbound] hostname`, else the submission
    /// host (`[submission] hostname`, else the host of `public_url`).
    pub fn inbound_host(&self) -> String {
        self.inbound.host(self.submission.host(&self.public_url()))
    }

    /// The sender of system mail: `[server] system_from`, or `Tidings <tidings@<host>>` with
    /// the host of the public URL (`localhost` when that is an IP address).
    pub fn system_sender(&self) -> lettre::message::Mailbox {
        if let Some(from) = self.server.system_from.as_deref().and_then(|f| f.parse().ok()) {
            return from;
        }
        let url = self.public_url();
        let host = url.split_once("://").map_or("", |(_, rest)| rest);
        let host = host.split(['/', ':']).next().unwrap_or_default();
        let host = if host.parse::<IpAddr>().is_ok() || !host.contains('.') { "localhost" } else { host };
        format!("Tidings <tidings@{host}>")
            .parse()
            .unwrap_or_else(|_| "Tidings <tidings@localhost>".parse().expect("a valid fixed mailbox"))
    }

    /// Whether session cookies must be marked `Secure`.
    pub fn secure_cookies(&self) -> bool {
        self.public_url().starts_with("https://")
    }

    /// Whether mail goes to a relay (`true`) or to the capture outbox.
    pub fn smtp_enabled(&self) -> bool {
        self.smtp.host.is_some() || !self.smtp.relays.is_empty()
    }

    /// The effective values as TOML, secrets replaced by `***` and derived values filled in.
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        let mask = |value: &mut Option<String>| {
            if value.is_some() {
                *value = Some("***".into());
            }
        };
        mask(&mut shown.smtp.password);
        for relay in &mut shown.smtp.relays {
            mask(&mut relay.password);
        }
        mask(&mut shown.auth.jwt_secret);
        for provider in &mut shown.auth.oidc {
            mask(&mut provider.client_secret);
        }
        if let Some(github) = &mut shown.auth.github {
            github.client_secret = "***".into();
        }
        mask(&mut shown.billing.stripe_secret_key);
        mask(&mut shown.billing.stripe_webhook_secret);
        mask(&mut shown.metrics.token);
        shown.server.public_url = Some(self.public_url());
        shown.database.path = Some(self.database_path());
        toml::to_string_pretty(&shown).unwrap_or_else(|e| format!("# could not render: {e}\n"))
    }
}

fn check_public_url(url: &str) -> Result<(), &'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must start with http:// or https://")?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err("must name a host");
    }
    if rest.contains(['?', '#', ' ']) {
        return Err("must not carry a query, fragment or spaces");
    }
    Ok(())
}

/// Turns figment's errors into sentences naming the key and where its value came from.
fn describe(error: figment::Error) -> ConfigError {
    use figment::error::Kind;
    let problems = error
        .into_iter()
        .map(|e| {
            let source = e.metadata.as_ref().map(|m| match &m.source {
                Some(figment::Source::File(path)) => format!("{} {}", m.name, path.display()),
                _ => m.name.to_string(),
            });
            let (key, what) = match &e.kind {
                Kind::UnknownField(field, _) => {
                    let mut path = e.path.clone();
                    if path.last() != Some(field) {
                        path.push(field.clone());
                    }
                    (path.join("."), "is not a known configuration key".to_string())
                }
                Kind::InvalidType(actual, expected) => {
                    (e.path.join("."), format!("has a bad value: found {actual}, expected {expected}"))
                }
                Kind::InvalidValue(actual, expected) => {
                    (e.path.join("."), format!("has a bad value: found {actual}, expected {expected}"))
                }
                Kind::UnknownVariant(found, expected) => (
                    e.path.join("."),
                    format!("has a bad value: found {found:?}, expected one of {}", expected.join(", ")),
                ),
                other => (e.path.join("."), format!("is invalid: {other}")),
            };
            let env_hint = if source.as_deref().is_some_and(|s| s.contains("environment")) && !key.is_empty()
            {
                format!(" (environment variable {ENV_PREFIX}{})", key.replace('.', "__").to_ascii_uppercase())
            } else {
                String::new()
            };
            let key = if key.is_empty() { "(top level)".to_string() } else { key };
            match source {
                Some(source) => format!("`{key}` {what}{env_hint}, in {source}"),
                None => format!("`{key}` {what}{env_hint}"),
            }
        })
        .collect();
    ConfigError { problems }
}

#[cfg(test)]
mod tests;
