//! Where messages go: the SMTP relay of `[smtp]`, or the capture outbox when no relay is
//! configured.
//!
//! Plain and STARTTLS relays are reached through lettre's SMTP connections kept in a small pool
//! of our own, on sockets with `TCP_NODELAY`: lettre writes a message and its final `.` in two
//! writes, and with Nagle's algorithm on, the second waits for the relay's delayed ACK (tens of
//! milliseconds per message and connection). Relays on implicit TLS (`security = "tls"`) use
//! lettre's own pooled transport.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use lettre::address::Envelope;
use lettre::transport::smtp::PoolConfig;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use tokio::sync::Semaphore;

use crate::config::{SmtpConfig, SmtpSecurity};

/// Why a relay did not take a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Try again later (4xx, connection trouble, timeouts).
    Temporary(String),
    /// Do not try again (5xx).
    Permanent(String),
}

/// Idle connections older than this are closed rather than reused (relays drop idle clients).
const MAX_IDLE: Duration = Duration::from_secs(30);

/// Connections to a plain or STARTTLS relay.
pub struct SmtpPool {
    settings: SmtpConfig,
    hello: ClientId,
    idle: Mutex<Vec<(AsyncSmtpConnection, Instant)>>,
    slots: Semaphore,
}

impl SmtpPool {
    fn new(settings: SmtpConfig) -> SmtpPool {
        let slots = Semaphore::new(settings.pool_size.max(1) as usize);
        SmtpPool { settings, hello: ClientId::default(), idle: Mutex::new(Vec::new()), slots }
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.settings.timeout_secs.into())
    }

    async fn connect(&self) -> Result<AsyncSmtpConnection, Refusal> {
        let host = self.settings.host.clone().unwrap_or_default();
        let address = (host.as_str(), self.settings.port);
        let tcp = tokio::time::timeout(self.timeout(), tokio::net::TcpStream::connect(address))
            .await
            .map_err(|_| {
                Refusal::Temporary(format!("connecting to {host}:{} timed out", self.settings.port))
            })?
            .map_err(|e| {
                Refusal::Temporary(format!("cannot connect to {host}:{}: {e}", self.settings.port))
            })?;
        tcp.set_nodelay(true).map_err(|e| Refusal::Temporary(e.to_string()))?;
        let mut connection = AsyncSmtpConnection::connect_with_transport(Box::new(tcp), &self.hello)
            .await
            .map_err(classify)?;
        if self.settings.security == SmtpSecurity::Starttls {
            let tls = TlsParameters::new(host).map_err(|e| Refusal::Temporary(e.to_string()))?;
            connection.starttls(tls, &self.hello).await.map_err(classify)?;
        }
        if let Some(user) = &self.settings.username {
            let credentials =
                Credentials::new(user.clone(), self.settings.password.clone().unwrap_or_default());
            connection.auth(&[Mechanism::Plain, Mechanism::Login], &credentials).await.map_err(classify)?;
        }
        Ok(connection)
    }

    async fn send(&self, envelope: &Envelope, raw: &[u8]) -> Result<(), Refusal> {
        let _slot = self.slots.acquire().await.map_err(|e| Refusal::Temporary(e.to_string()))?;
        let reused = self.idle.lock().ok().and_then(|mut idle| {
            while let Some((connection, since)) = idle.pop() {
                if since.elapsed() < MAX_IDLE && !connection.has_broken() {
                    return Some(connection);
                }
            }
            None
        });
        let fresh = reused.is_none();
        let mut connection = match reused {
            Some(connection) => connection,
            None => self.connect().await?,
        };
        let sent = tokio::time::timeout(self.timeout(), connection.send(envelope, raw)).await;
        match sent {
            Ok(Ok(_)) => {
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push((connection, Instant::now()));
                }
                Ok(())
            }
            // A reused connection the relay had closed: one more try on a fresh one.
            Ok(Err(e)) if !fresh && e.status().is_none() => {
                let mut connection = self.connect().await?;
                let result = tokio::time::timeout(self.timeout(), connection.send(envelope, raw))
                    .await
                    .map_err(|_| Refusal::Temporary("the relay did not answer in time".into()))?;
                result.map(|_| ()).map_err(classify)?;
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push((connection, Instant::now()));
                }
                Ok(())
            }
            Ok(Err(e)) => Err(classify(e)),
            Err(_) => Err(Refusal::Temporary("the relay did not answer in time".into())),
        }
    }
}

fn classify(e: lettre::transport::smtp::Error) -> Refusal {
    if e.is_permanent() { Refusal::Permanent(e.to_string()) } else { Refusal::Temporary(e.to_string()) }
}

/// The configured transport.
pub enum Transport {
    Smtp(SmtpPool),
    SmtpTls(AsyncSmtpTransport<Tokio1Executor>),
    Capture,
}

impl Transport {
    pub fn from_config(smtp: &SmtpConfig) -> Result<Transport, String> {
        let Some(host) = &smtp.host else { return Ok(Transport::Capture) };
        if smtp.security != SmtpSecurity::Tls {
            return Ok(Transport::Smtp(SmtpPool::new(smtp.clone())));
        }
        let tls = Tls::Wrapper(TlsParameters::new(host.clone()).map_err(|e| e.to_string())?);
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.clone())
            .port(smtp.port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(smtp.timeout_secs.into())))
            .pool_config(PoolConfig::new().max_size(smtp.pool_size));
        if let Some(user) = &smtp.username {
            builder = builder
                .credentials(Credentials::new(user.clone(), smtp.password.clone().unwrap_or_default()));
        }
        Ok(Transport::SmtpTls(builder.build()))
    }

    /// Hands a message to the relay (the capture transport keeps it elsewhere; see delivery).
    pub async fn send(&self, from: &str, to: &str, raw: &[u8]) -> Result<(), Refusal> {
        let envelope = Envelope::new(
            Some(from.parse().map_err(|e| Refusal::Permanent(format!("bad sender {from}: {e}")))?),
            vec![to.parse().map_err(|e| Refusal::Permanent(format!("bad recipient {to}: {e}")))?],
        )
        .map_err(|e| Refusal::Permanent(e.to_string()))?;
        match self {
            Transport::Smtp(pool) => pool.send(&envelope, raw).await,
            Transport::SmtpTls(smtp) => smtp.send_raw(&envelope, raw).await.map(|_| ()).map_err(classify),
            Transport::Capture => Ok(()),
        }
    }
}
