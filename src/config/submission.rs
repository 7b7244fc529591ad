//! `[submission]`: the SMTP submission listener other apps send through (issue 31).

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[submission]`: off unless `listen` or `listen_tls` is set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubmissionConfig {
    /// Where the listener takes connections that upgrade with STARTTLS (`"0.0.0.0:587"`).
    pub listen: Option<SocketAddr>,
    /// Where it takes connections that are TLS from the start (`"0.0.0.0:465"`).
    pub listen_tls: Option<SocketAddr>,
    /// The certificate chain, PEM (read again on SIGHUP).
    pub cert: Option<PathBuf>,
    /// Its private key, PEM.
    pub key: Option<PathBuf>,
    /// The name the listener greets with; default: the host of `[server] public_url`.
    pub hostname: Option<String>,
    /// AUTH on an unencrypted connection: only for tests on loopback.
    pub allow_plaintext_auth: bool,
    /// Largest message accepted, in bytes (552 above).
    pub max_message_bytes: u64,
    /// Most recipients of one message.
    pub max_recipients: u32,
    /// Connections served at once.
    pub max_connections: u32,
    /// Connections served at once from one address (an IPv6 client counts by its /64).
    pub max_connections_per_peer: u32,
    /// Longest silence of a session, in seconds.
    pub idle_secs: u32,
    /// Longest session, in seconds, however busy.
    pub session_secs: u32,
    /// Most lines of one session (a message takes four or five).
    pub max_commands: u32,
}

impl Default for SubmissionConfig {
    fn default() -> Self {
        SubmissionConfig {
            listen: None,
            listen_tls: None,
            cert: None,
            key: None,
            hostname: None,
            allow_plaintext_auth: false,
            max_message_bytes: 30 * 1024 * 1024,
            max_recipients: 50,
            max_connections: 64,
            max_connections_per_peer: 16,
            idle_secs: 120,
            session_secs: 1_800,
            max_commands: 5_000,
        }
    }
}

impl SubmissionConfig {
    /// Whether either listener is on.
    pub fn is_on(&self) -> bool {
        self.listen.is_some() || self.listen_tls.is_some()
    }

    /// What keeps the listener from working as configured.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let has_tls = self.cert.is_some() && self.key.is_some();
        if self.cert.is_some() != self.key.is_some() {
            out.push("`submission.cert` and `submission.key` go together".to_string());
        }
        if self.listen_tls.is_some() && !has_tls {
            out.push("`submission.listen_tls` needs `submission.cert` and `submission.key`".to_string());
        }
        if self.listen.is_some() && !has_tls && !self.allow_plaintext_auth {
            out.push(
                "`submission.listen` needs `submission.cert` and `submission.key` (AUTH is offered only after STARTTLS)"
                    .to_string(),
            );
        }
        out
    }
}
