//! Where messages go: the SMTP relay of `[smtp]` (lettre's pooled async transport), or the capture
//! outbox when no relay is configured.

use std::time::Duration;

use lettre::address::Envelope;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use crate::config::{SmtpConfig, SmtpSecurity};

/// Why a relay did not take a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Try again later (4xx, connection trouble, timeouts).
    Temporary(String),
    /// Do not try again (5xx).
    Permanent(String),
}

/// The configured transport.
#[derive(Clone)]
pub enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Capture,
}

impl Transport {
    pub fn from_config(smtp: &SmtpConfig) -> Result<Transport, String> {
        let Some(host) = &smtp.host else { return Ok(Transport::Capture) };
        let builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.clone());
        let tls = match smtp.security {
            SmtpSecurity::None => Tls::None,
            SmtpSecurity::Starttls => {
                Tls::Required(TlsParameters::new(host.clone()).map_err(|e| e.to_string())?)
            }
            SmtpSecurity::Tls => Tls::Wrapper(TlsParameters::new(host.clone()).map_err(|e| e.to_string())?),
        };
        let mut builder = builder
            .port(smtp.port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(smtp.timeout_secs.into())))
            .pool_config(PoolConfig::new().max_size(smtp.pool_size));
        if let (Some(user), Some(password)) = (&smtp.username, &smtp.password) {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        } else if let Some(user) = &smtp.username {
            builder = builder.credentials(Credentials::new(user.clone(), String::new()));
        }
        Ok(Transport::Smtp(builder.build()))
    }

    /// Hands a message to the relay.
    pub async fn send(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), Refusal> {
        let Transport::Smtp(smtp) = self else { return Ok(()) };
        let envelope = Envelope::new(
            Some(from.parse().map_err(|e| Refusal::Permanent(format!("bad sender {from}: {e}")))?),
            vec![to.parse().map_err(|e| Refusal::Permanent(format!("bad recipient {to}: {e}")))?],
        )
        .map_err(|e| Refusal::Permanent(e.to_string()))?;
        match smtp.send_raw(&envelope, raw).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_permanent() => Err(Refusal::Permanent(e.to_string())),
            Err(e) => Err(Refusal::Temporary(e.to_string())),
        }
    }
}
