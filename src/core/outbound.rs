//! Outbound mail: the one way an email is made ([`queue`] a [`Draft`]; every producer, from
//! `/v1/send` to campaigns, workflows and the appliance's own mail, takes it), and turning a
//! message's stored parts into what the recipient reads: the variables a contact's message sees
//! and the rendered subject and HTML body.
//!
//! The delivery worker renders every email with [`render`], and the dashboard's template
//! preview does too, so what the preview shows is what is sent. (Tracking links, the open pixel
//! and the MIME build come after this, in the worker.)

use serde_json::{Map, Value};

use super::compose;
use super::data;
use super::links;
use super::render::{self, Mode, TemplateError};
use super::vocabulary::{EmailSource, EmailStatus};
use crate::db::Tx;
use crate::db::contacts::Contact;
use crate::db::emails::{self, Email};

/// Queue priority of campaign mail: transactional mail (0) goes first.
pub const CAMPAIGN_PRIORITY: i64 = 1;

/// An email a producer wants sent: what it says, to and from whom, and what it belongs to.
/// [`queue`] gives it its id, Message-ID, status and time.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    pub project_id: String,
    pub contact_id: Option<String>,
    /// The address and display name.
    pub to: (String, Option<String>),
    pub from: (String, Option<String>),
    pub reply_to: Option<String>,
    pub subject: String,
    pub body: String,
    /// A JSON object of extra headers; `{}` when empty.
    pub headers: Option<String>,
    /// A JSON object of this message's one-off variables; `{}` when empty.
    pub variables: Option<String>,
    /// `TRANSACTIONAL`, `MARKETING` or `HEADLESS`, as checked by its producer.
    pub kind: String,
    pub template_id: Option<String>,
    pub campaign_id: Option<String>,
    pub workflow_id: Option<String>,
    /// The request's attachments, stored once for all its recipients.
    pub attachment_set: Option<String>,
    /// A message submitted over SMTP, kept as written for all its recipients: delivered as it
    /// is, with Tidings' headers and signature added (subject and body are only shown).
    pub raw_message: Option<String>,
    /// The message's own Message-ID (a submitted message's); a new one otherwise.
    pub message_id: Option<String>,
    /// Why it is not to be sent at all: kept as FAILED with this error, for the record.
    pub refused: Option<String>,
}

/// The row a draft from `source` becomes at `now`.
fn email_of(source: EmailSource, draft: Draft, now: i64) -> Email {
    let status = if draft.refused.is_some() { EmailStatus::Failed } else { EmailStatus::Queued };
    Email {
        id: crate::db::new_id(),
        project_id: draft.project_id,
        contact_id: draft.contact_id,
        message_id: draft.message_id.unwrap_or_else(|| compose::message_id(&draft.from.0)),
        to_email: draft.to.0,
        to_name: draft.to.1,
        from_email: draft.from.0,
        from_name: draft.from.1,
        reply_to: draft.reply_to,
        subject: draft.subject,
        body: draft.body,
        headers: draft.headers.unwrap_or_else(|| "{}".into()),
        variables: draft.variables.unwrap_or_else(|| "{}".into()),
        kind: draft.kind,
        source_type: source.into(),
        template_id: draft.template_id,
        campaign_id: draft.campaign_id,
        workflow_id: draft.workflow_id,
        attachment_set: draft.attachment_set,
        raw_message: draft.raw_message,
        status: status.into(),
        last_error: draft.refused,
        created_at: now,
        ..Email::default()
    }
}

/// Queues a draft from `source` in the caller's transaction (the delivery worker is woken once
/// it commits). A monthly cap the triggers keep refuses it with the transaction's error.
pub fn queue(tx: &Tx, source: EmailSource, draft: Draft, now: i64) -> crate::db::Result<Email> {
    let email = email_of(source, draft, now);
    emails::insert(tx, &email, now)?;
    Ok(email)
}

/// Queues one recipient's email of a campaign behind transactional mail, unless the campaign
/// has one for this contact already (`None`). Subject and body stay the campaign's (or its A/B
/// test `variant`'s).
pub fn queue_campaign(
    tx: &Tx,
    draft: Draft,
    variant: Option<i64>,
    due: i64,
    now: i64,
) -> crate::db::Result<Option<Email>> {
    let email = Email { variant, ..email_of(EmailSource::Campaign, draft, now) };
    Ok(emails::insert_campaign_row(tx, &email, CAMPAIGN_PRIORITY, due.max(now), now)?.then_some(email))
}

/// Which part of a message failed to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Subject,
    Body,
}

impl Part {
    pub fn field(self) -> &'static str {
        match self {
            Part::Subject => "subject",
            Part::Body => "body",
        }
    }
}

/// A rendered message: the subject (one line) and the HTML body.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub subject: String,
    pub html: String,
}

/// Where the generated links (`unsubscribeUrl`, …) point and how they are signed; `email` is the
/// message they go in when its unsubscribes are counted (campaign mail), `campaign` the campaign
/// whose web version `viewInBrowserUrl` opens.
pub struct LinkBase<'a> {
    pub public_url: &'a str,
    pub secret: &'a str,
    pub email: Option<&'a str>,
    pub campaign: Option<&'a str>,
}

/// Renders `subject` and `body` for a recipient: the contact's custom fields with this
/// message's one-off values on top (reserved keys dropped), `email`, `id` and the contact's
/// signed links.
pub fn render(
    subject: &str,
    body: &str,
    to_email: &str,
    contact: Option<&Contact>,
    transient: &Map<String, Value>,
    base: &LinkBase<'_>,
) -> Result<Rendered, (Part, TemplateError)> {
    let stored = contact.map(|c| c.data.clone()).unwrap_or_default();
    let mut vars = data::variables(&stored, transient);
    vars.retain(|k, _| !data::is_reserved(k));
    let contact_id = contact.map(|c| c.id.as_str()).unwrap_or_default();
    let contact_links =
        links::contact_links(base.public_url, base.secret, contact_id, (base.email, base.campaign));
    let scope = render::scope(&vars, to_email, contact_id, &contact_links);
    render_scope(subject, body, &scope)
}

/// Renders `subject` and `body` for no one (a campaign's archived copy): `vars` in place of a
/// contact's data (reserved keys dropped), no address, no personal links, and
/// `viewInBrowserUrl` the copy's own address `page`.
pub fn render_impersonal(
    subject: &str,
    body: &str,
    vars: &Map<String, Value>,
    page: &str,
) -> Result<Rendered, (Part, TemplateError)> {
    let mut vars = vars.clone();
    vars.retain(|k, _| !data::is_reserved(k));
    render_scope(subject, body, &render::scope(&vars, "", "", &links::impersonal_links(page)))
}

fn render_scope(
    subject: &str,
    body: &str,
    scope: &render::Globals,
) -> Result<Rendered, (Part, TemplateError)> {
    let subject = render::render(subject, Mode::Text, scope).map_err(|e| (Part::Subject, e))?;
    let html = render::render(body, Mode::Html, scope).map_err(|e| (Part::Body, e))?;
    Ok(Rendered { subject: subject.replace(['\r', '\n'], " "), html })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contact(data: Value) -> Contact {
        Contact {
            seq: 1,
            id: "c1".into(),
            project_id: "p1".into(),
            email: "ada@example.com".into(),
            subscribed: true,
            snoozed_until: None,
            data: data.as_object().unwrap().clone(),
            created_at: 0,
            updated_at: 0,
        }
    }

    const BASE: LinkBase<'static> =
        LinkBase { public_url: "https://mail.example.com", secret: "s", email: None, campaign: None };

    #[test]
    fn one_off_values_win_and_reserved_keys_are_dropped() {
        let c = contact(json!({ "name": "Ada", "plan": "free" }));
        let transient = json!({ "plan": "pro", "email": "spoof@x.y" }).as_object().unwrap().clone();
        let out = render(
            "Hi {{ name }}\r\n",
            "<p>{{ plan }} {{ email }}</p>",
            &c.email,
            Some(&c),
            &transient,
            &BASE,
        )
        .unwrap();
        assert_eq!(out.subject, "Hi Ada  ");
        assert_eq!(out.html, "<p>pro ada@example.com</p>");
    }

    #[test]
    fn links_are_signed_for_the_contact_and_errors_name_the_part() {
        let c = contact(json!({}));
        let out = render("s", "{{ unsubscribeUrl }}", &c.email, Some(&c), &Map::new(), &BASE).unwrap();
        assert!(out.html.starts_with("https://mail.example.com/unsubscribe/"), "{}", out.html);
        let (part, _) =
            render("s", "{{ 1 | divided_by: 0 }}", &c.email, Some(&c), &Map::new(), &BASE).unwrap_err();
        assert_eq!(part, Part::Body);
    }

    #[test]
    fn a_draft_becomes_a_queued_row_or_a_refused_one() {
        let draft = Draft {
            project_id: "p1".into(),
            to: ("ada@example.test".into(), None),
            from: ("news@acme.test".into(), Some("Acme".into())),
            kind: "MARKETING".into(),
            ..Draft::default()
        };
        let email = email_of(EmailSource::Workflow, draft.clone(), 7);
        assert_eq!((email.status.as_str(), email.source_type.as_str()), ("QUEUED", "WORKFLOW"));
        assert_eq!((email.headers.as_str(), email.variables.as_str(), email.created_at), ("{}", "{}", 7));
        assert!(email.message_id.ends_with("@acme.test>"), "{}", email.message_id);
        let refused = Draft { refused: Some("not sent: why".into()), ..draft };
        let email = email_of(EmailSource::Transactional, refused, 7);
        assert_eq!((email.status.as_str(), email.last_error.as_deref()), ("FAILED", Some("not sent: why")));
    }
}
