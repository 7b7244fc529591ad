//! Typed configuration: embedded defaults, a TOML file, then `TIDINGS_<SECTION>__<KEY>` variables.
//!
//! Every section rejects unknown keys, so a typo stops start-up with the key named instead of being
//! silently ignored. `validate()` adds the checks serde cannot express (ranges, URLs).

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

/// The prefix of every configuration environment variable.
pub const ENV_PREFIX: &str = "TIDINGS_";
/// The file read when neither `--config` nor `$TIDINGS_CONFIG` names one.
pub const DEFAULT_FILE: &str = "tidings.toml";
const MIB: u64 = 1024 * 1024;

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
    pub scheduler: SchedulerConfig,
    pub metrics: MetricsConfig,
}

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
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self { path: None, pool_size: 8, busy_timeout_ms: 5000 }
    }
}

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    Starttls,
    Tls,
    None,
}

/// `[smtp]`: the relay. Without a host (and without `[[smtp.relays]]`), mail goes to the capture
/// outbox.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmtpConfig {
    pub host: Option<String>,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub security: SmtpSecurity,
    pub pool_size: u32,
    pub timeout_secs: u32,
    /// Per-project send throttle; 0 means unlimited.
    pub max_messages_per_second: u32,
    /// Several relays, tried in order; they replace `host` and its keys when present.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relays: Vec<RelayConfig>,
}

impl Default for SmtpConfig {
    fn default() -> Self {
        Self {
            host: None,
            port: 587,
            username: None,
            password: None,
            security: SmtpSecurity::Starttls,
            pool_size: DEFAULT_POOL_SIZE,
            timeout_secs: 30,
            max_messages_per_second: 0,
            relays: Vec::new(),
        }
    }
}

/// Connections kept open to a relay unless configured: enough for the signing work of two
/// cores to never wait on a relay's answer (each connection carries one message at a time).
pub const DEFAULT_POOL_SIZE: u32 = 16;

/// One `[[smtp.relays]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RelayConfig {
    pub host: String,
    pub port: u16,
    pub username: Option<String>,
    pub password: Option<String>,
    pub security: SmtpSecurity,
    pub pool_size: u32,
    /// Most messages a second handed to this relay, all projects together; 0 means unlimited.
    pub max_messages_per_second: u32,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: 587,
            username: None,
            password: None,
            security: SmtpSecurity::Starttls,
            pool_size: DEFAULT_POOL_SIZE,
            max_messages_per_second: 0,
        }
    }
}

impl SmtpConfig {
    /// The relays mail goes to, in order: `[[smtp.relays]]`, else the single `[smtp]` relay, else
    /// none (the capture outbox). The single form has no per-relay rate cap: its
    /// `max_messages_per_second` is the per-project throttle.
    pub fn relays(&self) -> Vec<RelayConfig> {
        if !self.relays.is_empty() {
            return self.relays.clone();
        }
        let Some(host) = &self.host else { return Vec::new() };
        vec![RelayConfig {
            host: host.clone(),
            port: self.port,
            username: self.username.clone(),
            password: self.password.clone(),
            security: self.security,
            pool_size: self.pool_size,
            max_messages_per_second: 0,
        }]
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

/// `[auth]`: dashboard accounts and sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `true`: no one signs up; `false`: anyone may. Unset (the default): the first person may
    /// (the instance's owner), and after that only the invited (issue 29), so an instance on the
    /// internet is not an open door to its relay.
    pub disable_signups: Option<bool>,
    pub session_hours: u32,
    /// Signs session tokens; generated once and kept in the database when absent.
    pub jwt_secret: Option<String>,
    /// bcrypt work factor for passwords (4 to 31).
    pub bcrypt_cost: u32,
    /// OpenID Connect providers users may sign in with (`[[auth.oidc]]`).
    pub oidc: Vec<OidcProvider>,
    /// Sign-in with GitHub (or GitHub Enterprise Server) through its OAuth app endpoints
    /// (`[auth.github]`); GitHub does not speak OpenID Connect.
    pub github: Option<GithubProvider>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            disable_signups: None,
            session_hours: 168,
            jwt_secret: None,
            bcrypt_cost: 12,
            oidc: Vec::new(),
            github: None,
        }
    }
}

/// One `[[auth.oidc]]` provider (Keycloak, Authentik, Google, ...), found by discovery at its
/// issuer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcProvider {
    /// In addresses: `/auth/oauth/<id>`; lower-case letters, digits and `-`.
    pub id: String,
    /// On the sign-in button.
    pub name: String,
    /// Where `/.well-known/openid-configuration` is found.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    #[serde(default = "default_oidc_scopes")]
    pub scopes: Vec<String>,
}

fn default_oidc_scopes() -> Vec<String> {
    vec!["openid".into(), "email".into(), "profile".into()]
}

/// `[auth.github]`: a GitHub OAuth app. Its sign-in is at `/auth/oauth/github`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubProvider {
    pub client_id: String,
    pub client_secret: String,
    /// On the sign-in button.
    #[serde(default = "default_github_name")]
    pub name: String,
    /// Where the OAuth pages are (`/login/oauth/...`): `https://github.com`, or a GitHub
    /// Enterprise Server's own address.
    #[serde(default = "default_github_web")]
    pub web_base: String,
    /// Where its REST API is: `https://api.github.com`, or `https://<server>/api/v3`.
    #[serde(default = "default_github_api")]
    pub api_base: String,
}

/// The id of the GitHub sign-in, in its addresses and in linked identities.
pub const GITHUB_ID: &str = "github";

fn default_github_name() -> String {
    "GitHub".into()
}

fn default_github_web() -> String {
    "https://github.com".into()
}

fn default_github_api() -> String {
    "https://api.github.com".into()
}

/// `[limits]`: request rates and body sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Per project, over every endpoint reached with an API key (public keys may use 80 %);
    /// also per dashboard user.
    pub requests_per_minute: u32,
    pub idempotency_ttl_hours: u32,
    pub attachment_bytes: u64,
    /// Also the cap on the JSON bodies of `/v1/send` and templates.
    pub message_bytes: u64,
    pub csv_bytes: u64,
    pub upload_bytes: u64,
    /// All the images one project may keep (`POST /uploads/image`), so no key can fill the disk.
    pub upload_total_bytes: u64,
    /// Sender domains one project may have (each costs an RSA key generation).
    pub domains_per_project: u32,
    /// Custom fields one project's catalogue may hold: a write that would add one more is 422,
    /// so no key can grow the catalogue, and every list made from it, without bound.
    pub fields_per_project: u32,
    /// Event names one project may track (the service's own `email.*`, `contact.*` and
    /// `segment.*` aside): tracking one more is 422.
    pub event_names_per_project: u32,
    /// Executions one workflow may start for one contact in an hour; an event past it starts
    /// nothing (allowReentry or not), so a workflow that triggers itself stops.
    pub workflow_runs_per_contact_hour: u32,
    /// Executions one contact may have started in an hour by events that workflows emitted
    /// (a step's subscription change, a workflow email's events), so workflows that trigger
    /// one another stop.
    pub chained_runs_per_contact_hour: u32,
    /// Memory all JSON bodies being read and parsed at once may take, as the server reckons it
    /// from their declared lengths (appliance.md §13): a body past what is left waits for it.
    pub body_memory_bytes: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            requests_per_minute: 1000,
            idempotency_ttl_hours: 24,
            attachment_bytes: 10 * MIB,
            message_bytes: 40 * MIB,
            csv_bytes: 5 * MIB,
            upload_bytes: 5 * MIB,
            upload_total_bytes: 1024 * MIB,
            domains_per_project: 50,
            fields_per_project: 1000,
            event_names_per_project: 10_000,
            workflow_runs_per_contact_hour: 60,
            chained_runs_per_contact_hour: 100,
            body_memory_bytes: 512 * MIB,
        }
    }
}

/// `[tracking]`: open pixels and click redirects (not in HEADLESS mail).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackingConfig {
    pub opens: bool,
    pub clicks: bool,
}

impl Default for TrackingConfig {
    fn default() -> Self {
        Self { opens: true, clicks: true }
    }
}

/// `[billing]`: Stripe; billing is on only when the secret key and webhook secret are both set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BillingConfig {
    pub stripe_secret_key: Option<String>,
    pub stripe_webhook_secret: Option<String>,
    /// The prices a checkout may subscribe to; the first is the default.
    pub price_ids: Vec<String>,
    /// Stripe's API (another address only for a test double or a proxy).
    pub stripe_api_base: String,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            stripe_secret_key: None,
            stripe_webhook_secret: None,
            price_ids: Vec::new(),
            stripe_api_base: "https://api.stripe.com".into(),
        }
    }
}

impl BillingConfig {
    /// Whether billing endpoints and limits are active.
    pub fn enabled(&self) -> bool {
        self.stripe_secret_key.is_some() && self.stripe_webhook_secret.is_some()
    }
}

/// `[webhooks]`: inbound provider notifications and outbound workflow webhooks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhooksConfig {
    /// Serves `POST /webhooks/sns` for SES bounce, complaint and delivery notifications.
    pub sns_enabled: bool,
    /// The SNS topics whose messages are accepted; any other topic's are refused.
    pub sns_topic_arns: Vec<String>,
    /// Hosts a `SigningCertURL` (and a `SubscribeURL`) may name, always over https; `*` stands
    /// for one DNS label; the default port unless the pattern names one (`localhost:8443`). The
    /// default is AWS's SNS endpoints.
    pub sns_cert_hosts: Vec<String>,
    /// A PEM file of extra certificate authorities trusted when fetching signing certificates
    /// (an SNS-compatible service behind a private CA, or tests).
    pub sns_ca_file: Option<PathBuf>,
    /// Lets WEBHOOK steps and outbound webhook endpoints call private, loopback and link-local
    /// addresses.
    pub allow_private: bool,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig {
            sns_enabled: false,
            sns_topic_arns: Vec::new(),
            sns_cert_hosts: vec!["sns.*.amazonaws.com".into(), "sns.*.amazonaws.com.cn".into()],
            sns_ca_file: None,
            allow_private: false,
        }
    }
}

/// `[reputation]`: bounce and complaint rates per project over a rolling window, and the
/// automatic suspension above them (SES's own review thresholds by default).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReputationConfig {
    /// Suspend a project (disable it) when a rate goes above its threshold.
    pub suspend: bool,
    /// The rolling window, in days.
    pub window_days: u32,
    /// Hard bounces per sent email above which a project is suspended.
    pub bounce_rate: f64,
    /// Complaints per sent email above which a project is suspended.
    pub complaint_rate: f64,
    /// Emails sent within the window before the rates count.
    pub min_sent: u32,
}

impl Default for ReputationConfig {
    fn default() -> Self {
        ReputationConfig {
            suspend: true,
            window_days: 7,
            bounce_rate: 0.10,
            complaint_rate: 0.005,
            min_sent: 200,
        }
    }
}

/// `[bounces]`: the inbound SMTP listener for bounces and complaints from any relay.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BouncesConfig {
    /// Where the listener takes connections (`"0.0.0.0:25"`); off when unset.
    pub listen: Option<SocketAddr>,
    /// The domain of the envelope senders (`b-<token>@<domain>`); its MX points at the listener.
    pub domain: Option<String>,
    /// Largest report accepted, in bytes.
    pub max_message_bytes: u64,
    /// Connections served at once.
    pub max_connections: u32,
    /// Connections served at once from one address (an IPv6 client counts by its /64).
    pub max_connections_per_peer: u32,
    /// Longest silence of a session, in seconds, before it is closed.
    pub idle_secs: u32,
    /// Longest session, in seconds, however busy.
    pub session_secs: u32,
}

impl Default for BouncesConfig {
    fn default() -> Self {
        BouncesConfig {
            listen: None,
            domain: None,
            max_message_bytes: 1024 * 1024,
            max_connections: 32,
            max_connections_per_peer: 4,
            idle_secs: 60,
            session_secs: 300,
        }
    }
}

impl BouncesConfig {
    /// The domain of the envelope senders when the listener is on.
    pub fn verp_domain(&self) -> Option<&str> {
        self.listen.and(self.domain.as_deref()).filter(|d| !d.is_empty())
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
        }
    }
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
        within("smtp.pool_size", smtp.pool_size.into(), 1, 1_024);
        within("smtp.timeout_secs", smtp.timeout_secs.into(), 1, 3_600);
        within("smtp.max_messages_per_second", smtp.max_messages_per_second.into(), 0, 1_000_000);
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
        within("reputation.min_sent", self.reputation.min_sent.into(), 0, 1_000_000_000);
        within("reputation.window_days", self.reputation.window_days.into(), 1, 3_650);
        within("scheduler.workers", sc.workers.into(), 1, 256);
        within("scheduler.lease_secs", sc.lease_secs.into(), 5, DAY);
        within("scheduler.retry_base_secs", sc.retry_base_secs.into(), 1, DAY);
        within("scheduler.max_idle_secs", sc.max_idle_secs.into(), 1, DAY);
        within("scheduler.idempotency_sweep_secs", sc.idempotency_sweep_secs.into(), 1, DAY);
        within("scheduler.job_retention_hours", sc.job_retention_hours.into(), 1, 87_600);
        within("scheduler.segment_refresh_secs", sc.segment_refresh_secs.into(), 1, DAY);
        for (n, relay) in smtp.relays.iter().enumerate() {
            within(&format!("smtp.relays[{n}].pool_size"), relay.pool_size.into(), 1, 1_024);
            let rate = relay.max_messages_per_second.into();
            within(&format!("smtp.relays[{n}].max_messages_per_second"), rate, 0, 1_000_000);
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
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_derive_paths() {
        let config = Config::defaults();
        config.validate().unwrap();
        assert_eq!(config.database_path(), PathBuf::from("./data/tidings.db"));
        assert_eq!(config.public_url(), "http://127.0.0.1:8080");
        assert!(!config.secure_cookies());
        assert!(!config.smtp_enabled());
        assert!(!config.billing.enabled());
    }

    #[test]
    fn system_mail_comes_from_system_from_or_the_public_host() {
        let mut config = Config::defaults();
        assert_eq!(config.system_sender().to_string(), "Tidings <tidings@localhost>");
        config.server.public_url = Some("https://mail.example.com:8443/base".into());
        assert_eq!(config.system_sender().email.to_string(), "tidings@mail.example.com");
        config.server.system_from = Some("Acme <noreply@acme.test>".into());
        assert_eq!(config.system_sender().to_string(), "Acme <noreply@acme.test>");
        assert!(config.validate().is_ok());
        config.server.system_from = Some("not an address".into());
        assert!(config.validate().is_err());
    }

    #[test]
    fn masked_toml_hides_secrets() {
        let mut config = Config::defaults();
        config.smtp.username = Some("me".into());
        config.smtp.password = Some("hunter2".into());
        config.auth.jwt_secret = Some("x".repeat(40));
        let shown = config.to_masked_toml();
        assert!(!shown.contains("hunter2"));
        assert!(!shown.contains(&"x".repeat(40)));
        assert!(shown.contains("password = \"***\""));
        assert!(shown.contains("public_url = \"http://127.0.0.1:8080\""));
    }

    #[test]
    fn github_sign_in_takes_defaults_and_its_secret_is_masked() {
        let text = r#"
            [auth]
            github = { client_id = "Iv1.abc", client_secret = "gh-secret-value" }
        "#;
        let mut config: Config = Figment::from(Serialized::defaults(Config::defaults()))
            .merge(Toml::string(text))
            .extract()
            .unwrap();
        let github = config.auth.github.clone().unwrap();
        assert_eq!(
            (github.name.as_str(), github.web_base.as_str(), github.api_base.as_str()),
            ("GitHub", "https://github.com", "https://api.github.com")
        );
        config.validate().unwrap();
        let shown = config.to_masked_toml();
        assert!(!shown.contains("gh-secret-value") && shown.contains("client_secret = \"***\""), "{shown}");

        config.auth.oidc.push(OidcProvider {
            id: GITHUB_ID.into(),
            name: "Not GitHub".into(),
            issuer: "https://sso.example.com".into(),
            client_id: "x".into(),
            client_secret: None,
            scopes: default_oidc_scopes(),
        });
        config.auth.github.as_mut().unwrap().api_base = "api.github.com".into();
        let problems = config.validate().unwrap_err().problems;
        assert!(problems.iter().any(|p| p.contains("may not use the id \"github\"")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("`auth.github.api_base` must start with")),
            "{problems:?}"
        );
    }

    #[test]
    fn the_example_file_documents_every_key_with_its_default() {
        let text = include_str!("../config.example.toml");
        let parsed: Config = Figment::from(Toml::string(text)).extract().unwrap();
        let as_toml = |c: &Config| toml::to_string(c).unwrap();
        assert_eq!(as_toml(&parsed), as_toml(&Config::defaults()), "uncommented values are the defaults");
        let mut defaults = Config::defaults();
        defaults.server.public_url = Some(String::new());
        defaults.database.path = Some(PathBuf::new());
        defaults.smtp.host = Some(String::new());
        defaults.smtp.username = Some(String::new());
        defaults.smtp.password = Some(String::new());
        defaults.auth.jwt_secret = Some(String::new());
        defaults.auth.github = Some(GithubProvider {
            client_id: String::new(),
            client_secret: String::new(),
            name: default_github_name(),
            web_base: default_github_web(),
            api_base: default_github_api(),
        });
        defaults.billing.stripe_secret_key = Some(String::new());
        defaults.billing.stripe_webhook_secret = Some(String::new());
        defaults.metrics.token = Some(String::new());
        defaults.webhooks.sns_ca_file = Some(PathBuf::new());
        defaults.bounces.listen = Some("0.0.0.0:25".parse().unwrap());
        defaults.bounces.domain = Some(String::new());
        let tree: toml::Table = toml::from_str(&toml::to_string(&defaults).unwrap()).unwrap();
        for (section, keys) in tree {
            assert!(text.contains(&format!("[{section}]")), "section [{section}] is documented");
            for key in keys.as_table().unwrap().keys() {
                let documented = text.lines().any(|l| {
                    let l = l.trim_start_matches(['#', ' ']);
                    l.starts_with(&format!("{key} ="))
                });
                assert!(documented, "{section}.{key} is documented");
            }
        }
    }

    #[test]
    fn several_relays_replace_the_single_one() {
        let text = r#"
            [smtp]
            host = "ignored.example"
            [[smtp.relays]]
            host = "first.example"
            port = 2525
            security = "none"
            password = "pw1"
            username = "u1"
            max_messages_per_second = 10
            [[smtp.relays]]
            host = "second.example"
            security = "tls"
            port = 465
            pool_size = 2
        "#;
        let config: Config = Figment::from(Serialized::defaults(Config::defaults()))
            .merge(Toml::string(text))
            .extract()
            .unwrap();
        config.validate().unwrap();
        assert!(config.smtp_enabled());
        let relays = config.smtp.relays();
        assert_eq!(relays.len(), 2);
        assert_eq!(
            (relays[0].host.as_str(), relays[0].port, relays[0].max_messages_per_second),
            ("first.example", 2525, 10)
        );
        assert_eq!(relays[0].pool_size, DEFAULT_POOL_SIZE);
        assert_eq!((relays[1].security, relays[1].pool_size), (SmtpSecurity::Tls, 2));
        let shown = config.to_masked_toml();
        assert!(!shown.contains("pw1") && shown.contains("[[smtp.relays]]"), "{shown}");

        let mut single = Config::defaults();
        assert!(single.smtp.relays().is_empty(), "no host: the capture outbox");
        single.smtp.host = Some("relay.example".into());
        single.smtp.max_messages_per_second = 5;
        let relays = single.smtp.relays();
        assert_eq!(relays.len(), 1);
        assert_eq!(relays[0].max_messages_per_second, 0, "the single form's limit is per project");

        let mut bad = Config::defaults();
        bad.smtp.relays = vec![
            RelayConfig { host: " ".into(), ..RelayConfig::default() },
            RelayConfig {
                host: "x".into(),
                pool_size: 0,
                password: Some("p".into()),
                ..RelayConfig::default()
            },
        ];
        let text = bad.validate().unwrap_err().to_string();
        for key in ["smtp.relays[0].host", "smtp.relays[1].pool_size", "smtp.relays[1].password"] {
            assert!(text.contains(key), "{key}: {text}");
        }
    }

    #[test]
    fn validation_names_every_bad_key() {
        let mut config = Config::defaults();
        config.limits.requests_per_minute = 0;
        config.server.public_url = Some("ftp://x".into());
        config.auth.bcrypt_cost = 2;
        let err = config.validate().unwrap_err();
        let text = err.to_string();
        assert!(text.contains("limits.requests_per_minute"), "{text}");
        assert!(text.contains("server.public_url"), "{text}");
        assert!(text.contains("auth.bcrypt_cost"), "{text}");
    }
}
