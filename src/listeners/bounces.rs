//! The bounce listener (`[bounces] listen`, appliance.md §12): a small inbound SMTP server that
//! takes bounces and complaints addressed to the envelope senders mail leaves with
//! (`b-<token>@<[bounces] domain>`, [`crate::core::verp`]) and hands what they report to
//! [`crate::core::feedback`], the same code path as the SNS receiver.
//!
//! It is not a mail server: it accepts only recipients whose signed token names an email this
//! server sent (anything else, other domains included, is refused at RCPT, so it relays nothing),
//! keeps nothing it receives, caps every message (`max_message_bytes`), every line (4 KiB, the
//! protocol parser's), every session's lines (junk counts), its silence (`idle_secs`) and its
//! length (`session_secs`), and the connections served at once (`max_connections`) and from one
//! client (`max_connections_per_peer`), so no one client can hold the listener (issue 29). The
//! SMTP syntax is `smtp-proto`'s; the reports are mail-parser's ([`crate::core::reports`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use smtp_proto::request::receiver::{DataReceiver, DummyDataReceiver, RequestReceiver};
use smtp_proto::{Error as SmtpError, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use crate::clock;
use crate::core::Error as CoreError;
use crate::core::{feedback, reports, verp};
use crate::db::emails;
use crate::state::AppState;

/// A session's most lines (commands, and junk: every line counts).
const MAX_COMMANDS: usize = 100;
/// Most recipients of one message.
const MAX_RECIPIENTS: usize = 20;

/// Starts the listener on `listener`; it ends once `stopped` turns true.
pub fn start(state: AppState, listener: TcpListener, mut stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let config = &state.config.bounces;
        let permits = Arc::new(Semaphore::new(config.max_connections.max(1) as usize));
        let peers =
            Arc::new(Peers { open: Mutex::new(HashMap::new()), cap: config.max_connections_per_peer.max(1) });
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, peer)) = accepted else { continue };
                    // Full, for everyone or for this client: a polite temporary refusal, and the
                    // sender tries again later.
                    let Some(turn) = peers.clone().enter(peer.ip()) else {
                        refuse(stream, b"421 4.7.0 too many connections from your address, try again later\r\n");
                        continue;
                    };
                    let Ok(permit) = permits.clone().try_acquire_owned() else {
                        refuse(stream, b"421 4.3.2 too many connections, try again later\r\n");
                        continue;
                    };
                    let state = state.clone();
                    tokio::spawn(async move {
                        let (_permit, _turn) = (permit, turn);
                        if let Err(e) = session(&state, stream).await {
                            tracing::debug!(%peer, "bounce listener session ended: {e}");
                        }
                    });
                }
                _ = stopped.changed() => break,
            }
        }
    })
}

/// Tells a connection it cannot be served now, and closes it (at most a second's wait).
fn refuse(mut stream: TcpStream, reply: &'static [u8]) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(reply)).await;
    });
}

/// The sessions open per client ([`crate::core::peers`]), each client at most `cap`.
struct Peers {
    open: Mutex<HashMap<String, u32>>,
    cap: u32,
}

/// A client's open session, counted until dropped.
struct PeerTurn {
    peers: Arc<Peers>,
    client: String,
}

impl Peers {
    fn enter(self: Arc<Self>, ip: IpAddr) -> Option<PeerTurn> {
        let client = crate::core::peers::client_of(ip);
        let mut open = self.open.lock().ok()?;
        let count = open.entry(client.clone()).or_default();
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        drop(open);
        Some(PeerTurn { peers: self, client })
    }
}

impl Drop for PeerTurn {
    fn drop(&mut self) {
        if let Ok(mut open) = self.peers.open.lock()
            && let Some(count) = open.get_mut(&self.client)
        {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

/// What a session is reading: commands, or a message's data (kept, or thrown away when too big).
enum Reading {
    Commands,
    Data(DataReceiver, Vec<u8>),
    Discard(DummyDataReceiver),
}

async fn session(state: &AppState, mut stream: TcpStream) -> std::io::Result<()> {
    let config = &state.config.bounces;
    let Some(domain) = config.verp_domain().map(str::to_string) else { return Ok(()) };
    let max = config.max_message_bytes as usize;
    stream.write_all(format!("220 {domain} Tidings bounce listener\r\n").as_bytes()).await?;
    let mut commands = RequestReceiver::default();
    let mut reading = Reading::Commands;
    let mut recipients: Vec<String> = Vec::new();
    let mut sender = false;
    let mut count = 0;
    let mut buf = vec![0u8; 8192];
    let idle = Duration::from_secs(config.idle_secs.into());
    let ends = tokio::time::Instant::now() + Duration::from_secs(config.session_secs.into());
    loop {
        let left = ends.saturating_duration_since(tokio::time::Instant::now());
        let n = match tokio::time::timeout(idle.min(left), stream.read(&mut buf)).await {
            Ok(read) => read?,
            Err(_) if left <= idle => {
                stream.write_all(b"421 4.4.2 session too long\r\n").await?;
                return Ok(());
            }
            Err(_) => {
                stream.write_all(b"421 4.4.2 idle for too long\r\n").await?;
                return Ok(());
            }
        };
        if n == 0 {
            return Ok(());
        }
        let mut bytes = buf[..n].iter();
        loop {
            match &mut reading {
                Reading::Data(receiver, data) => {
                    let done = receiver.ingest(&mut bytes, data);
                    let too_big = data.len() > max;
                    if too_big && !done {
                        // Too big: read the rest without keeping it, then refuse it.
                        reading = Reading::Discard(DummyDataReceiver::new_data(&DataReceiver::new()));
                        continue;
                    }
                    if !done {
                        break;
                    }
                    if too_big {
                        reading = Reading::Commands;
                        recipients.clear();
                        sender = false;
                        stream.write_all(b"552 5.3.4 message too big\r\n").await?;
                        continue;
                    }
                    let received = std::mem::take(data);
                    reading = Reading::Commands;
                    let reply = deliver(state, &recipients, received).await;
                    recipients.clear();
                    sender = false;
                    stream.write_all(reply.as_bytes()).await?;
                }
                Reading::Discard(receiver) => {
                    if !receiver.ingest(&mut bytes) {
                        break;
                    }
                    reading = Reading::Commands;
                    recipients.clear();
                    sender = false;
                    stream.write_all(b"552 5.3.4 message too big\r\n").await?;
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
                    if count > MAX_COMMANDS {
                        stream.write_all(b"421 4.7.0 too many commands\r\n").await?;
                        return Ok(());
                    }
                    let request = match request {
                        Ok(request) => request,
                        Err(SmtpError::ResponseTooLong) => {
                            stream.write_all(b"500 5.5.2 line too long\r\n").await?;
                            continue;
                        }
                        Err(_) => {
                            stream.write_all(b"500 5.5.2 syntax error\r\n").await?;
                            continue;
                        }
                    };
                    let reply = match request {
                        Request::Ehlo { .. } => {
                            format!("250-{domain}\r\n250-SIZE {max}\r\n250-8BITMIME\r\n250 PIPELINING\r\n")
                        }
                        Request::Helo { .. } => format!("250 {domain}\r\n"),
                        Request::Mail { from } => {
                            if from.size > max {
                                "552 5.3.4 message too big\r\n".to_string()
                            } else {
                                sender = true;
                                recipients.clear();
                                "250 2.1.0 ok\r\n".to_string()
                            }
                        }
                        Request::Rcpt { to } => {
                            if !sender {
                                "503 5.5.1 MAIL first\r\n".to_string()
                            } else if recipients.len() >= MAX_RECIPIENTS {
                                "452 4.5.3 too many recipients\r\n".to_string()
                            } else if !to
                                .address
                                .rsplit_once('@')
                                .is_some_and(|(_, d)| d.eq_ignore_ascii_case(&domain))
                            {
                                "550 5.7.1 relaying denied\r\n".to_string()
                            } else {
                                match verp::email_of(&state.secrets.link, &to.address, &domain) {
                                    Some(email) => {
                                        recipients.push(email);
                                        "250 2.1.5 ok\r\n".to_string()
                                    }
                                    None => "550 5.1.1 no such mailbox\r\n".to_string(),
                                }
                            }
                        }
                        Request::Data => {
                            if recipients.is_empty() {
                                "503 5.5.1 RCPT first\r\n".to_string()
                            } else {
                                reading = Reading::Data(DataReceiver::new(), Vec::new());
                                "354 end with <CRLF>.<CRLF>\r\n".to_string()
                            }
                        }
                        Request::Rset => {
                            sender = false;
                            recipients.clear();
                            "250 2.0.0 ok\r\n".to_string()
                        }
                        Request::Noop { .. } => "250 2.0.0 ok\r\n".to_string(),
                        Request::Quit => {
                            stream.write_all(b"221 2.0.0 bye\r\n").await?;
                            return Ok(());
                        }
                        _ => "502 5.5.1 not implemented\r\n".to_string(),
                    };
                    stream.write_all(reply.as_bytes()).await?;
                }
            }
        }
    }
}

/// Applies a received report to the emails its recipients name; the SMTP reply.
async fn deliver(state: &AppState, recipients: &[String], raw: Vec<u8>) -> String {
    // Parsing off the executor.
    let Ok(Some(report)) = crate::core::blocking::blocking(move || reports::read(&raw)).await else {
        // Not a report we act on (an auto-reply, say): taken and dropped, so it is not retried.
        return "250 2.0.0 accepted\r\n".into();
    };
    let (ids, reputation) = (recipients.to_vec(), state.config.reputation.clone());
    let applied = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            for id in &ids {
                if let Some(email) = emails::get(tx, id)? {
                    feedback::apply(tx, &email, &report, &reputation, now)?;
                }
            }
            Ok::<_, CoreError>(())
        })
        .await;
    match applied {
        Ok(()) => "250 2.0.0 report recorded\r\n".into(),
        Err(e) => {
            tracing::error!("could not record a bounce report: {e}");
            "451 4.3.0 try again later\r\n".into()
        }
    }
}
