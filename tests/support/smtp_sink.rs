//! An SMTP sink on loopback for tests and benchmarks: it accepts messages (plain SMTP, pooled
//! connections welcome), keeps them (or, started with [`SmtpSink::counting`], only counts them),
//! and can be told to refuse the next ones with a temporary (451) or permanent (550) reply.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A message the sink accepted.
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    pub data: Vec<u8>,
}

/// The answer to the end of a message's DATA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reply {
    Accept,
    Temporary,
    Permanent,
}

#[derive(Default)]
struct Shared {
    /// Count messages without keeping them (benchmarks of a million messages).
    counting: bool,
    accepted: std::sync::atomic::AtomicUsize,
    received: Mutex<Vec<Received>>,
    arrived: Condvar,
    script: Mutex<VecDeque<Reply>>,
    refused: Mutex<usize>,
    /// Connections served at once; beyond it, new ones are greeted with 421 and closed.
    connection_limit: Option<usize>,
    connections: std::sync::atomic::AtomicUsize,
    turned_away: std::sync::atomic::AtomicUsize,
    /// Recipient domains whose next messages are deferred (451), as a receiving provider
    /// passed on by a relay would be, and how many more.
    deferring: Mutex<std::collections::HashMap<String, usize>>,
}

pub struct SmtpSink {
    pub port: u16,
    shared: Arc<Shared>,
}

impl SmtpSink {
    pub fn start() -> SmtpSink {
        Self::spawn(Shared::default())
    }

    /// A sink that accepts and counts messages but keeps none of them.
    pub fn counting() -> SmtpSink {
        Self::spawn(Shared { counting: true, ..Shared::default() })
    }

    /// A sink that serves at most `limit` connections at once, as relays do: a connection
    /// beyond it is greeted `421 too many connections` and closed.
    pub fn with_connection_limit(limit: usize) -> SmtpSink {
        Self::spawn(Shared { connection_limit: Some(limit), ..Shared::default() })
    }

    /// A sink on a given port (a port another sink or test left free).
    pub fn on_port(port: u16) -> SmtpSink {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        Self::serve_on(listener, Shared::default())
    }

    /// Connections turned away by the connection limit.
    pub fn turned_away(&self) -> usize {
        self.shared.turned_away.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many messages were accepted so far.
    pub fn accepted(&self) -> usize {
        self.shared.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn spawn(shared: Shared) -> SmtpSink {
        Self::serve_on(TcpListener::bind("127.0.0.1:0").unwrap(), shared)
    }

    fn serve_on(listener: TcpListener, shared: Shared) -> SmtpSink {
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(shared);
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = accepting.clone();
                std::thread::spawn(move || {
                    use std::sync::atomic::Ordering::SeqCst;
                    let open = shared.connections.fetch_add(1, SeqCst) + 1;
                    if shared.connection_limit.is_some_and(|limit| open > limit) {
                        shared.turned_away.fetch_add(1, SeqCst);
                        let _ = (&stream).write_all(b"421 4.7.0 too many connections\r\n");
                    } else {
                        let _ = serve(stream, &shared);
                    }
                    shared.connections.fetch_sub(1, SeqCst);
                });
            }
        });
        SmtpSink { port, shared }
    }

    /// The replies to give the next messages, in order; afterwards messages are accepted.
    pub fn script(&self, replies: &[Reply]) {
        self.shared.script.lock().unwrap().extend(replies.iter().copied());
    }

    /// Defers (451) the next `times` messages to recipients at `domain`, whatever the script.
    pub fn defer_domain(&self, domain: &str, times: usize) {
        self.shared.deferring.lock().unwrap().insert(domain.to_ascii_lowercase(), times);
    }

    pub fn messages(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// How many messages were refused so far.
    pub fn refused(&self) -> usize {
        *self.shared.refused.lock().unwrap()
    }

    /// Waits until `n` messages arrived (or the timeout passed) and returns them.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let deadline = Instant::now() + timeout;
        let mut received = self.shared.received.lock().unwrap();
        while received.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            received = self.shared.arrived.wait_timeout(received, left).unwrap().0;
        }
        received.clone()
    }
}

fn address(argument: &str) -> String {
    argument
        .split_once(':')
        .map(|(_, a)| a)
        .unwrap_or("")
        .trim()
        .trim_start_matches('<')
        .split('>')
        .next()
        .unwrap_or("")
        .to_string()
}

fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    out.write_all(b"220 sink.test ESMTP ready\r\n")?;
    let (mut from, mut to) = (String::new(), Vec::new());
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let command = line.trim_end().to_string();
        let verb = command.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" => out.write_all(b"250-sink.test\r\n250-8BITMIME\r\n250 SMTPUTF8\r\n")?,
            "HELO" | "NOOP" => out.write_all(b"250 ok\r\n")?,
            "RSET" => {
                from.clear();
                to.clear();
                out.write_all(b"250 ok\r\n")?;
            }
            "MAIL" => {
                from = address(&command);
                to.clear();
                out.write_all(b"250 ok\r\n")?;
            }
            "RCPT" => {
                to.push(address(&command));
                out.write_all(b"250 ok\r\n")?;
            }
            "DATA" => {
                out.write_all(b"354 go ahead\r\n")?;
                let mut data = Vec::new();
                loop {
                    let mut raw = Vec::new();
                    if reader.read_until(b'\n', &mut raw)? == 0 {
                        return Ok(());
                    }
                    if raw == b".\r\n" || raw == b".\n" {
                        break;
                    }
                    let body = if raw.starts_with(b"..") { &raw[1..] } else { &raw[..] };
                    data.extend_from_slice(body);
                }
                let deferred = to.iter().any(|t| {
                    let domain = t.rsplit_once('@').map_or("", |(_, d)| d).to_ascii_lowercase();
                    match shared.deferring.lock().unwrap().get_mut(&domain) {
                        Some(left) if *left > 0 => {
                            *left -= 1;
                            true
                        }
                        _ => false,
                    }
                });
                let reply = if deferred {
                    Reply::Temporary
                } else {
                    shared.script.lock().unwrap().pop_front().unwrap_or(Reply::Accept)
                };
                match reply {
                    Reply::Accept if shared.counting => {
                        shared.accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        out.write_all(b"250 2.0.0 queued\r\n")?;
                    }
                    Reply::Accept => {
                        shared.accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        shared.received.lock().unwrap().push(Received {
                            from: from.clone(),
                            to: to.clone(),
                            data,
                        });
                        shared.arrived.notify_all();
                        out.write_all(b"250 2.0.0 queued\r\n")?;
                    }
                    Reply::Temporary => {
                        *shared.refused.lock().unwrap() += 1;
                        out.write_all(b"451 4.3.0 try again later\r\n")?;
                    }
                    Reply::Permanent => {
                        *shared.refused.lock().unwrap() += 1;
                        out.write_all(b"550 5.1.1 mailbox unavailable\r\n")?;
                    }
                }
            }
            "QUIT" => {
                out.write_all(b"221 bye\r\n")?;
                return Ok(());
            }
            _ => out.write_all(b"502 command not implemented\r\n")?,
        }
    }
}
