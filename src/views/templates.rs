//! Templates: the view and the body that makes or changes one.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::templates::Template as Row;

/// A reusable email: subject and HTML body in Liquid, and its sender.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    pub id: String,
    /// Internal name.
    pub name: String,
    /// Internal note, not sent.
    pub description: Option<String>,
    pub subject: String,
    /// What the author wrote, in `format`, with Liquid placeholders
    /// (`{{ firstName ?? "there" }}`).
    pub body: String,
    /// `html`, `mjml`, `markdown` or `blocks` (the block editor's JSON document).
    #[schema(value_type = BodyFormat)]
    pub format: String,
    /// The HTML `body` compiles to (still with its placeholders); only when `format` is not
    /// `html`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// On a verified domain.
    #[schema(format = Email)]
    pub from: String,
    pub from_name: Option<String>,
    #[schema(format = Email)]
    pub reply_to: Option<String>,
    /// `TRANSACTIONAL`, `MARKETING` or `HEADLESS`.
    #[serde(rename = "type")]
    pub kind: String,
    pub project_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for Template {
    fn from(t: &Row) -> Self {
        Template {
            id: t.id.clone(),
            name: t.name.clone(),
            description: t.description.clone(),
            subject: t.subject.clone(),
            body: t.source.clone().unwrap_or_else(|| t.body.clone()),
            format: t.format.clone(),
            html: t.source.as_ref().map(|_| t.body.clone()),
            from: t.from_email.clone(),
            from_name: t.from_name.clone(),
            reply_to: t.reply_to.clone(),
            kind: t.kind.clone(),
            project_id: t.project_id.clone(),
            created_at: iso(t.created_at),
            updated_at: iso(t.updated_at),
        }
    }
}

/// What kind of mail: `TRANSACTIONAL` (always sent), `MARKETING` (subscribed contacts only, with
/// an unsubscribe link) or `HEADLESS` (sent as written, nothing added).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum MailKind {
    #[schema(rename = "TRANSACTIONAL")]
    Transactional,
    #[schema(rename = "MARKETING")]
    Marketing,
    #[schema(rename = "HEADLESS")]
    Headless,
}

/// What a body is written in.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum BodyFormat {
    /// HTML, sent as written.
    Html,
    /// MJML, rendered to responsive HTML.
    Mjml,
    /// CommonMark, laid out as a responsive mail.
    Markdown,
    /// The block editor's document: `{"style": {...}, "blocks": [...]}` as a string.
    Blocks,
}

/// The body of `POST /templates` (`name`, `subject`, `body` and `from` required; a missing
/// `from` is a 400 with the short `{error}` body) and of `PATCH /templates/{id}` (all optional).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Welcome", "subject": "Welcome, {{ data.firstName ?? \"there\" }}", "body": "<p>Thanks for signing up.</p>", "from": "hello@acme.test", "fromName": "Acme", "type": "TRANSACTIONAL" }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TemplateFields {
    /// 1 to 200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    pub description: Option<String>,
    /// 1 to 998 characters, no line break.
    #[schema(min_length = 1, max_length = 998)]
    pub subject: Option<String>,
    pub body: Option<String>,
    /// On a verified domain (403 otherwise).
    #[schema(format = Email)]
    pub from: Option<String>,
    pub from_name: Option<String>,
    /// An address, or empty to remove it.
    pub reply_to: Option<String>,
    /// `TRANSACTIONAL`, `MARKETING` (the default) or `HEADLESS`.
    #[serde(rename = "type")]
    #[schema(value_type = Option<MailKind>)]
    pub kind: Option<String>,
    /// What `body` is written in: `html` (the default), `mjml`, `markdown` or `blocks`; a new
    /// format alone recompiles the template's body.
    #[schema(value_type = Option<BodyFormat>)]
    pub format: Option<String>,
}

impl From<TemplateFields> for crate::core::templates::Fields {
    fn from(f: TemplateFields) -> Self {
        let TemplateFields { name, description, subject, body, from, from_name, reply_to, kind, format } = f;
        Self { name, description, subject, body, from, from_name, reply_to, kind, format }
    }
}

/// `POST /templates/preview`: a subject and body rendered for a contact, as delivery renders
/// them. Nothing is stored or sent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreviewRequest {
    pub subject: String,
    pub body: String,
    /// What `body` is written in: `html` (the default), `mjml`, `markdown` or `blocks`.
    #[schema(value_type = Option<BodyFormat>)]
    pub format: Option<String>,
    /// Render for this contact (its custom fields and links)...
    pub contact_id: Option<String>,
    /// ...or for this address (the contact's, when it is one).
    #[schema(format = Email)]
    pub email: Option<String>,
    /// One-off variables on top of the contact's fields.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Map<String, Value>>,
}

/// The contact a preview was rendered for.
#[derive(Debug, Serialize, ToSchema)]
pub struct PreviewContact {
    pub id: String,
    #[schema(format = Email)]
    pub email: String,
}

/// What the recipient would get.
#[derive(Debug, Serialize, ToSchema)]
pub struct Preview {
    pub subject: String,
    pub html: String,
    /// The plain-text part made from the HTML.
    pub text: String,
    pub contact: Option<PreviewContact>,
}

/// A starter layout: a complete mail to begin a template or campaign from.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Starter {
    pub id: String,
    pub name: String,
    pub description: String,
    #[schema(value_type = BodyFormat)]
    pub format: String,
    #[serde(rename = "type")]
    #[schema(value_type = MailKind)]
    pub kind: String,
    pub subject: String,
    /// In `format` (for `blocks`, the document as a JSON string).
    pub body: String,
}

impl From<crate::core::formats::starters::Starter> for Starter {
    fn from(s: crate::core::formats::starters::Starter) -> Self {
        let crate::core::formats::starters::Starter { id, name, description, format, kind, subject, body } =
            s;
        Starter { id, name, description, format, kind, subject, body }
    }
}
