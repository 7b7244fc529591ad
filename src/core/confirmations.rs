//! Double opt-in (issue 32, item 3): a subscription asked for with confirmation is held until
//! the contact follows the mailed link and presses the button on its page, so neither a typo nor
//! someone else's address nor a link scanner subscribes anyone. What the contact agreed to, how
//! and from where is kept as its proof of consent ([`record`]).

use serde_json::{Map, Value, json};

use super::contacts;
use super::error::Result;
use super::events;
use super::i18n::{Wishes, locale_of};
use super::links::{self, Link};
use super::outbound::{self, Draft};
use super::topics;
use super::vocabulary::{EmailKind, EmailSource};
use crate::config::Config;
use crate::db::Tx;
use crate::db::consent::{self as rows, Confirmation, Consent, Proof};
use crate::db::contacts::{self as contact_rows, Contact};
use crate::db::templates;
use crate::db::topics::Topic;

/// How long a confirmation link works.
pub const CONFIRM_DAYS: i64 = 7;
/// Fewest minutes between two confirmation mails to one contact: requests in between join the
/// open one without mailing again, so a form cannot be used to flood an address.
pub const MAIL_COOLDOWN_MINUTES: i64 = 60;

/// Where confirmation links point and how they are signed, and who sends the built-in mail.
pub struct Mailer<'a> {
    pub config: &'a Config,
    /// The link secret.
    pub secret: &'a str,
}

/// What a request for a subscription with confirmation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// The contact has every subscription asked for: nothing to confirm.
    Granted,
    /// The request is open; `mailed` when a confirmation mail was queued for it now.
    Pending { confirmation: String, mailed: bool },
}

/// Asks `contact` to confirm a subscription to marketing mail and to `topics`: what the contact
/// lacks of it waits in its open request (made, or joined when one is open) until confirmed, and
/// a confirmation mail is queued unless one went out in the last [`MAIL_COOLDOWN_MINUTES`].
pub fn ask(
    tx: &Tx,
    mailer: &Mailer<'_>,
    contact: &Contact,
    topics: &[Topic],
    proof: Proof,
    now: i64,
) -> Result<Asked> {
    let choices = crate::db::topics::choices(tx, contact.seq)?;
    let lacking: Vec<String> =
        topics.iter().filter(|t| !topics::subscribed(&choices, t)).map(|t| t.id.clone()).collect();
    let open = rows::open_for(tx, contact.seq)?;
    if contact.subscribed && lacking.is_empty() {
        return Ok(Asked::Granted);
    }
    let expires_at = now + CONFIRM_DAYS * 86_400_000;
    let mut request = match open {
        Some(mut open) if open.expires_at > now => {
            for id in lacking {
                if !open.topics.contains(&id) {
                    open.topics.push(id);
                }
            }
            open.proof = proof;
            open.requested_at = now;
            open.expires_at = expires_at;
            open
        }
        // An expired request is renewed under its id (a contact has one open request): its
        // link works again, for the new period.
        open => Confirmation {
            id: open.map_or_else(crate::db::new_id, |o| o.id),
            project_id: contact.project_id.clone(),
            contact_seq: contact.seq,
            topics: lacking,
            proof,
            requested_at: now,
            mailed_at: None,
            expires_at,
            confirmed_at: None,
        },
    };
    let cooling = request.mailed_at.is_some_and(|at| now - at < MAIL_COOLDOWN_MINUTES * 60_000);
    if !cooling {
        request.mailed_at = Some(now);
    }
    rows::save(tx, &request)?;
    if !cooling {
        queue_mail(tx, mailer, contact, &request, now)?;
        let data =
            json!({ "confirmationId": request.id, "method": request.proof.method, "topics": request.topics });
        events::emit(
            tx,
            &contact.project_id,
            Some(&contact.id),
            events::CONTACT_CONFIRMATION_REQUESTED,
            &data,
            now,
        )?;
    }
    Ok(Asked::Pending { confirmation: request.id, mailed: !cooling })
}

/// The contact's subscription waiting for confirmation at `now`: its open request, unless it
/// has expired (a new ask renews it).
pub fn pending(conn: &Tx, contact: &Contact, now: i64) -> Result<Option<Confirmation>> {
    Ok(rows::open_for(conn, contact.seq)?.filter(|open| open.expires_at > now))
}

/// The built-in confirmation mail, used unless the project chose a template: its words are
/// variables (`core::i18n`'s `mail.confirm_*` in the contact's language), so the HTML escapes
/// them and no project name can add template code.
const BUILT_IN_SUBJECT: &str = "{{ subject }}";
const BUILT_IN_BODY: &str =
    "<p>{{ intro }}</p><p><a href=\"{{ confirmUrl }}\">{{ button }}</a></p><p>{{ note }}</p>";

fn queue_mail(
    tx: &Tx,
    mailer: &Mailer<'_>,
    contact: &Contact,
    request: &Confirmation,
    now: i64,
) -> Result<()> {
    let look = super::branding::look(tx, &contact.project_id)?;
    let project = look.name.clone();
    let settings = rows::settings(tx, &contact.project_id)?;
    let template = match settings.confirmation_template_id.as_deref() {
        Some(id) => templates::get(tx, &contact.project_id, id)?,
        None => None,
    };
    let link = Link::Confirm { confirmation: request.id.clone() };
    let mut variables = Map::new();
    variables
        .insert("confirmUrl".into(), json!(links::url(&mailer.config.public_url(), mailer.secret, &link)));
    variables.insert("projectName".into(), json!(project));
    let (subject, body, from, reply_to) = match template {
        Some(t) => {
            super::domains::require_verified_sender(tx, &contact.project_id, &t.from_email)?;
            (t.subject, t.body, (t.from_email, t.from_name), t.reply_to)
        }
        None => {
            let from = built_in_sender(tx, &contact.project_id, settings.confirmation_from.as_deref())?;
            let texts = look.texts(Wishes { contact: locale_of(&contact.data), ..Wishes::default() });
            let vars = [("project", project.as_str())];
            for (name, key) in [
                ("subject", "mail.confirm_subject"),
                ("intro", "mail.confirm_intro"),
                ("button", "mail.confirm_button"),
                ("note", "mail.confirm_note"),
            ] {
                variables.insert(name.into(), json!(texts.fill(key, &vars)));
            }
            let name = Some(project).filter(|p| !p.is_empty());
            (BUILT_IN_SUBJECT.into(), BUILT_IN_BODY.into(), (from, name), None)
        }
    };
    let draft = Draft {
        project_id: contact.project_id.clone(),
        contact_id: Some(contact.id.clone()),
        to: (contact.email.clone(), None),
        from,
        reply_to,
        subject,
        body,
        variables: Some(Value::Object(variables).to_string()),
        // It must reach a contact that is not (yet) subscribed to marketing mail.
        kind: EmailKind::Transactional.into(),
        template_id: settings.confirmation_template_id,
        ..Draft::default()
    };
    outbound::queue(tx, EmailSource::Transactional, draft, now)?;
    Ok(())
}

/// The built-in mail's sender: `chosen` (checked verified when it was set), else `noreply@` the
/// project's first verified domain. Mail leaves only from a domain of the project; a project
/// with none cannot ask for confirmation (422 on `confirm`, nothing stored).
fn built_in_sender(tx: &Tx, project: &str, chosen: Option<&str>) -> Result<String> {
    if let Some(from) = chosen {
        super::domains::require_verified_sender(tx, project, from)?;
        return Ok(from.to_string());
    }
    match crate::db::domains::first_verified(tx, project)? {
        Some(domain) => Ok(format!("noreply@{domain}")),
        None => Err(crate::core::Error::invalid(
            "confirm",
            "no_sender",
            "the confirmation mail needs a verified domain to come from: verify one, or choose a sender \
             (confirmationFrom) or a template in /audience-settings",
        )),
    }
}

/// What following a confirmation link found.
#[derive(Debug, Clone, PartialEq)]
pub enum Confirmed {
    /// Confirmed now: the contact is subscribed to marketing mail and the request's topics.
    Done(Contact),
    /// Confirmed before: nothing changes.
    Already,
    /// The link is older than [`CONFIRM_DAYS`]: a new request sends a new one.
    Expired,
    /// No such request (or its contact was deleted).
    Gone,
}

/// A request as its link finds it: what the page shows before the button is pressed, and the
/// request's contact (whose language and project the page speaks). Changes nothing.
pub fn peek(tx: &Tx, id: &str, now: i64) -> Result<(Confirmed, Option<Contact>)> {
    let Some(request) = rows::get(tx, id)? else { return Ok((Confirmed::Gone, None)) };
    let Some(contact) = contact_rows::by_seq(tx, request.contact_seq)? else {
        return Ok((Confirmed::Gone, None));
    };
    let state = match request {
        r if r.confirmed_at.is_some() => Confirmed::Already,
        r if r.expires_at <= now => Confirmed::Expired,
        _ => Confirmed::Done(contact.clone()),
    };
    Ok((state, Some(contact)))
}

/// Confirms request `id` (the page's button was pressed by `who`: address and user agent):
/// subscribes the contact to marketing mail and the request's topics that still exist, stores
/// the proof of consent for each, and emits `contact.confirmed`. Returns what happened and the
/// request's contact, as [`peek`] does.
pub fn confirm(
    tx: &Tx,
    id: &str,
    who: (Option<String>, Option<String>),
    now: i64,
) -> Result<(Confirmed, Option<Contact>)> {
    let Some(request) = rows::get(tx, id)? else { return Ok((Confirmed::Gone, None)) };
    let Some(contact) = contact_rows::by_seq(tx, request.contact_seq)? else {
        return Ok((Confirmed::Gone, None));
    };
    if request.confirmed_at.is_some() {
        return Ok((Confirmed::Already, Some(contact)));
    }
    if request.expires_at <= now {
        return Ok((Confirmed::Expired, Some(contact)));
    }
    if !rows::mark_confirmed(tx, id, now)? {
        return Ok((Confirmed::Already, Some(contact)));
    }
    let topics: Vec<Topic> = crate::db::topics::list(tx, &contact.project_id)?
        .into_iter()
        .filter(|t| request.topics.contains(&t.id))
        .collect();
    let grant = Consent {
        proof: request.proof.clone(),
        requested_at: request.requested_at,
        confirmed_at: Some(now),
        confirm_ip: who.0,
        confirm_user_agent: who.1.map(cut_agent),
        ..Consent::default()
    };
    record(tx, &contact, &topics, grant, now)?;
    let data =
        json!({ "confirmationId": request.id, "method": request.proof.method, "topics": request.topics });
    events::emit(tx, &contact.project_id, Some(&contact.id), events::CONTACT_CONFIRMED, &data, now)?;
    let now_is = contact_rows::by_seq(tx, contact.seq)?.unwrap_or(contact);
    Ok((Confirmed::Done(now_is.clone()), Some(now_is)))
}

/// Grants `contact` marketing mail and `topics` (source `confirmation` when `grant` was
/// confirmed, else its method), storing one consent row for each: the proof of what it agreed
/// to, when, how and from where.
pub fn record(tx: &Tx, contact: &Contact, topics: &[Topic], grant: Consent, now: i64) -> Result<()> {
    let source = if grant.confirmed_at.is_some() { "confirmation" } else { grant.proof.method.as_str() };
    contacts::set_subscribed(tx, contact.clone(), true, source, now)?;
    let chosen: Vec<(Topic, bool)> = topics.iter().map(|t| (t.clone(), true)).collect();
    topics::choose(tx, contact, &chosen, source, now)?;
    let grant = Consent { contact_seq: contact.seq, ..grant };
    rows::insert(tx, &contact.project_id, &grant)?;
    for topic in topics {
        let row = Consent {
            topic_id: Some(topic.id.clone()),
            topic_name: Some(topic.name.clone()),
            ..grant.clone()
        };
        rows::insert(tx, &contact.project_id, &row)?;
    }
    Ok(())
}

/// Keeps the proof of a grant the contact made itself on a page (`preference_centre`): of
/// marketing mail (`topic` `None`) or of one topic. The grant itself is the caller's.
pub fn keep_proof(tx: &Tx, contact: &Contact, topic: Option<&Topic>, proof: Proof, now: i64) -> Result<()> {
    let row = Consent {
        contact_seq: contact.seq,
        topic_id: topic.map(|t| t.id.clone()),
        topic_name: topic.map(|t| t.name.clone()),
        proof,
        requested_at: now,
        ..Consent::default()
    };
    rows::insert(tx, &contact.project_id, &row)?;
    Ok(())
}

/// Longest consent text kept, in characters.
pub const MAX_CONSENT_TEXT: usize = 2_000;
/// Longest user agent kept, in characters (longer ones are cut, not refused).
pub const MAX_USER_AGENT: usize = 500;

/// A user agent as kept: its first [`MAX_USER_AGENT`] characters.
pub fn cut_agent(agent: String) -> String {
    if agent.chars().count() <= MAX_USER_AGENT { agent } else { agent.chars().take(MAX_USER_AGENT).collect() }
}

/// A producer's proof of consent as a request gives it (`consent: {text, ip, userAgent}`),
/// checked: 422 on `field.text` over [`MAX_CONSENT_TEXT`] or on `field.ip` that is no address.
/// What the request leaves out is taken from `seen` (the caller's address and user agent, when
/// the caller is the person: a browser with the public key).
pub fn check_proof(
    method: &str,
    given: Option<(Option<String>, Option<String>, Option<String>)>,
    seen: (Option<String>, Option<String>),
    field: &str,
) -> Result<Proof> {
    let (text, ip, user_agent) = given.unwrap_or_default();
    if text.as_ref().is_some_and(|t| t.chars().count() > MAX_CONSENT_TEXT) {
        return Err(crate::core::Error::invalid(
            &format!("{field}.text"),
            "too_big",
            format!("the consent text has at most {MAX_CONSENT_TEXT} characters"),
        ));
    }
    if let Some(ip) = ip.as_deref().filter(|ip| ip.parse::<std::net::IpAddr>().is_err()) {
        return Err(crate::core::Error::invalid(
            &format!("{field}.ip"),
            "invalid_string",
            format!("{ip:.60} is not an IP address"),
        ));
    }
    Ok(Proof {
        method: method.into(),
        form_id: None,
        ip: ip.or(seen.0),
        user_agent: user_agent.or(seen.1).map(cut_agent),
        consent_text: text.filter(|t| !t.trim().is_empty()),
    })
}

/// What a producer of contacts (the contacts API, tracking) asks about consent with an upsert.
#[derive(Debug, Clone, Default)]
pub struct Consenting {
    /// Subscribe only when the contact confirms by mail (double opt-in).
    pub confirm: bool,
    /// The proof to keep: with `confirm`, kept when confirmed; without, kept now for a
    /// subscribed contact.
    pub proof: Option<Proof>,
}

impl Consenting {
    /// The `subscribed` to upsert with and the default for a new contact: with `confirm`, a new
    /// contact waits unsubscribed and an existing one keeps its state (422 on `confirm` with
    /// `subscribed: false`, which asks for nothing to confirm).
    pub fn upsert_subscription(&self, subscribed: Option<bool>) -> Result<(Option<bool>, bool)> {
        match (self.confirm, subscribed) {
            (false, subscribed) => Ok((subscribed, true)),
            (true, Some(false)) => Err(crate::core::Error::invalid(
                "confirm",
                "invalid_type",
                "confirm asks the contact to confirm a subscription; it cannot go with subscribed: false",
            )),
            (true, _) => Ok((None, false)),
        }
    }

    /// After the upsert of `contact`: asks it to confirm, or keeps the proof given.
    pub fn apply(&self, tx: &Tx, mailer: &Mailer<'_>, contact: &Contact, now: i64) -> Result<Option<Asked>> {
        if self.confirm {
            let proof =
                self.proof.clone().unwrap_or_else(|| Proof { method: "api".into(), ..Proof::default() });
            return ask(tx, mailer, contact, &[], proof, now).map(Some);
        }
        if let Some(proof) = self.proof.clone().filter(|_| contact.subscribed) {
            record(tx, contact, &[], Consent { proof, requested_at: now, ..Consent::default() }, now)?;
        }
        Ok(None)
    }
}

/// Changes the project's audience settings (`None` keeps a value). A confirmation template must
/// be one of the project's (422 `not_found`) and its sender, like the built-in mail's, at a
/// verified domain of the project (as a send needs).
pub fn update_settings(
    tx: &Tx,
    project: &str,
    double_opt_in: Option<bool>,
    template: Option<Option<String>>,
    from: Option<Option<String>>,
    now: i64,
) -> Result<rows::Settings> {
    let mut settings = rows::settings(tx, project)?;
    if let Some(on) = double_opt_in {
        settings.double_opt_in = on;
    }
    if let Some(template) = template {
        if let Some(id) = template.as_deref() {
            let Some(found) = templates::get(tx, project, id)? else {
                return Err(crate::core::Error::invalid(
                    "confirmationTemplateId",
                    "not_found",
                    "no template with this id in the project",
                ));
            };
            super::domains::require_verified_sender(tx, project, &found.from_email)?;
        }
        settings.confirmation_template_id = template;
    }
    if let Some(from) = from {
        if let Some(address) = from.as_deref() {
            let address = super::contacts::parse_email(address, "confirmationFrom")?;
            super::domains::require_verified_sender(tx, project, &address)?;
            settings.confirmation_from = Some(address);
        } else {
            settings.confirmation_from = None;
        }
    }
    rows::put_settings(tx, project, &settings, now)?;
    Ok(settings)
}
