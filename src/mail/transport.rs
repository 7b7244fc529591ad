//! Where messages go: the relays of `[[smtp.relays]]` (or the single `[smtp]` relay), or the
//! capture outbox when none is configured.
//!
//! - Each relay has a pool of lettre SMTP connections of our own, on sockets with `TCP_NODELAY`:
//!   lettre writes a message and its final `.` in two writes, and with Nagle's algorithm on, the
//!   second waits for the relay's delayed ACK (tens of milliseconds per message and connection).
//!   Implicit-TLS relays get the same socket: we make the TLS connection and hand it to lettre.
//! - The pool holds `pool_size` connections at most, and fewer when the relay says so: a relay
//!   that answers a new connection with a 4xx greeting while others are open has reached its
//!   connection limit, and the pool shrinks to what it accepted.
//! - Mail goes to the first relay that is not resting. A relay rests for [`REST`] when it cannot
//!   be reached (refused, timed out, bad greeting, TLS or login failure) or when it answered
//!   [`TEMPORARY_IN_A_ROW`] messages in a row with 4xx (it refuses everyone); the message that
//!   found this out goes on to the next relay at once.
//! - A relay's `max_messages_per_second` holds for all projects together: a message waits for
//!   its turn, or goes back to the queue when the wait would be long.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use lettre::address::Envelope;
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, pki_types::ServerName};

use crate::config::{RelayConfig, SmtpConfig, SmtpSecurity};

/// Why no relay took a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Try again later (4xx, connection trouble, timeouts, no relay available).
    Temporary(String),
    /// The relay deferred this message (4xx) while it took others: the receiving provider's
    /// refusal, passed on by the relay, which slows that provider alone.
    Deferred(String),
    /// Do not try again (5xx).
    Permanent(String),
    /// Not tried: a relay's rate cap, or every relay resting. Not before this long; the message
    /// has not used up one of its tries.
    Busy(Duration),
}

/// Idle connections older than this are closed rather than reused (relays drop idle clients).
const MAX_IDLE: Duration = Duration::from_secs(30);
/// How long a failing relay is left alone before it is tried again.
pub const REST: Duration = Duration::from_secs(60);
/// Temporary refusals in a row, with no message accepted between them, that rest a relay.
pub const TEMPORARY_IN_A_ROW: u32 = 5;
/// The longest a message waits in memory for a relay's rate cap; beyond it, it goes back to the
/// queue.
const MAX_RATE_WAIT: Duration = Duration::from_secs(2);

/// What went wrong with one relay.
enum Failure {
    /// The relay itself: rest it and try the next. `answered`: the relay did answer this
    /// message (a 4xx that made too many in a row), so the message has had a try; a connection
    /// that failed before the message was sent is no try of the message.
    Relay { why: String, answered: bool },
    /// This message (4xx or 5xx to it, or no answer in time).
    Message(Refusal),
}

/// An open connection, counted by its relay while it lives.
struct Connection {
    smtp: AsyncSmtpConnection,
    since: Instant,
    open: Arc<AtomicUsize>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One relay: its connections, its rate cap and its health.
pub struct Relay {
    settings: RelayConfig,
    timeout: Duration,
    hello: ClientId,
    idle: Mutex<Vec<Connection>>,
    /// One permit per connection the pool may hold.
    slots: Semaphore,
    /// Permits the semaphore has (it only shrinks).
    size: AtomicUsize,
    open: Arc<AtomicUsize>,
    rate: Option<DefaultDirectRateLimiter>,
    /// Messages waiting for the rate cap.
    waiting: AtomicUsize,
    /// Connections being made.
    connecting: AtomicUsize,
    resting_until: Mutex<Option<Instant>>,
    temporary_in_a_row: AtomicU32,
    /// The receiving queue of every refusal in the current run of them, or `None` once they
    /// named several (or failed without a reply): a run for one provider is that provider's.
    run_queue: Mutex<Option<Option<String>>>,
}

impl Relay {
    fn new(settings: RelayConfig, timeout: Duration) -> Relay {
        let size = settings.pool_size.max(1) as usize;
        let rate = std::num::NonZeroU32::new(settings.max_messages_per_second)
            .map(|n| RateLimiter::direct(Quota::per_second(n)));
        Relay {
            settings,
            timeout,
            hello: ClientId::default(),
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(size),
            size: AtomicUsize::new(size),
            open: Arc::new(AtomicUsize::new(0)),
            rate,
            waiting: AtomicUsize::new(0),
            connecting: AtomicUsize::new(0),
            resting_until: Mutex::new(None),
            temporary_in_a_row: AtomicU32::new(0),
            run_queue: Mutex::new(None),
        }
    }

    /// `host:port`, as logs and errors name the relay.
    pub fn name(&self) -> String {
        format!("{}:{}", self.settings.host, self.settings.port)
    }

    /// How many connections the pool may hold now.
    pub fn pool_size(&self) -> usize {
        self.size.load(Ordering::Relaxed)
    }

    /// Whether the relay is resting after failures.
    pub fn resting(&self) -> bool {
        self.rest_left().is_some()
    }

    /// What is left of the relay's rest after failures, `None` when it is not resting.
    fn rest_left(&self) -> Option<Duration> {
        let mut until = self.resting_until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match *until {
            Some(at) if now < at => Some(at - now),
            Some(_) => {
                *until = None;
                tracing::info!(relay = self.name(), "trying the relay again after its rest");
                None
            }
            None => None,
        }
    }

    fn rest(&self, why: &str, rest: Duration) {
        tracing::warn!(relay = self.name(), "the relay rests for {}s: {why}", rest.as_secs());
        *self.resting_until.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + rest);
        self.end_run();
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
        // A limit learnt from a relay in trouble is not its limit: start again from the setting.
        let configured = self.settings.pool_size.max(1) as usize;
        let size = self.size.swap(configured, Ordering::Relaxed);
        self.slots.add_permits(configured.saturating_sub(size));
    }

    /// Waits for the rate cap: `Err` with an estimate of the wait when it would be longer than
    /// [`MAX_RATE_WAIT`].
    async fn take_turn(&self) -> Result<(), Duration> {
        let Some(rate) = &self.rate else { return Ok(()) };
        let deadline = Instant::now() + MAX_RATE_WAIT;
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let turn = loop {
            match rate.check() {
                Ok(()) => break Ok(()),
                Err(not_until) => {
                    let wait = not_until.wait_time_from(DefaultClock::default().now());
                    if Instant::now() + wait > deadline {
                        let period = Duration::from_secs(1) / self.settings.max_messages_per_second.max(1);
                        break Err(period * self.waiting.load(Ordering::Relaxed) as u32);
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        };
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        turn
    }

    async fn connect(&self) -> Result<Connection, ConnectError> {
        let host = self.settings.host.as_str();
        let address = (host, self.settings.port);
        let tcp = tokio::time::timeout(self.timeout, TcpStream::connect(address))
            .await
            .map_err(|_| ConnectError::new("connecting timed out"))?
            .map_err(|e| ConnectError::new(format!("cannot connect: {e}")))?;
        tcp.set_nodelay(true).map_err(|e| ConnectError::new(e.to_string()))?;
        let stream: Box<dyn AsyncTokioStream> = match self.settings.security {
            SmtpSecurity::Tls => Box::new(tls_connect(host, tcp, self.timeout).await?),
            _ => Box::new(tcp),
        };
        let connecting = async {
            let mut smtp: AsyncSmtpConnection =
                AsyncSmtpConnection::connect_with_transport(stream, &self.hello).await?;
            if self.settings.security == SmtpSecurity::Starttls {
                smtp.starttls(TlsParameters::new(host.to_string())?, &self.hello).await?;
            }
            if let Some(user) = &self.settings.username {
                let credentials =
                    Credentials::new(user.clone(), self.settings.password.clone().unwrap_or_default());
                smtp.auth(&[Mechanism::Plain, Mechanism::Login], &credentials).await?;
            }
            Ok::<_, lettre::transport::smtp::Error>(smtp)
        };
        let smtp = tokio::time::timeout(self.timeout, connecting)
            .await
            .map_err(|_| ConnectError::new("the relay did not greet in time"))??;
        self.open.fetch_add(1, Ordering::Relaxed);
        Ok(Connection { smtp, since: Instant::now(), open: self.open.clone() })
    }

    /// A connection for one message, with the pool slot it holds.
    async fn connection(&self) -> Result<(Connection, SemaphorePermit<'_>, bool), Failure> {
        let mut waits = 0;
        loop {
            let slot = self
                .slots
                .acquire()
                .await
                .map_err(|e| Failure::Relay { why: e.to_string(), answered: false })?;
            let reused = {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                std::iter::from_fn(|| idle.pop())
                    .find(|c| c.since.elapsed() < MAX_IDLE && !c.smtp.has_broken())
            };
            if let Some(connection) = reused {
                return Ok((connection, slot, true));
            }
            self.connecting.fetch_add(1, Ordering::Relaxed);
            let connected = self.connect().await;
            let others_connecting = self.connecting.fetch_sub(1, Ordering::Relaxed) > 1;
            match connected {
                Ok(connection) => return Ok((connection, slot, false)),
                // The relay's connection limit: hold fewer connections, and use the open ones.
                Err(e) if e.busy && self.open.load(Ordering::Relaxed) > 0 => {
                    if self.size.load(Ordering::Relaxed) > 1 {
                        slot.forget();
                        let size = self.size.fetch_sub(1, Ordering::Relaxed) - 1;
                        tracing::info!(
                            relay = self.name(),
                            "the relay refused another connection ({}); the pool now holds {size}",
                            e.message
                        );
                    }
                }
                // Others are still connecting: whether this is a limit shows once they are in.
                Err(e) if e.busy && others_connecting && waits < 100 => {
                    waits += 1;
                    drop(slot);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => return Err(Failure::Relay { why: e.message, answered: false }),
            }
        }
    }

    async fn send(&self, envelope: &Envelope, raw: &[u8], queue: Option<&str>) -> Result<(), Failure> {
        let (mut connection, _slot, reused) = self.connection().await?;
        let sent = tokio::time::timeout(self.timeout, connection.smtp.send(envelope, raw)).await;
        let result = match sent {
            // A reused connection the relay had closed: one more try on a fresh one.
            Ok(Err(e)) if reused && e.status().is_none() => {
                drop(connection);
                connection =
                    self.connect().await.map_err(|e| Failure::Relay { why: e.message, answered: false })?;
                tokio::time::timeout(self.timeout, connection.smtp.send(envelope, raw)).await
            }
            other => other,
        };
        match result {
            Ok(Ok(_)) => {
                self.end_run();
                connection.since = Instant::now();
                self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(connection);
                Ok(())
            }
            Ok(Err(e)) if e.is_permanent() => {
                // A decisive answer: the relay works, this message is refused.
                self.end_run();
                self.keep_if_usable(connection);
                Err(Failure::Message(Refusal::Permanent(e.to_string())))
            }
            Ok(Err(e)) => {
                self.keep_if_usable(connection);
                let replied = e.status().is_some();
                Err(self.temporary(e.to_string(), queue.filter(|_| replied)))
            }
            Err(_) => Err(self.temporary("the relay did not answer in time".into(), None)),
        }
    }

    /// A message was answered for good: a run of temporary refusals ends.
    fn end_run(&self) {
        self.temporary_in_a_row.store(0, Ordering::Relaxed);
        *self.run_queue.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Keeps a connection after a refusal when it can still carry a message: lettre quits and
    /// closes one whose transaction failed, but not one whose message it refused to send itself
    /// (non-ASCII without SMTPUTF8 or 8BITMIME).
    fn keep_if_usable(&self, connection: Connection) {
        if !connection.smtp.has_broken() {
            self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(connection);
        }
    }

    /// A temporary refusal, replied for a message to `queue` (`None`: no reply, as a timeout).
    /// A run of them rests the relay, unless every one was a reply for the same receiving
    /// queue: that provider defers, and the relay is fine for the others.
    fn temporary(&self, error: String, queue: Option<&str>) -> Failure {
        let mut in_a_row = self.temporary_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
        let one_queue = {
            let mut run = self.run_queue.lock().unwrap_or_else(|e| e.into_inner());
            let same = match (&*run, queue) {
                (None, Some(q)) => Some(q.to_string()),
                (Some(Some(seen)), Some(q)) if seen == q => Some(q.to_string()),
                _ => None,
            };
            // A run for one provider that turns to another counts from its last refusal: ten
            // of Gmail's and then one of Yahoo's are no five refusals of everyone.
            if same.is_none() && matches!(&*run, Some(Some(_))) {
                in_a_row = 2;
                self.temporary_in_a_row.store(in_a_row, Ordering::Relaxed);
            }
            *run = Some(same.clone());
            same.is_some()
        };
        if one_queue {
            Failure::Message(Refusal::Deferred(error))
        } else if in_a_row >= TEMPORARY_IN_A_ROW {
            let why = format!("{in_a_row} messages in a row refused for now, the last with: {error}");
            Failure::Relay { why, answered: true }
        } else {
            Failure::Message(Refusal::Temporary(error))
        }
    }
}

/// Why a new connection failed. `busy`: the relay answered 4xx (with other connections open,
/// its connection limit).
struct ConnectError {
    busy: bool,
    message: String,
}

impl ConnectError {
    fn new(message: impl Into<String>) -> ConnectError {
        ConnectError { busy: false, message: message.into() }
    }
}

impl From<lettre::transport::smtp::Error> for ConnectError {
    fn from(e: lettre::transport::smtp::Error) -> ConnectError {
        ConnectError { busy: e.is_transient(), message: e.to_string() }
    }
}

/// The relays, in the order mail tries them.
pub struct Relays {
    relays: Vec<Relay>,
    rest: Duration,
}

impl Relays {
    /// Relays from their settings; a failing one rests for `rest`.
    pub fn new(settings: Vec<RelayConfig>, timeout: Duration, rest: Duration) -> Relays {
        Relays { relays: settings.into_iter().map(|s| Relay::new(s, timeout)).collect(), rest }
    }

    pub fn list(&self) -> &[Relay] {
        &self.relays
    }

    /// Connections all relays may hold together.
    pub fn capacity(&self) -> usize {
        self.relays.iter().map(Relay::pool_size).sum()
    }

    /// When every relay is resting: how long until the first one is tried again.
    pub fn resting_for(&self) -> Option<Duration> {
        let mut rests = self.relays.iter().map(Relay::rest_left);
        let first = rests.next()??;
        rests.try_fold(first, |soonest, left| Some(soonest.min(left?)))
    }

    /// Hands the message to the first relay that takes it. A message no relay answered (every
    /// relay resting, or failing before it was sent) has had no try: [`Refusal::Busy`] until the
    /// first rest ends, so an outage of the relays uses up no message's tries, however long.
    pub async fn send(&self, envelope: &Envelope, raw: &[u8], queue: Option<&str>) -> Result<(), Refusal> {
        let mut problems = Vec::new();
        let mut answered = false;
        for relay in &self.relays {
            if relay.resting() {
                problems.push(format!("{} is resting after failures", relay.name()));
                continue;
            }
            relay.take_turn().await.map_err(Refusal::Busy)?;
            match relay.send(envelope, raw, queue).await {
                Ok(()) => return Ok(()),
                Err(Failure::Message(refusal)) => return Err(refusal),
                Err(Failure::Relay { why, answered: a }) => {
                    relay.rest(&why, self.rest);
                    problems.push(format!("{}: {why}", relay.name()));
                    answered |= a;
                }
            }
        }
        if !answered {
            return Err(Refusal::Busy(self.resting_for().unwrap_or(self.rest)));
        }
        Err(Refusal::Temporary(format!("no relay took the message ({})", problems.join("; "))))
    }
}

/// The configured transport.
pub enum Transport {
    Relays(Relays),
    Capture,
}

impl Transport {
    pub fn from_config(smtp: &SmtpConfig) -> Transport {
        let relays = smtp.relays();
        if relays.is_empty() {
            return Transport::Capture;
        }
        Transport::Relays(Relays::new(relays, Duration::from_secs(smtp.timeout_secs.into()), REST))
    }

    /// When every relay is resting: how long until the first one is tried again.
    pub fn resting_for(&self) -> Option<Duration> {
        match self {
            Transport::Relays(relays) => relays.resting_for(),
            Transport::Capture => None,
        }
    }

    /// Hands a message to a relay (the capture transport keeps it elsewhere; see delivery);
    /// `queue` is its receiving provider's (`core::providers`) when mail is queued per provider.
    pub async fn send(&self, from: &str, to: &str, raw: &[u8], queue: Option<&str>) -> Result<(), Refusal> {
        let envelope = Envelope::new(
            Some(from.parse().map_err(|e| Refusal::Permanent(format!("bad sender {from}: {e}")))?),
            vec![to.parse().map_err(|e| Refusal::Permanent(format!("bad recipient {to}: {e}")))?],
        )
        .map_err(|e| Refusal::Permanent(e.to_string()))?;
        match self {
            Transport::Relays(relays) => relays.send(&envelope, raw, queue).await,
            Transport::Capture => Ok(()),
        }
    }
}

/// The web's certificate authorities, as lettre's STARTTLS uses them.
static TLS: LazyLock<Result<Arc<ClientConfig>, String>> = LazyLock::new(|| {
    let roots = RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|builder| Arc::new(builder.with_root_certificates(roots).with_no_client_auth()))
        .map_err(|e| e.to_string())
});

async fn tls_connect(host: &str, tcp: TcpStream, timeout: Duration) -> Result<TlsStream, ConnectError> {
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| ConnectError::new(format!("bad relay name: {e}")))?;
    let config = TLS.clone().map_err(|e| ConnectError::new(format!("TLS cannot be set up: {e}")))?;
    let handshake = TlsConnector::from(config).connect(name, tcp);
    let stream = tokio::time::timeout(timeout, handshake)
        .await
        .map_err(|_| ConnectError::new("the TLS handshake timed out"))?
        .map_err(|e| ConnectError::new(format!("TLS: {e}")))?;
    Ok(TlsStream(stream))
}

/// A TLS connection lettre can speak SMTP over.
#[derive(Debug)]
struct TlsStream(tokio_rustls::client::TlsStream<TcpStream>);

impl AsyncRead for TlsStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl AsyncTokioStream for TlsStream {
    fn peer_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.0.get_ref().0.peer_addr()
    }
}
