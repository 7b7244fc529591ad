//! The inbound listener (`[inbound] listen`, issue 31): the SMTP server's role that receives
//! mail for the projects' verified inbound domains, as their MX. A project holding
//! `max_bytes_per_project` of received mail gets no more (452 at RCPT) until some expires.
//!
//! A recipient is taken only when a route of a verified domain takes it, so nothing is relayed
//! and nothing is accepted only to bounce later; VERP addresses of the `[bounces] domain` go to
//! the bounce path. Each project may receive `messages_per_minute`, each sending address
//! `messages_per_minute_per_peer` (451 past either: the sender retries). Each message is
//! checked (SPF, DKIM, DMARC), read, and recorded per project ([`receive`]); 250 follows the
//! commit.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::session::{Client, Limits, Reply, Role, not_kept, reply};
use super::{Connections, Tls, bounces, start as serve};
use crate::clock;
use crate::core::Error as CoreError;
use crate::core::inbound::receive::{self, Envelope, Incoming};
use crate::core::inbound::{auth, routes};
use crate::core::limits::ratelimit::{self, ProjectLimiter};
use crate::core::verp;
use crate::db::inbound::{self as rows, Route};
use crate::state::AppState;
use crate::views::inbound::{InboundContent, webhook_payload};

/// Starts the listener on `listener`; it ends once `stopped` turns true.
pub fn start(state: AppState, listener: TcpListener, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    let config = state.config.inbound.clone();
    let connections = Connections { max: config.max_connections, per_peer: config.max_connections_per_peer };
    let limits = Limits {
        max_message_bytes: config.max_message_bytes as usize,
        max_commands: config.max_commands as usize,
        max_recipients: config.max_recipients as usize,
        idle: Duration::from_secs(config.idle_secs.into()),
        session: Duration::from_secs(config.session_secs.into()),
        budget: state.bodies.clone(),
    };
    let hostname = state.config.inbound_host();
    let bounce_domain = state.config.bounces.verp_domain().map(str::to_string);
    let role = Inbound {
        per_project: ratelimit::limiter(config.messages_per_minute),
        per_peer: ratelimit::limiter(config.messages_per_minute_per_peer),
        max_bytes: config.max_bytes_per_project,
        state,
        hostname,
        bounce_domain,
    };
    serve(Arc::new(role), listener, connections, limits, Tls::Off, stopped)
}

struct Inbound {
    state: AppState,
    hostname: String,
    bounce_domain: Option<String>,
    per_project: Arc<dyn ProjectLimiter>,
    per_peer: Arc<dyn ProjectLimiter>,
    /// `max_bytes_per_project`.
    max_bytes: u64,
}

/// A recipient taken.
enum Recipient {
    /// A bounce or complaint for the email of this id.
    Report(String),
    /// An address a route of a project takes.
    Mailbox { address: String, route: Route },
}

impl Role for Inbound {
    type Principal = ();
    type Recipient = Recipient;

    fn hostname(&self) -> &str {
        &self.hostname
    }

    fn banner(&self) -> &str {
        "Tidings inbound"
    }

    async fn rcpt(&self, _who: Option<&()>, client: &Client, to: &str) -> Result<Recipient, Reply> {
        let Ok(address) = crate::core::email::normalize(to) else {
            return Err(reply(553, "5.1.3", "not a valid address"));
        };
        let (local, domain) = address.rsplit_once('@').unwrap_or_default();
        if let Some(bounces) = self.bounce_domain.as_deref().filter(|d| d.eq_ignore_ascii_case(domain)) {
            return verp::email_of(&self.state.secrets.link, &address, bounces)
                .map(Recipient::Report)
                .ok_or_else(|| reply(550, "5.1.1", "no such mailbox"));
        }
        if self.per_peer.check(&crate::core::peers::client_of(client.peer)).is_err() {
            return Err(reply(451, "4.7.1", "too many messages from your address; try again later"));
        }
        let (local, domain) = (local.to_string(), domain.to_string());
        let found = self
            .state
            .db
            .run(move |conn| {
                let Some(inbound) = rows::verified(conn, &domain)? else { return Ok::<_, CoreError>(None) };
                let route = rows::route_for(conn, &inbound.id, &routes::candidates(&local))?;
                let held = rows::bytes_held(conn, &inbound.project_id)?;
                Ok(Some(route.map(|r| (r, held))))
            })
            .await;
        match found {
            Ok(Some(Some((route, held)))) => {
                if held >= self.max_bytes as i64 {
                    return Err(reply(452, "4.2.2", "this mailbox is over its quota; try again later"));
                }
                if self.per_project.check(&route.project_id).is_err() {
                    return Err(reply(
                        451,
                        "4.7.1",
                        "this domain receives too much mail right now; try again later",
                    ));
                }
                Ok(Recipient::Mailbox { address, route })
            }
            Ok(Some(None)) => Err(reply(550, "5.1.1", "no such mailbox here")),
            Ok(None) => Err(reply(550, "5.7.1", "relaying denied: this server is not the MX of that domain")),
            Err(e) => {
                tracing::error!("could not look up an inbound route: {e}");
                Err(reply(451, "4.3.0", "try again later"))
            }
        }
    }

    async fn deliver(
        &self,
        _who: Option<&()>,
        client: &Client,
        from: &str,
        to: Vec<Recipient>,
        raw: Vec<u8>,
    ) -> Reply {
        let mut reports = Vec::new();
        let mut mailboxes: Vec<(String, Route)> = Vec::new();
        for recipient in to {
            match recipient {
                Recipient::Report(id) => reports.push(id),
                Recipient::Mailbox { address, route } => mailboxes.push((address, route)),
            }
        }
        if mailboxes.is_empty() {
            return bounces::record_reports(&self.state, reports, raw).await;
        }
        if !reports.is_empty() {
            // Rare (a report and a person in one transaction): the report is read from a copy.
            let answer = bounces::record_reports(&self.state, reports, raw.clone()).await;
            if !answer.starts_with('2') {
                return answer;
            }
        }
        if receive::looped(&raw) {
            return reply(554, "5.4.6", "routing loop detected: too many Received headers");
        }
        let verdicts =
            auth::check(&self.state.dns, client.peer, &client.helo, from, &self.hostname, &raw).await;
        let envelope = Envelope {
            peer: client.peer.to_string(),
            helo: client.helo.clone(),
            mail_from: from.to_string(),
        };
        let mut projects: Vec<(String, Vec<(String, Route)>)> = Vec::new();
        for (address, route) in mailboxes {
            match projects.iter_mut().find(|(p, _)| *p == route.project_id) {
                Some((_, list)) => list.push((address, route)),
                None => projects.push((route.project_id.clone(), vec![(address, route)])),
            }
        }
        let base = self.state.config.public_url();
        // Read once, off the executor, for every project the message is for; the last project
        // takes the bytes, others a copy. A webhook's content is serialised here, not on the
        // writer's thread.
        let prepared = crate::core::blocking::blocking(move || {
            let read = crate::mail::read::read(&raw);
            let count = projects.len();
            let mut raw = Some(raw);
            let mut out = Vec::with_capacity(count);
            for (n, (project, recipients)) in projects.into_iter().enumerate() {
                let bytes = if n + 1 == count { raw.take() } else { raw.clone() }.unwrap_or_default();
                let incoming = Incoming {
                    id: crate::db::new_id(),
                    project,
                    recipients,
                    envelope: envelope.clone(),
                    verdicts: verdicts.clone(),
                    read: read.summary(),
                    raw: bytes,
                };
                let content = incoming
                    .posted()
                    .then(|| InboundContent::for_webhook(&read, &incoming.id, &base, incoming.stored()));
                out.push((incoming, content));
            }
            out
        })
        .await;
        let Ok(prepared) = prepared else {
            return reply(451, "4.3.0", "the message could not be read; try again later");
        };
        let retention = crate::core::retention::Policy::defaults(&self.state.config);
        for (incoming, content) in prepared {
            let recorded = self
                .state
                .db
                .write(move |tx| {
                    receive::record(tx, incoming, retention, clock::now_ms(), |message| {
                        webhook_payload(message, content.as_deref().unwrap_or("null"))
                    })
                })
                .await;
            if let Err(e) = recorded {
                return not_kept(&e);
            }
        }
        reply(250, "2.0.0", "received")
    }
}
