//! One delivery attempt's rules, between the worker's claim and its hand-off: what an email
//! needs besides its row, whether it may go out now (the one marketing rule), the message it
//! becomes (rendered, tracked, MIME, DKIM-signed), and how the attempt's end is recorded.
//!
//! A claimed batch reads each email's small parts with it; a large body, attachment set or
//! submitted message is only measured ([`email_parts::Part::Later`]), and read by
//! [`read_left_out`] when the email is sent, once the worker has reserved its memory.

use crate::core::vocabulary::{CampaignStatus, EmailKind, EmailSource};
use std::collections::HashMap;

use super::delivery_windows::Windows;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::consent::may_send;
use super::send::Attachment;
use super::{domains as core_domains, events, links, outbound};
use crate::config::TrackingConfig;
use crate::db::email_parts::{self, Part, RawMessage};
use crate::db::emails::{self, Email};
use crate::db::{Tx, campaigns, contacts, domains, outbox, projects, suppressions, topics};
use crate::mail::dkim::Signers;
use crate::mail::message::{self, Outgoing};
use crate::mail::tracked;

/// Tries of one email before it fails.
pub const MAX_ATTEMPTS: u32 = 5;

/// What happened to one email.
pub enum Outcome {
    Sent {
        subject: String,
        /// In capture mode: the envelope sender a relay would have been given, and the message.
        captured: Option<(String, Vec<u8>)>,
    },
    Retry(String),
    Fail {
        error: String,
        counted: bool,
    },
    /// Throttled or shut down: try again at this time.
    Later(i64),
    /// Held back for its receiving provider or its sender domain's warm-up until `at`, for
    /// `reason` (`rate`, `backoff` or `warmup`), without using up one of its tries.
    Held {
        at: i64,
        reason: &'static str,
    },
    /// The project is being reset or deleted: the row goes, unsent, without an event.
    Discard,
}

/// What one email needs besides its row.
pub struct Context {
    pub contact: Option<contacts::Contact>,
    /// For MARKETING mail: why the contact is suppressed, if it is.
    pub suppressed: Option<String>,
    /// Why the project's suppression list keeps this mail from its recipient, if it does.
    pub listed: Option<String>,
    pub domain: Option<Arc<domains::Domain>>,
    /// For campaign mail: the campaign, `None` when it was deleted.
    pub campaign: Option<Option<Arc<campaigns::Campaign>>>,
    /// For MARKETING mail of a campaign that targets a topic: the topic's name when the contact
    /// is no longer subscribed to it.
    pub left_topic: Option<String>,
    /// The request's attachments (`None` for other mail, or once they are gone).
    pub attachments: Option<Arc<Part<String>>>,
    /// A submitted message as written (`None` for other mail, or once it is gone).
    pub raw: Option<Arc<Part<RawMessage>>>,
    /// The project is being reset or deleted.
    pub wiping: bool,
    /// Sent from the project's sandbox domain while mail is captured (`core::sandbox`): it has
    /// no row and no key, and goes unsigned into the outbox.
    pub sandboxed: bool,
    /// For MARKETING mail in the project's quiet hours or on a quiet day where its contact
    /// lives: when they end.
    pub quiet_until: Option<i64>,
    /// `https://<the project's verified tracking domain>`: where its mailed links point
    /// instead of the server's URL.
    pub link_base: Option<Arc<String>>,
}

/// Reads what each email of a batch needs, each campaign, domain, attachment set and project
/// read once for the batch; a large attachment set or submitted message is only measured.
pub fn contexts(conn: &Tx, batch: Vec<Email>) -> crate::db::Result<Vec<(Email, Context)>> {
    let mut domains_seen = HashMap::new();
    let mut campaigns_seen = HashMap::new();
    let mut variants_seen = HashMap::new();
    let mut attachments_seen = HashMap::new();
    let mut raw_seen = HashMap::new();
    let mut topics_seen = HashMap::new();
    let mut wiping_seen = HashMap::new();
    let mut windows_seen = HashMap::new();
    let mut link_bases_seen = HashMap::new();
    let mut captured = None;
    let now = crate::clock::now_ms();
    let mut out = Vec::with_capacity(batch.len());
    for email in batch {
        let project = email.project_id.as_str();
        let contact = match &email.contact_id {
            Some(id) => contacts::by_id(conn, project, id)?,
            None => None,
        };
        let suppressed = match (&contact, email.kind.as_str()) {
            (Some(c), kind) if kind == EmailKind::Marketing => {
                suppressions::get(conn, &c.id)?.map(|s| s.reason)
            }
            _ => None,
        };
        let listed = if project == projects::SYSTEM || email.source_type == EmailSource::Test {
            None
        } else {
            super::suppressions::blocks(conn, project, &email.to_email, &email.kind)?
        };
        let from_domain = email.from_email.rsplit_once('@').map(|(_, d)| d).unwrap_or_default();
        let key = (project.to_string(), from_domain.to_string());
        let domain = read_once(&mut domains_seen, key, || {
            let names = core_domains::candidates(from_domain);
            if project == projects::SYSTEM {
                domains::verified_anywhere(conn, &names)
            } else {
                domains::for_signing(conn, project, &names)
            }
        })?;
        let campaign = match email.campaign_id.as_ref().filter(|_| email.source_type == EmailSource::Campaign)
        {
            None => None,
            Some(id) => {
                let own = read_once(&mut campaigns_seen, id.clone(), || campaigns::by_id(conn, id))?;
                // With an A/B test: as the email's variant (or the winner) shows it.
                Some(match own {
                    Some(c) if c.ab.is_some() => {
                        read_once(&mut variants_seen, (id.clone(), email.variant), || {
                            super::ab_variants::as_sent(conn, &c, email.variant)
                        })?
                        .or(Some(c))
                    }
                    own => own,
                })
            }
        };
        // A contact that left the campaign's topic since the audience was taken gets none of it.
        let topic = match (&campaign, &contact) {
            (Some(Some(c)), Some(_)) if email.kind == EmailKind::Marketing => c.topic_id.as_ref(),
            _ => None,
        };
        let left_topic = match (topic, &contact) {
            (Some(id), Some(contact)) => {
                let found = read_once(&mut topics_seen, id.clone(), || topics::get(conn, project, id))?;
                match found {
                    // One key lookup: the contact's choice of this topic, else its default.
                    Some(t) if !topics::choice(conn, &t.id, contact.seq)?.unwrap_or(t.default_opt_in) => {
                        Some(t.name.clone())
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let attachments = match &email.attachment_set {
            None => None,
            Some(id) => read_once(&mut attachments_seen, id.clone(), || {
                email_parts::attachment_set_if_small(conn, id)
            })?,
        };
        let raw = match &email.raw_message {
            None => None,
            Some(id) => read_once(&mut raw_seen, id.clone(), || email_parts::raw_message_if_small(conn, id))?,
        };
        let wiping = match wiping_seen.get(project) {
            Some(wiping) => *wiping,
            None => *wiping_seen.entry(project.to_string()).or_insert(projects::is_wiping(conn, project)?),
        };
        let sandboxed = domain.is_none()
            && from_domain.eq_ignore_ascii_case(&super::sandbox::domain_of(project))
            && match captured {
                Some(known) => known,
                None => *captured.insert(super::sandbox::captured(conn)?),
            };
        let quiet_until = if email.kind == EmailKind::Marketing && email.source_type != EmailSource::Test {
            let windows = read_once(&mut windows_seen, project.to_string(), || {
                crate::db::sending::get(conn, project).map(|s| Some(Windows::of(&s)))
            })?;
            windows.filter(|w| w.has_quiet_time()).and_then(|w| {
                let own = contact.as_ref().and_then(|c| c.data.get(crate::core::data::TIMEZONE)?.as_str());
                Some(w.next_open(&w.zone_of(own), now)).filter(|at| *at > now)
            })
        } else {
            None
        };
        let link_base = read_once(&mut link_bases_seen, project.to_string(), || {
            super::tracking_domains::link_base(conn, project)
        })?;
        let context = Context {
            quiet_until,
            link_base,
            contact,
            suppressed,
            listed,
            domain,
            campaign,
            left_topic,
            attachments,
            raw,
            wiping,
            sandboxed,
        };
        out.push((email, context));
    }
    Ok(out)
}

/// Whether the email may go out now, and with what content (campaign rows take the campaign's
/// subject and body); the outcome to record when it may not.
pub fn check(email: &Email, context: &Context, now: i64) -> Result<Email, Outcome> {
    if context.wiping {
        return Err(Outcome::Discard);
    }
    // Marketing mail waits out the quiet hours where its contact lives (a campaign that is
    // still sending when they begin, a workflow's mail).
    if let Some(at) = context.quiet_until.filter(|at| *at > now) {
        return Err(Outcome::Later(at));
    }
    // A campaign's rows carry no subject or body: the campaign has them.
    let mut email = email.clone();
    match &context.campaign {
        None => {}
        Some(None) => {
            return Err(Outcome::Fail { error: "not sent: the campaign was deleted".into(), counted: false });
        }
        Some(Some(c)) if c.status == CampaignStatus::Cancelled => {
            return Err(Outcome::Fail {
                error: "not sent: the campaign was cancelled".into(),
                counted: false,
            });
        }
        Some(Some(c)) => {
            email.subject = c.subject.clone();
            email.body = c.body.clone();
        }
    }

    // A test send goes to whoever asked for it.
    if email.source_type != EmailSource::Test
        && let Some(contact) = &context.contact
        && let Err(why) = may_send(&email.kind, contact, context.suppressed.as_deref(), now)
    {
        return Err(Outcome::Fail { error: format!("not sent: {why}"), counted: false });
    }
    if let Some(why) = &context.listed {
        return Err(Outcome::Fail { error: format!("not sent: {why}"), counted: false });
    }
    if let Some(topic) = context.left_topic.as_deref().filter(|_| email.source_type != EmailSource::Test) {
        return Err(Outcome::Fail {
            error: format!("not sent: the contact is not subscribed to the topic {topic:?}"),
            counted: false,
        });
    }
    if email.raw_message.is_some() && context.raw.is_none() {
        return Err(no_longer_kept());
    }
    // System mail goes out signed when its domain is verified in some project, else unsigned.
    let system = email.project_id == projects::SYSTEM;
    if context.domain.is_none() && !system && !context.sandboxed {
        return Err(Outcome::Fail {
            error: format!("the sender domain of {} is no longer a domain of the project", email.from_email),
            counted: false,
        });
    }
    Ok(email)
}

/// The failure of an email whose submitted message is gone (its project was reset, say).
fn no_longer_kept() -> Outcome {
    Outcome::Fail { error: "not sent: the submitted message is no longer kept".into(), counted: false }
}

/// The bytes of the email's parts its batch left out, for [`read_left_out`] (0: none).
pub fn left_out_bytes(email: &Email, context: &Context) -> u64 {
    fn later<T>(part: &Option<Arc<Part<T>>>) -> u64 {
        match part.as_deref() {
            Some(Part::Later { bytes }) => *bytes,
            _ => 0,
        }
    }
    email.left_out + later(&context.attachments) + later(&context.raw)
}

/// Reads the parts of `email` its batch left out, as they are now; the caller has reserved
/// their memory ([`left_out_bytes`]). A submitted message gone since fails the email as
/// [`check`] would have; an email gone since is let go.
pub fn read_left_out(
    conn: &Tx,
    mut email: Email,
    mut context: Context,
) -> crate::db::Result<Result<(Email, Context), Outcome>> {
    if email.left_out > 0 {
        let Some((body, attachments)) = email_parts::left_out(conn, &email.id)? else {
            return Ok(Err(Outcome::Discard));
        };
        // A campaign's rows carry no body of their own: [`check`] gave it the campaign's.
        if context.campaign.is_none() {
            email.body = body;
        }
        email.attachments = attachments;
        email.left_out = 0;
    }
    if let (Some(id), Some(Part::Later { .. })) = (&email.attachment_set, context.attachments.as_deref()) {
        context.attachments = email_parts::attachment_set(conn, id)?.map(|a| Arc::new(Part::Read(a)));
    }
    if let (Some(id), Some(Part::Later { .. })) = (&email.raw_message, context.raw.as_deref()) {
        match email_parts::raw_message(conn, id)? {
            Some(message) => context.raw = Some(Arc::new(Part::Read(message))),
            None => return Ok(Err(no_longer_kept())),
        }
    }
    Ok(Ok((email, context)))
}

/// The content of a part read with the batch or by [`read_left_out`].
fn content<T>(part: &Part<T>) -> Result<&T, Outcome> {
    match part {
        Part::Read(content) => Ok(content),
        Part::Later { .. } => Err(not_read()),
    }
}

/// Where the email's links point: its project's verified tracking domain, else the server.
fn link_base<'a>(context: &'a Context, composer: &Composer<'a>) -> &'a str {
    context.link_base.as_deref().map_or(composer.public_url, String::as_str)
}

/// A part left out of the batch reached [`compose`] unread: a fault of the worker, retried.
fn not_read() -> Outcome {
    Outcome::Retry("a large part of the message was not read before it was composed".into())
}

/// Where links in mail point and how they are signed, what is tracked, and the DKIM signers.
pub struct Composer<'a> {
    pub public_url: &'a str,
    pub secret: &'a str,
    pub tracking: &'a TrackingConfig,
    pub signers: &'a Signers,
}

/// The message a checked email becomes: rendered for its contact, with click and open tracking
/// (not in HEADLESS or system mail), its headers, attachments and List-Unsubscribe, as MIME,
/// DKIM-signed when its domain is known. The bytes and the rendered subject; the outcome to
/// record when it cannot be made.
pub fn compose(
    email: &Email,
    context: &Context,
    composer: &Composer<'_>,
) -> Result<(Vec<u8>, String), Outcome> {
    if email.left_out > 0 {
        return Err(not_read());
    }
    let (contact, domain) = (&context.contact, &context.domain);
    let shared_attachments = context.attachments.as_deref().map(content).transpose()?;
    let system = email.project_id == projects::SYSTEM;
    let (public_url, secret) = (link_base(context, composer), composer.secret);
    if let Some(raw) = context.raw.as_deref() {
        let raw = content(raw)?;
        return Ok((
            sign(&submitted(email, context, raw, composer), domain, composer)?,
            email.subject.clone(),
        ));
    }
    let transient: Map<String, Value> = serde_json::from_str(&email.variables).unwrap_or_default();
    // Campaign mail credits its unsubscribes to the email (and so the campaign).
    let credited = (email.source_type == EmailSource::Campaign).then_some(email.id.as_str());
    let base =
        outbound::LinkBase { public_url, secret, email: credited, campaign: email.campaign_id.as_deref() };
    let rendered =
        outbound::render(&email.subject, &email.body, &email.to_email, contact.as_ref(), &transient, &base)
            .map_err(|(part, e)| Outcome::Fail {
            error: format!("the {} could not be rendered: {e}", part.field()),
            counted: false,
        })?;
    let (subject, mut html) = (rendered.subject, rendered.html);
    // A campaign may leave its links as written.
    let campaign_tracks = !matches!(&context.campaign, Some(Some(c)) if !c.track_links);
    if email.kind != EmailKind::Headless && !system {
        if composer.tracking.clicks && campaign_tracks {
            html = links::track_clicks(&html, public_url, secret, &email.id);
        }
        if composer.tracking.opens {
            html = links::add_open_pixel(&html, public_url, secret, &email.id);
        }
    }
    let headers: Map<String, Value> = serde_json::from_str(&email.headers).unwrap_or_default();
    // Attachments stored once for the request (older rows carry their own copy).
    let attachments = email.attachments.as_deref().or(shared_attachments.map(String::as_str));
    let attachments: Vec<Attachment> =
        attachments.and_then(|a| serde_json::from_str(a).ok()).unwrap_or_default();
    let unsubscribe = contact.as_ref().filter(|_| email.kind == EmailKind::Marketing).map(|c| {
        let email = credited.map(str::to_string);
        links::url(public_url, secret, &links::Link::Unsubscribe { contact: c.id.clone(), email })
    });
    let outgoing = Outgoing {
        message_id: email.message_id.clone(),
        from: (email.from_email.clone(), email.from_name.clone()),
        to: (email.to_email.clone(), email.to_name.clone()),
        reply_to: email.reply_to.clone(),
        subject: subject.clone(),
        html,
        headers: headers.into_iter().map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string())).collect(),
        attachments,
        unsubscribe,
    };
    let raw = message::build(&outgoing).map_err(|e| Outcome::Fail { error: e, counted: false })?;
    Ok((sign(&raw, domain, composer)?, subject))
}

/// A submitted message as it goes out: as its app wrote it, its HTML tracked when it asked (and
/// the server tracks), with List-Unsubscribe on top for MARKETING mail.
fn submitted(email: &Email, context: &Context, raw: &RawMessage, composer: &Composer<'_>) -> Vec<u8> {
    let (public_url, secret) = (link_base(context, composer), composer.secret);
    let wants = |what: &str| raw.track.iter().any(|t| t == what);
    let clicks = composer.tracking.clicks && wants("clicks");
    let opens = composer.tracking.opens && wants("opens");
    let body = if email.kind != EmailKind::Headless && (clicks || opens) {
        tracked::rewrite_html(&raw.content, |html| {
            let html = if clicks {
                links::track_clicks(html, public_url, secret, &email.id)
            } else {
                html.to_string()
            };
            if opens { links::add_open_pixel(&html, public_url, secret, &email.id) } else { html }
        })
    } else {
        raw.content.clone()
    };
    let unsubscribe = context.contact.as_ref().filter(|_| email.kind == EmailKind::Marketing).map(|c| {
        let link = links::Link::Unsubscribe { contact: c.id.clone(), email: None };
        links::url(public_url, secret, &link)
    });
    message::with_headers(
        &body,
        &unsubscribe.as_deref().map(message::unsubscribe_headers).unwrap_or_default(),
    )
}

/// The message DKIM-signed for its domain (when the domain is known).
fn sign(
    raw: &[u8],
    domain: &Option<Arc<domains::Domain>>,
    composer: &Composer<'_>,
) -> Result<Vec<u8>, Outcome> {
    match domain {
        Some(domain) => composer
            .signers
            .sign(&domain.domain, &domain.dkim_selector, &domain.dkim_private_key, raw)
            .map_err(|e| Outcome::Fail { error: e, counted: false }),
        None => Ok(raw.to_vec()),
    }
}

/// Records how an attempt ended, in the caller's transaction: sent (with its `email.sent`
/// event, and kept in the outbox when captured), retried later with backoff from
/// `retry_base_secs`, failed (with `email.failed`), released, or discarded.
pub fn record(
    tx: &Tx,
    email: &Email,
    outcome: Outcome,
    retry_base_secs: u64,
    now: i64,
) -> crate::db::Result<()> {
    let base = retry_base_secs;
    match outcome {
        Outcome::Sent { subject, captured } => {
            if emails::mark_sent(tx, &email.id, &subject, email.provider.as_deref(), now)? {
                if let Some((envelope_from, raw)) = captured {
                    outbox::insert(tx, email, (&envelope_from, &subject, &raw), now)?;
                }
                events::emit(
                    tx,
                    &email.project_id,
                    email.contact_id.as_deref(),
                    "email.sent",
                    &events::email_data(email, &subject),
                    now,
                )?;
            }
        }
        Outcome::Retry(error) if email.attempts + 1 < MAX_ATTEMPTS => {
            let delay = base.saturating_mul(1 << email.attempts.min(16)) * 1000;
            emails::retry_later(tx, &email.id, &error, now + delay as i64, now)?;
        }
        Outcome::Retry(error) => {
            fail(tx, email, &format!("gave up after {MAX_ATTEMPTS} tries: {error}"), true, now)?
        }
        Outcome::Fail { error, counted } => fail(tx, email, &error, counted, now)?,
        Outcome::Later(at) => emails::release(tx, &email.id, at)?,
        Outcome::Held { at, reason } => emails::hold(tx, &email.id, at, email.provider.as_deref(), reason)?,
        Outcome::Discard => {
            emails::discard_queued(tx, &email.id)?;
        }
    }
    // The request's attachments, or the submitted message, go once its last email has left
    // the queue.
    if let Some(set) = &email.attachment_set {
        email_parts::drop_attachment_set_when_done(tx, set)?;
    }
    if let Some(raw) = &email.raw_message {
        email_parts::drop_raw_message_when_done(tx, raw)?;
    }
    Ok(())
}

/// Fails a queued email for good, as a refused one is failed (the quarantine: see
/// `scheduler::inflight`).
pub fn quarantine(conn: &Tx, id: &str, error: &str, now: i64) -> crate::db::Result<()> {
    match emails::get(conn, id)? {
        Some(email) => fail(conn, &email, error, true, now),
        None => Ok(()),
    }
}

pub fn fail(tx: &Tx, email: &Email, error: &str, counted: bool, now: i64) -> crate::db::Result<()> {
    if emails::mark_failed(tx, &email.id, error, counted, now)? {
        let mut data = events::email_data(email, &email.subject);
        data["error"] = json!(error);
        events::emit(tx, &email.project_id, email.contact_id.as_deref(), "email.failed", &data, now)?;
    }
    Ok(())
}

/// What `read` finds for `key`, read once for a batch and shared by the emails that need it.
fn read_once<K, T>(
    seen: &mut HashMap<K, Option<Arc<T>>>,
    key: K,
    read: impl FnOnce() -> crate::db::Result<Option<T>>,
) -> crate::db::Result<Option<Arc<T>>>
where
    K: std::hash::Hash + Eq,
{
    if let Some(found) = seen.get(&key) {
        return Ok(found.clone());
    }
    let found = read()?.map(Arc::new);
    seen.insert(key, found.clone());
    Ok(found)
}
