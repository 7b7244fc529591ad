//! The bounce listener (`[bounces] listen`, appliance.md §12): the SMTP server's role that takes
//! bounces and complaints addressed to the envelope senders mail leaves with
//! (`b-<token>@<[bounces] domain>`, [`crate::core::verp`]) and hands what they report to
//! [`crate::core::feedback`], the same code path as the SNS receiver.
//!
//! It is not a mail server: it accepts only recipients whose signed token names an email this
//! server sent (anything else, other domains included, is refused at RCPT, so it relays nothing)
//! and keeps nothing it receives. The reports are mail-parser's ([`crate::core::reports`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::session::{Client, Limits, Reply, Role, not_kept, reply};
use super::{Connections, Tls, start as serve};
use crate::clock;
use crate::core::Error as CoreError;
use crate::core::{feedback, reports, verp};
use crate::db::emails;
use crate::state::AppState;

/// A session's most lines (commands, and junk: every line counts).
const MAX_COMMANDS: usize = 100;
/// Most recipients of one report.
const MAX_RECIPIENTS: usize = 20;

/// Starts the listener on `listener`; it ends once `stopped` turns true. Off (it ends at once)
/// without a `[bounces] domain`.
pub fn start(state: AppState, listener: TcpListener, stopped: watch::Receiver<bool>) -> JoinHandle<()> {
    let config = state.config.bounces.clone();
    let Some(domain) = config.verp_domain().map(str::to_string) else { return tokio::spawn(async {}) };
    let connections = Connections { max: config.max_connections, per_peer: config.max_connections_per_peer };
    let limits = Limits {
        max_message_bytes: config.max_message_bytes as usize,
        max_commands: MAX_COMMANDS,
        max_recipients: MAX_RECIPIENTS,
        idle: Duration::from_secs(config.idle_secs.into()),
        session: Duration::from_secs(config.session_secs.into()),
        budget: state.bodies.clone(),
    };
    serve(Arc::new(Bounces { state, domain }), listener, connections, limits, Tls::Off, stopped)
}

/// The role: reports for the emails that VERP addresses of `domain` name.
struct Bounces {
    state: AppState,
    domain: String,
}

impl Role for Bounces {
    type Principal = ();
    /// The id of the email a recipient address names.
    type Recipient = String;

    fn hostname(&self) -> &str {
        &self.domain
    }

    fn banner(&self) -> &str {
        "Tidings bounce listener"
    }

    async fn rcpt(&self, _who: Option<&()>, _client: &Client, to: &str) -> Result<String, Reply> {
        if !to.rsplit_once('@').is_some_and(|(_, d)| d.eq_ignore_ascii_case(&self.domain)) {
            return Err(reply(550, "5.7.1", "relaying denied"));
        }
        verp::email_of(&self.state.secrets.link, to, &self.domain)
            .ok_or_else(|| reply(550, "5.1.1", "no such mailbox"))
    }

    /// Applies a received report to the emails its recipients name.
    async fn deliver(
        &self,
        _who: Option<&()>,
        _client: &Client,
        _from: &str,
        to: Vec<String>,
        raw: Vec<u8>,
    ) -> Reply {
        record_reports(&self.state, to, raw).await
    }
}

/// Applies a received report to the emails `to` (ids named by VERP addresses); a message that is
/// no report is taken and dropped. Also what the inbound listener does with mail for the
/// `[bounces] domain`.
pub(super) async fn record_reports(state: &AppState, to: Vec<String>, raw: Vec<u8>) -> Reply {
    // Parsing off the executor.
    let Ok(Some(report)) = crate::core::blocking::blocking(move || reports::read(&raw)).await else {
        // Not a report we act on (an auto-reply, say): taken and dropped, so it is not retried.
        return reply(250, "2.0.0", "accepted");
    };
    let reputation = state.config.reputation.clone();
    let applied = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            for id in &to {
                if let Some(email) = emails::get(tx, id)? {
                    feedback::apply(tx, &email, &report, &reputation, now)?;
                }
            }
            Ok::<_, CoreError>(())
        })
        .await;
    match applied {
        Ok(()) => reply(250, "2.0.0", "report recorded"),
        Err(e) => not_kept(&e),
    }
}
