//! `[inbound]`: the SMTP listener that receives mail for the projects' inbound domains (issue 31).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

/// `[inbound]`: off unless `listen` is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InboundConfig {
    /// Where the listener takes connections (`"0.0.0.0:25"`): the host the domains' MX names.
    pub listen: Option<SocketAddr>,
    /// The host inbound domains publish as their MX, and the name the listener greets with;
    /// default: the submission host (`[submission] hostname`, else the host of `public_url`).
    pub hostname: Option<String>,
    /// The older name of `[retention] inbound_days`: when set, it is the default instead.
    pub retention_days: Option<u32>,
    /// Largest message accepted, in bytes (552 above).
    pub max_message_bytes: u64,
    /// Most recipients of one message.
    pub max_recipients: u32,
    /// Messages one project receives per minute; more are deferred (451) for the sender to retry.
    pub messages_per_minute: u32,
    /// Messages one sending address (an IPv6 client by its /64) delivers per minute.
    pub messages_per_minute_per_peer: u32,
    /// Bytes of received mail one project may hold (until it expires); past it, mail for the
    /// project is deferred (452 4.2.2) and the sender retries.
    pub max_bytes_per_project: u64,
    /// Inbound domains of one project.
    pub domains_per_project: u32,
    /// Routes of one project.
    pub routes_per_project: u32,
    /// Connections served at once.
    pub max_connections: u32,
    /// Connections served at once from one address.
    pub max_connections_per_peer: u32,
    /// Longest silence of a session, in seconds.
    pub idle_secs: u32,
    /// Longest session, in seconds, however busy.
    pub session_secs: u32,
    /// Most lines of one session.
    pub max_commands: u32,
}

impl Default for InboundConfig {
    fn default() -> Self {
        InboundConfig {
            listen: None,
            hostname: None,
            retention_days: None,
            max_message_bytes: 25 * 1024 * 1024,
            max_recipients: 50,
            messages_per_minute: 600,
            messages_per_minute_per_peer: 120,
            max_bytes_per_project: 2 * 1024 * 1024 * 1024,
            domains_per_project: 20,
            routes_per_project: 200,
            max_connections: 128,
            max_connections_per_peer: 8,
            idle_secs: 60,
            session_secs: 600,
            max_commands: 1_000,
        }
    }
}

impl InboundConfig {
    /// The host inbound domains' MX records name: `hostname`, else the submission host.
    pub fn host(&self, submission_host: String) -> String {
        match self.hostname.as_deref().map(str::trim).filter(|h| !h.is_empty()) {
            Some(name) => name.trim_end_matches('.').to_ascii_lowercase(),
            None => submission_host.to_ascii_lowercase(),
        }
    }
}
