//! Tidings' SMTP server: one server, a role per listener. The bounce listener (`[bounces]`) takes
//! bounces and complaints for mail sent ([`bounces`]); the submission listeners take mail other
//! apps send ([`submission`]); the inbound listener receives mail for the projects' inbound
//! domains ([`inbound`]).
//!
//! Every listener keeps the same caps, so no one client can hold it (issue 29): the connections
//! served at once and from one client (an IPv4 address or an IPv6 /64, [`crate::core::peers`]),
//! and in each session its lines, silence, length, recipients and message size
//! ([`session::Limits`]). Past a connection cap a client gets a 421 and the connection is closed
//! within a second. The protocol is [`session`]'s; the SMTP syntax is `smtp-proto`'s.

pub mod bounces;
pub mod conn;
pub mod inbound;
pub mod session;
pub mod slots;
pub mod submission;
pub mod tls;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use conn::Conn;
use session::{Limits, Role};
use slots::Slots;

/// How many connections a listener serves: at once, and from one client.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    pub max: u32,
    pub per_peer: u32,
}

/// Whether and how a listener speaks TLS.
#[derive(Clone)]
pub enum Tls {
    /// Plain text only (the bounce listener: relays deliver to it as they do to any MX).
    Off,
    /// Plain text, upgraded on STARTTLS (port 587).
    StartTls(Arc<tls::Certificates>),
    /// TLS from the first byte (port 465).
    Implicit(Arc<tls::Certificates>),
}

/// Serves `role` on `listener` until `stopped` turns true.
pub fn start<R: Role>(
    role: Arc<R>,
    listener: TcpListener,
    connections: Connections,
    limits: Limits,
    tls: Tls,
    mut stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let limits = Arc::new(limits);
    tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(connections.max.max(1) as usize));
        let peers = Slots::new(connections.per_peer);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, peer)) = accepted else { continue };
                    // Full, for everyone or for this client: a polite temporary refusal, and the
                    // sender tries again later.
                    let Some(turn) = peers.enter(crate::core::peers::client_of(peer.ip())) else {
                        refuse(stream, b"421 4.7.0 too many connections from your address, try again later\r\n");
                        continue;
                    };
                    let Ok(permit) = permits.clone().try_acquire_owned() else {
                        refuse(stream, b"421 4.3.2 too many connections, try again later\r\n");
                        continue;
                    };
                    let (role, limits, tls) = (role.clone(), limits.clone(), tls.clone());
                    tokio::spawn(async move {
                        let (_permit, _turn) = (permit, turn);
                        if let Err(e) = serve(&*role, &limits, tls, stream, peer.ip()).await {
                            tracing::debug!(%peer, "SMTP session ended: {e}");
                        }
                    });
                }
                _ = stopped.changed() => break,
            }
        }
    })
}

/// One connection: its TLS handshake first on an implicit-TLS listener, then the session.
async fn serve<R: Role>(
    role: &R,
    limits: &Limits,
    tls: Tls,
    stream: TcpStream,
    peer: IpAddr,
) -> std::io::Result<()> {
    let (conn, starttls) = match tls {
        Tls::Off => (Conn::Plain(stream), None),
        Tls::StartTls(certificates) => (Conn::Plain(stream), Some(certificates.acceptor())),
        Tls::Implicit(certificates) => {
            let acceptor = certificates.acceptor();
            match tokio::time::timeout(limits.idle, Conn::Plain(stream).into_tls(&acceptor)).await {
                Ok(conn) => (conn?, None),
                Err(_) => return Ok(()),
            }
        }
    };
    session::run(role, limits, starttls, conn, peer).await
}

/// Tells a connection it cannot be served now, and closes it (at most a second's wait).
fn refuse(mut stream: TcpStream, reply: &'static [u8]) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(reply)).await;
    });
}
