//! `[smtp]`, `[tracking]`, `[webhooks]` and `[bounces]`: mail out, what it carries, and what comes back.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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
    /// `[smtp.providers]`: queues per receiving provider.
    pub providers: ProvidersConfig,
}

/// `[smtp.providers]`: outgoing mail is queued per receiving provider (Gmail, Microsoft, Yahoo,
/// Apple by their mail exchangers; every other domain on its own), each with its own rate, and
/// a provider that defers (4xx) is slowed alone (`core::providers`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProvidersConfig {
    /// Queue per provider; `false` is one queue for all (as before issue 34).
    pub enabled: bool,
    /// Most messages an hour to each named provider, and to each other domain; 0 is no cap.
    pub gmail_per_hour: u32,
    pub microsoft_per_hour: u32,
    pub yahoo_per_hour: u32,
    pub apple_per_hour: u32,
    pub other_per_hour: u32,
    /// How long a provider rests after a temporary refusal, doubled with each one in a row up to
    /// `backoff_max_secs`.
    pub backoff_secs: u32,
    pub backoff_max_secs: u32,
}

impl Default for ProvidersConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            gmail_per_hour: 0,
            microsoft_per_hour: 0,
            yahoo_per_hour: 0,
            apple_per_hour: 0,
            other_per_hour: 0,
            backoff_secs: 60,
            backoff_max_secs: 3_600,
        }
    }
}

impl ProvidersConfig {
    /// The hourly cap of `queue` (a named provider or a domain); 0 is none.
    pub fn per_hour(&self, queue: &str) -> u32 {
        match queue {
            "gmail" => self.gmail_per_hour,
            "microsoft" => self.microsoft_per_hour,
            "yahoo" => self.yahoo_per_hour,
            "apple" => self.apple_per_hour,
            _ => self.other_per_hour,
        }
    }
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
            providers: ProvidersConfig::default(),
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
    /// Whether no relay is configured, so mail is kept in the capture outbox.
    pub fn captures(&self) -> bool {
        self.relays.is_empty() && self.host.is_none()
    }

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

/// `[tracking]`: open pixels and click redirects (not in HEADLESS mail).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackingConfig {
    pub opens: bool,
    pub clicks: bool,
    /// Networks whose opens and clicks are a machine's, whatever their User-Agent: mail
    /// filters that follow every link of a message before a person sees it. The default is
    /// Microsoft's Exchange Online Protection (Safe Links); add a filtering service's ranges.
    pub scanner_networks: Vec<ipnet::IpNet>,
}

/// Exchange Online Protection's published ranges: mail servers and their link checkers, where
/// no person browses from.
pub const DEFAULT_SCANNER_NETWORKS: [&str; 4] =
    ["40.92.0.0/15", "40.107.0.0/16", "52.100.0.0/14", "104.47.0.0/17"];

impl Default for TrackingConfig {
    fn default() -> Self {
        Self {
            opens: true,
            clicks: true,
            scanner_networks: DEFAULT_SCANNER_NETWORKS
                .iter()
                .map(|n| n.parse().expect("a valid network"))
                .collect(),
        }
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
