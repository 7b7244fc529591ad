//! One SMTP session, whatever the listener is for: the protocol (commands parsed by
//! `smtp-proto`), STARTTLS, AUTH PLAIN and LOGIN, the message's data, and the caps every
//! session keeps (its lines, silence, length, recipients, message size). What a role decides
//! (who may sign in, which recipients it takes, what becomes of a message) is its [`Role`]'s.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver, RequestReceiver};
use smtp_proto::{
    AUTH_LOGIN, AUTH_PLAIN, EXT_8BIT_MIME, EXT_AUTH, EXT_ENHANCED_STATUS_CODES, EXT_PIPELINING, EXT_SIZE,
    EXT_START_TLS, EhloResponse, Error as SmtpError, Request,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsAcceptor;

use super::conn::Conn;
use crate::core::limits::bodies::{BodyBudget, Reserved};

/// A reply line (or lines), as sent: `250 2.0.0 ok\r\n`.
pub type Reply = String;

/// A reply of `code`, enhanced status `esc` and `text`.
pub fn reply(code: u16, esc: &str, text: &str) -> Reply {
    format!("{code} {esc} {text}\r\n")
}

/// The reply when a message could not be kept: 452 4.3.1 (insufficient system storage) when the
/// disk is full, else 451; either way the sender keeps it and tries again.
pub fn not_kept(e: &crate::core::Error) -> Reply {
    if matches!(e, crate::core::Error::OverLimit(crate::core::error::Limit::Storage)) {
        tracing::warn!("a message was refused for now: the disk is full");
        return reply(452, "4.3.1", "insufficient system storage; try again later");
    }
    tracing::error!("could not keep a message: {e}");
    reply(451, "4.3.0", "the message could not be kept; try again later")
}

/// The client of a session: its address and the name it greeted with (EHLO or HELO).
#[derive(Debug, Clone)]
pub struct Client {
    pub peer: IpAddr,
    pub helo: String,
}

/// What a listener is for: the decisions a session asks of it.
pub trait Role: Send + Sync + 'static {
    /// Who a signed-in client is.
    type Principal: Send + Sync;
    /// A recipient taken at RCPT.
    type Recipient: Send;

    /// The name the server gives in its greeting and EHLO answer.
    fn hostname(&self) -> &str;

    /// What the greeting says after the name.
    fn banner(&self) -> &str;

    /// Whether a client must sign in before MAIL (and AUTH is offered).
    fn requires_auth(&self) -> bool {
        false
    }

    /// Whether AUTH is offered on an unencrypted connection (loopback tests only).
    fn plaintext_auth(&self) -> bool {
        false
    }

    /// Checks a client's credentials. A refusal starting with 421 ends the session.
    fn authenticate(
        &self,
        _peer: IpAddr,
        _username: String,
        _password: String,
    ) -> impl Future<Output = Result<Self::Principal, Reply>> + Send {
        async { Err(reply(502, "5.5.1", "not implemented")) }
    }

    /// Takes or refuses a recipient of the message under way.
    fn rcpt(
        &self,
        who: Option<&Self::Principal>,
        client: &Client,
        to: &str,
    ) -> impl Future<Output = Result<Self::Recipient, Reply>> + Send;

    /// What becomes of a whole message; the reply to its data. It answers 250 only once the
    /// message is kept for good.
    fn deliver(
        &self,
        who: Option<&Self::Principal>,
        client: &Client,
        from: &str,
        to: Vec<Self::Recipient>,
        data: Vec<u8>,
    ) -> impl Future<Output = Reply> + Send;
}

/// The caps of every session of a listener.
#[derive(Clone)]
pub struct Limits {
    pub max_message_bytes: usize,
    /// A session's most lines (commands, and junk: every line counts).
    pub max_commands: usize,
    /// Most recipients of one message.
    pub max_recipients: usize,
    /// Longest silence.
    pub idle: Duration,
    /// Longest session, however busy.
    pub session: Duration,
    /// The memory every body being read takes together, the HTTP API's included: a message's
    /// data reserves its share (its declared `SIZE`, else the cap) before it is read.
    pub budget: std::sync::Arc<BodyBudget>,
}

/// Longest line of an AUTH exchange (a base64 credential).
const MAX_AUTH_LINE: usize = 4096;

/// What a session is reading.
enum Reading {
    Commands,
    /// A message's data, kept, and its share of the memory budget.
    Data(DataReceiver, Vec<u8>, #[expect(dead_code, reason = "held for its drop")] Reserved),
    /// A message's data past the size cap, read and thrown away.
    Discard(DummyDataReceiver),
    /// A line of an AUTH exchange: the PLAIN response, or LOGIN's user name or password.
    Auth(AuthStep, Vec<u8>),
}

enum AuthStep {
    Plain,
    LoginUser,
    LoginPassword(String),
}

/// The state of the session's current message, and who signed in.
struct Transaction<R: Role> {
    greeted: bool,
    principal: Option<R::Principal>,
    from: Option<String>,
    /// The size MAIL FROM declared (0: none).
    size: usize,
    recipients: Vec<R::Recipient>,
}

impl<R: Role> Transaction<R> {
    fn reset(&mut self) {
        self.from = None;
        self.size = 0;
        self.recipients.clear();
    }
}

/// Runs one session on `conn` until the client leaves or a cap ends it. `tls` is the server's
/// certificate when STARTTLS is offered.
pub async fn run<R: Role>(
    role: &R,
    limits: &Limits,
    tls: Option<TlsAcceptor>,
    mut conn: Conn,
    peer: IpAddr,
) -> io::Result<()> {
    conn.write_all(format!("220 {} {}\r\n", role.hostname(), role.banner()).as_bytes()).await?;
    let mut commands = RequestReceiver::default();
    let mut reading = Reading::Commands;
    let mut t =
        Transaction::<R> { greeted: false, principal: None, from: None, size: 0, recipients: Vec::new() };
    let mut client = Client { peer, helo: String::new() };
    let mut count = 0;
    let mut buf = vec![0u8; 8192];
    let ends = tokio::time::Instant::now() + limits.session;
    'session: loop {
        let left = ends.saturating_duration_since(tokio::time::Instant::now());
        let n = match tokio::time::timeout(limits.idle.min(left), conn.read(&mut buf)).await {
            Ok(read) => read?,
            Err(_) if left <= limits.idle => {
                conn.write_all(b"421 4.4.2 session too long\r\n").await?;
                return Ok(());
            }
            Err(_) => {
                conn.write_all(b"421 4.4.2 idle for too long\r\n").await?;
                return Ok(());
            }
        };
        if n == 0 {
            return Ok(());
        }
        let mut bytes = buf[..n].iter();
        loop {
            match &mut reading {
                Reading::Data(receiver, data, _) => {
                    let done = receiver.ingest(&mut bytes, data);
                    let too_big = data.len() > limits.max_message_bytes;
                    if too_big && !done {
                        reading = Reading::Discard(DummyDataReceiver::new_data(&DataReceiver::new()));
                        continue;
                    }
                    if !done {
                        break;
                    }
                    let received = crlf(std::mem::take(data));
                    // The share is held until the message is kept (or refused).
                    let _reserved = std::mem::replace(&mut reading, Reading::Commands);
                    let reply = if too_big {
                        reply(552, "5.3.4", "message too big")
                    } else {
                        let (from, to) =
                            (t.from.take().unwrap_or_default(), std::mem::take(&mut t.recipients));
                        role.deliver(t.principal.as_ref(), &client, &from, to, received).await
                    };
                    t.reset();
                    conn.write_all(reply.as_bytes()).await?;
                }
                Reading::Discard(receiver) => {
                    if !receiver.ingest(&mut bytes) {
                        break;
                    }
                    reading = Reading::Commands;
                    t.reset();
                    conn.write_all(b"552 5.3.4 message too big\r\n").await?;
                }
                Reading::Auth(step, line) => {
                    let mut ended = false;
                    for &b in bytes.by_ref() {
                        if b == b'\n' {
                            ended = true;
                            break;
                        }
                        line.push(b);
                    }
                    if line.len() > MAX_AUTH_LINE {
                        reading = Reading::Commands;
                        conn.write_all(b"500 5.5.6 authentication exchange line too long\r\n").await?;
                        continue;
                    }
                    if !ended {
                        break;
                    }
                    count += 1;
                    let text = String::from_utf8_lossy(line).trim_end_matches('\r').to_string();
                    let step = std::mem::replace(step, AuthStep::Plain);
                    reading = Reading::Commands;
                    if text == "*" {
                        conn.write_all(b"501 5.0.0 authentication cancelled\r\n").await?;
                        continue;
                    }
                    let Some(value) = decode(&text) else {
                        conn.write_all(b"501 5.5.2 not base64\r\n").await?;
                        continue;
                    };
                    let answer = match step {
                        AuthStep::Plain => plain(role, &mut t, peer, &value).await,
                        AuthStep::LoginUser => {
                            reading = Reading::Auth(AuthStep::LoginPassword(value), Vec::new());
                            "334 UGFzc3dvcmQ6\r\n".to_string()
                        }
                        AuthStep::LoginPassword(user) => sign_in(role, &mut t, peer, user, value).await,
                    };
                    conn.write_all(answer.as_bytes()).await?;
                    if answer.starts_with("421") {
                        return Ok(());
                    }
                }
                Reading::Commands => {
                    if bytes.len() == 0 {
                        break;
                    }
                    let request = commands.ingest(&mut bytes);
                    if let Err(SmtpError::NeedsMoreData { .. }) = request {
                        break;
                    }
                    // Every line counts, junk too: a session cannot be kept open with nonsense.
                    count += 1;
                    if count > limits.max_commands {
                        conn.write_all(b"421 4.7.0 too many commands\r\n").await?;
                        return Ok(());
                    }
                    let request = match request {
                        Ok(request) => request,
                        Err(SmtpError::ResponseTooLong) => {
                            conn.write_all(b"500 5.5.2 line too long\r\n").await?;
                            continue;
                        }
                        Err(_) => {
                            conn.write_all(b"500 5.5.2 syntax error\r\n").await?;
                            continue;
                        }
                    };
                    let answer = match request {
                        Request::Ehlo { host } => {
                            client.helo = host.chars().take(255).collect();
                            t.greeted = true;
                            t.reset();
                            ehlo(role, limits, tls.is_some(), conn.is_tls())
                        }
                        Request::Helo { host } => {
                            client.helo = host.chars().take(255).collect();
                            t.greeted = true;
                            t.reset();
                            format!("250 {}\r\n", role.hostname())
                        }
                        Request::StartTls => match &tls {
                            Some(acceptor) if !conn.is_tls() => {
                                conn.write_all(b"220 2.0.0 ready to start TLS\r\n").await?;
                                conn = match tokio::time::timeout(limits.idle, conn.into_tls(acceptor)).await
                                {
                                    Ok(upgraded) => upgraded?,
                                    Err(_) => return Ok(()),
                                };
                                // RFC 3207: what was said before the handshake is forgotten, and
                                // what was sent after the command in the same packet is dropped.
                                t = Transaction {
                                    greeted: false,
                                    principal: None,
                                    from: None,
                                    size: 0,
                                    recipients: Vec::new(),
                                };
                                commands = RequestReceiver::default();
                                continue 'session;
                            }
                            Some(_) => reply(503, "5.5.1", "TLS is already on"),
                            None => reply(502, "5.5.1", "STARTTLS is not offered here"),
                        },
                        Request::Auth { mechanism, initial_response } => {
                            if !role.requires_auth() {
                                reply(502, "5.5.1", "AUTH is not offered here")
                            } else if t.principal.is_some() {
                                reply(503, "5.5.1", "already signed in")
                            } else if !conn.is_tls() && !role.plaintext_auth() {
                                reply(538, "5.7.11", "encryption required: STARTTLS first")
                            } else if mechanism == AUTH_PLAIN && initial_response.is_empty() {
                                reading = Reading::Auth(AuthStep::Plain, Vec::new());
                                "334 \r\n".to_string()
                            } else if mechanism == AUTH_PLAIN {
                                match decode(&initial_response) {
                                    Some(value) => plain(role, &mut t, peer, &value).await,
                                    None => reply(501, "5.5.2", "not base64"),
                                }
                            } else if mechanism == AUTH_LOGIN && initial_response.is_empty() {
                                reading = Reading::Auth(AuthStep::LoginUser, Vec::new());
                                "334 VXNlcm5hbWU6\r\n".to_string()
                            } else if mechanism == AUTH_LOGIN {
                                match decode(&initial_response) {
                                    Some(user) => {
                                        reading = Reading::Auth(AuthStep::LoginPassword(user), Vec::new());
                                        "334 UGFzc3dvcmQ6\r\n".to_string()
                                    }
                                    None => reply(501, "5.5.2", "not base64"),
                                }
                            } else {
                                reply(504, "5.5.4", "mechanism not supported: use PLAIN or LOGIN")
                            }
                        }
                        Request::Mail { from } => {
                            if role.requires_auth() && t.principal.is_none() {
                                reply(530, "5.7.0", "authentication required")
                            } else if from.size > limits.max_message_bytes {
                                reply(552, "5.3.4", "message too big")
                            } else {
                                t.reset();
                                t.from = Some(from.address.into_owned());
                                t.size = from.size;
                                reply(250, "2.1.0", "ok")
                            }
                        }
                        Request::Rcpt { to } => {
                            if t.from.is_none() {
                                reply(503, "5.5.1", "MAIL first")
                            } else if t.recipients.len() >= limits.max_recipients {
                                reply(452, "4.5.3", "too many recipients")
                            } else {
                                match role.rcpt(t.principal.as_ref(), &client, &to.address).await {
                                    Ok(recipient) => {
                                        t.recipients.push(recipient);
                                        reply(250, "2.1.5", "ok")
                                    }
                                    Err(refused) => refused,
                                }
                            }
                        }
                        Request::Data => {
                            let declared = if t.size > 0 { t.size } else { limits.max_message_bytes };
                            if t.recipients.is_empty() {
                                reply(503, "5.5.1", "RCPT first")
                            } else if let Ok(reserved) =
                                limits.budget.reserve(declared.min(limits.max_message_bytes) as u64).await
                            {
                                reading = Reading::Data(DataReceiver::new(), Vec::new(), reserved);
                                "354 end with <CRLF>.<CRLF>\r\n".to_string()
                            } else {
                                t.reset();
                                reply(
                                    452,
                                    "4.3.1",
                                    "the server is reading as many messages as its memory allows; try again shortly",
                                )
                            }
                        }
                        Request::Rset => {
                            t.reset();
                            reply(250, "2.0.0", "ok")
                        }
                        Request::Noop { .. } => reply(250, "2.0.0", "ok"),
                        Request::Quit => {
                            conn.write_all(b"221 2.0.0 bye\r\n").await?;
                            return Ok(());
                        }
                        _ => reply(502, "5.5.1", "not implemented"),
                    };
                    conn.write_all(answer.as_bytes()).await?;
                }
            }
        }
    }
}

/// The message with every line ending CRLF: a client that sends bare LFs (RFC 5321 section 2.3.8
/// forbids them, some send them anyway) gets the lines it meant, so the headers Tidings adds,
/// DKIM and the parsers all see one kind of line.
fn crlf(data: Vec<u8>) -> Vec<u8> {
    let bare = memchr::memchr_iter(b'\n', &data).any(|at| at == 0 || data[at - 1] != b'\r');
    if !bare {
        return data;
    }
    let mut out = Vec::with_capacity(data.len() + data.len() / 32);
    for (at, &b) in data.iter().enumerate() {
        if b == b'\n' && (at == 0 || data[at - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// The EHLO answer: the extensions this session offers now.
fn ehlo<R: Role>(role: &R, limits: &Limits, can_tls: bool, is_tls: bool) -> Reply {
    let mut answer = EhloResponse::new(role.hostname());
    answer.capabilities = EXT_SIZE | EXT_8BIT_MIME | EXT_PIPELINING | EXT_ENHANCED_STATUS_CODES;
    answer.size = limits.max_message_bytes;
    if can_tls && !is_tls {
        answer.capabilities |= EXT_START_TLS;
    }
    if role.requires_auth() && (is_tls || role.plaintext_auth()) {
        answer.capabilities |= EXT_AUTH;
        answer.auth_mechanisms = AUTH_PLAIN | AUTH_LOGIN;
    }
    let mut out = Vec::new();
    let _ = answer.write(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A base64 line's text.
fn decode(line: &str) -> Option<String> {
    let bytes = STANDARD.decode(line.trim()).ok()?;
    String::from_utf8(bytes).ok()
}

/// AUTH PLAIN's response: `[authzid] NUL authcid NUL password`.
async fn plain<R: Role>(role: &R, t: &mut Transaction<R>, peer: IpAddr, value: &str) -> Reply {
    let mut parts = value.split('\0');
    let (Some(_authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return reply(501, "5.5.2", "malformed PLAIN response");
    };
    sign_in(role, t, peer, user.to_string(), password.to_string()).await
}

async fn sign_in<R: Role>(
    role: &R,
    t: &mut Transaction<R>,
    peer: IpAddr,
    user: String,
    password: String,
) -> Reply {
    match role.authenticate(peer, user, password).await {
        Ok(principal) => {
            t.principal = Some(principal);
            reply(235, "2.7.0", "authenticated")
        }
        Err(refused) => refused,
    }
}

#[cfg(test)]
mod tests {
    use super::crlf;

    #[test]
    fn bare_line_feeds_become_crlf_and_crlf_stays() {
        assert_eq!(crlf(b"a\r\nb\r\n".to_vec()), b"a\r\nb\r\n");
        assert_eq!(crlf(b"a\nb\r\n\nc".to_vec()), b"a\r\nb\r\n\r\nc");
        assert_eq!(crlf(b"\n".to_vec()), b"\r\n");
    }

    /// A full disk is 452 (insufficient system storage), whichever listener took the message:
    /// SQLite's SQLITE_FULL becomes the storage limit on its way up.
    #[test]
    fn a_message_that_cannot_be_kept_for_a_full_disk_is_452() {
        let e = crate::core::Error::from(crate::db::DbError::disk_full());
        assert_eq!(super::not_kept(&e), "452 4.3.1 insufficient system storage; try again later\r\n");
        let other = crate::core::Error::Retryable("the writer stopped".into());
        assert!(super::not_kept(&other).starts_with("451 4.3.0"));
    }
}
