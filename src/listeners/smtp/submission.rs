//! The submission listener (`[submission]`, issue 31): the SMTP server's role that other apps
//! send through (Gitea, Ghost, a cron job's `sendmail`). A client signs in with an SMTP
//! credential (or any username and the project's secret key) after STARTTLS, or on the
//! implicit-TLS port; what it submits becomes what `/v1/send` would make of it
//! ([`crate::core::submission`]). 250 is answered only once the message is committed.
//!
//! A project holds at most `max_sessions_per_project` signed-in sessions at once, whichever
//! addresses they come from: past it a sign-in is told 421 and the connection closed, so one
//! tenant's apps cannot hold every connection the listener serves.
//!
//! Replies: 535 for a wrong credential (421 and the connection closed once its account or its
//! address has failed too often, as a dashboard sign-in is limited); 550 5.7.1 for a sender
//! domain the project has not verified (or the credential may not use); 452 while the project's
//! rate or monthly cap refuses (the app tries again later); 552 above the size cap; 451 when the
//! server could not keep the message.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::session::{Client, Limits, Reply, Role, not_kept, reply};
use super::slots::{Slot, Slots};
use super::{Connections, Tls, start as serve};
use crate::clock;
use crate::core::Error as CoreError;
use crate::core::error::{Forbidden, Limit};
use crate::core::smtp_credentials::{self, Submitter};
use crate::core::submission;
use crate::state::AppState;

/// Serves submission on `listener` (STARTTLS or implicit TLS, as `tls` says).
pub fn start(
    state: AppState,
    listener: TcpListener,
    tls: Tls,
    stopped: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let config = &state.config.submission;
    let connections = Connections { max: config.max_connections, per_peer: config.max_connections_per_peer };
    let limits = Limits {
        max_message_bytes: config.max_message_bytes as usize,
        max_commands: config.max_commands as usize,
        max_recipients: config.max_recipients as usize,
        idle: Duration::from_secs(config.idle_secs.into()),
        session: Duration::from_secs(config.session_secs.into()),
        budget: state.bodies.clone(),
    };
    let hostname = config.host(&state.config.public_url());
    let plaintext = config.allow_plaintext_auth;
    let sessions = Slots::new(config.max_sessions_per_project);
    serve(
        Arc::new(Submission { state, hostname, plaintext, sessions }),
        listener,
        connections,
        limits,
        tls,
        stopped,
    )
}

struct Submission {
    state: AppState,
    hostname: String,
    plaintext: bool,
    /// The signed-in sessions of each project.
    sessions: Arc<Slots>,
}

/// A signed-in client, holding one of its project's sessions while it is connected.
struct SignedIn {
    submitter: Submitter,
    _session: Slot,
}

impl Role for Submission {
    type Principal = SignedIn;
    /// The recipient's address, normalised.
    type Recipient = String;

    fn hostname(&self) -> &str {
        &self.hostname
    }

    fn banner(&self) -> &str {
        "Tidings submission"
    }

    fn requires_auth(&self) -> bool {
        true
    }

    fn plaintext_auth(&self) -> bool {
        self.plaintext
    }

    async fn authenticate(
        &self,
        peer: IpAddr,
        username: String,
        password: String,
    ) -> Result<SignedIn, Reply> {
        let attempts = &self.state.attempts;
        let account = format!("smtp:{username}");
        let _turn = attempts.turn(Some(&account), Some(peer)).await;
        if attempts.check(Some(&account), Some(peer)).is_err() {
            return Err(reply(421, "4.7.0", "too many failed sign-ins; try again later"));
        }
        let signed_in = self
            .state
            .db
            .write(move |tx| smtp_credentials::sign_in(tx, &username, &password, clock::now_ms()))
            .await;
        match signed_in {
            Ok(Some(submitter)) => match self.sessions.enter(submitter.project.id.to_string()) {
                Some(session) => Ok(SignedIn { submitter, _session: session }),
                None => {
                    Err(reply(421, "4.7.0", "too many sessions of this project at once; try again later"))
                }
            },
            Ok(None) => {
                attempts.failed(Some(&account), Some(peer));
                Err(reply(535, "5.7.8", "authentication failed"))
            }
            Err(e) => {
                tracing::error!("could not check an SMTP sign-in: {e}");
                Err(reply(454, "4.7.0", "temporary authentication failure"))
            }
        }
    }

    async fn rcpt(&self, _who: Option<&SignedIn>, _client: &Client, to: &str) -> Result<String, Reply> {
        crate::core::email::normalize(to).map_err(|why| reply(553, "5.1.3", &format!("the address {why}")))
    }

    async fn deliver(
        &self,
        who: Option<&SignedIn>,
        _client: &Client,
        _from: &str,
        to: Vec<String>,
        data: Vec<u8>,
    ) -> Reply {
        let Some(who) = who.map(|w| w.submitter.clone()) else {
            return reply(530, "5.7.0", "authentication required");
        };
        if self.state.limiter.check(&who.project.id).is_err() {
            return reply(452, "4.7.0", "the project's rate limit is reached; try again shortly");
        }
        let read = crate::core::blocking::blocking(move || submission::read(&data)).await;
        let message = match read {
            Ok(Ok(message)) => message,
            Ok(Err(e)) => return refused(&e),
            Err(e) => return refused(&e),
        };
        let submitted =
            self.state.db.write(move |tx| submission::submit(tx, &who, &to, message, clock::now_ms())).await;
        match submitted {
            Ok(queued) => {
                let new = queued.iter().filter(|q| q.email_id.is_some()).count();
                reply(250, "2.0.0", &format!("queued for {new} of {} recipients", queued.len()))
            }
            Err(e) => refused(&e),
        }
    }
}

/// The SMTP reply for a refused message: permanent for what the app must change, temporary for
/// what passes.
fn refused(e: &CoreError) -> Reply {
    match e {
        CoreError::Forbidden(Forbidden::UnverifiedSender { domain, .. }) => {
            reply(550, "5.7.1", &format!("the sender domain {domain} is not verified in this project"))
        }
        CoreError::Forbidden(denied) => reply(550, "5.7.1", &denied.to_string()),
        CoreError::OverLimit(Limit::Billing { .. }) | CoreError::OverLimit(Limit::Rate { .. }) => {
            reply(452, "4.3.1", &e.to_string())
        }
        CoreError::OverLimit(Limit::Storage) => not_kept(e),
        CoreError::OverLimit(_) => reply(552, "5.3.4", &e.to_string()),
        CoreError::Invalid(errors) => reply(550, "5.6.0", &submission::reason(errors)),
        CoreError::Malformed(why) => reply(550, "5.6.0", why),
        other => not_kept(other),
    }
}
