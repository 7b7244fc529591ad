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
    /// Signed-in sessions one project holds at once, from every address together (421 past it),
    /// so one tenant's apps cannot take every connection the listener serves.
    pub max_sessions_per_project: u32,
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
            max_sessions_per_project: 16,
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

    /// The name the listener greets with, and apps connect to: `hostname`, else the host of
    /// `public_url` (`https://mail.example.com:8443/x` → `mail.example.com`).
    pub fn host(&self, public_url: &str) -> String {
        if let Some(name) = self.hostname.as_deref().filter(|h| !h.is_empty()) {
            return name.to_string();
        }
        let rest = public_url.split_once("://").map_or(public_url, |(_, r)| r);
        let authority = rest.split('/').next().unwrap_or(rest);
        match authority.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host.to_string(),
            _ => authority.to_string(),
        }
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

#[cfg(test)]
mod tests {
    use super::SubmissionConfig;

    #[test]
    fn the_host_is_the_configured_name_or_the_public_one() {
        let config = SubmissionConfig::default();
        assert_eq!(config.host("https://mail.example.com"), "mail.example.com");
        assert_eq!(config.host("http://127.0.0.1:8080/"), "127.0.0.1");
        assert_eq!(config.host("mail.example.com"), "mail.example.com");
        let named = SubmissionConfig { hostname: Some("smtp.example.com".into()), ..config };
        assert_eq!(named.host("https://mail.example.com"), "smtp.example.com");
    }
}
