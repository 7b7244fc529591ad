//! Templates: a reusable subject, body and sender. Checking their fields, and the use cases
//! that make, change, copy and delete one (a template a workflow sends is not deleted).

use serde_json::{Value, json};

use super::compose;
use super::contacts::{parse_email, test_recipient};
use super::domains::require_verified_sender;
use super::error::{Error, Result};
use super::formats::{self, Format};
use super::ids::TemplateId;
use super::outbound::{self, Draft};
use super::vocabulary::EmailKind;
use super::vocabulary::EmailSource;
use crate::db::Tx;
use crate::db::emails::Email;
use crate::db::refs;
use crate::db::templates::{self, Template};

/// A template's fields as a client gives them, each `None` left as it is.
#[derive(Debug, Default)]
pub struct Fields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<String>,
    pub from_name: Option<String>,
    /// An address, or empty to remove it.
    pub reply_to: Option<String>,
    pub kind: Option<String>,
    /// What `body` is written in (`html` when a new template leaves it out).
    pub format: Option<String>,
}

/// A new, empty MARKETING template of `project`, to [`apply`] fields to.
pub fn draft(project: &str, now: i64) -> Template {
    Template {
        id: TemplateId::fresh().into(),
        project_id: project.to_string(),
        name: String::new(),
        description: None,
        subject: String::new(),
        body: String::new(),
        from_email: String::new(),
        from_name: None,
        reply_to: None,
        kind: EmailKind::Marketing.into(),
        created_at: now,
        updated_at: now,
        format: Format::Html.as_str().into(),
        source: None,
    }
}

/// Checks `f` and applies it to `t` (the subject and body are parsed as Liquid and a body not
/// in HTML is compiled: run it off the executor). The sender's domain is checked where the template is saved.
pub fn apply(t: &mut Template, f: Fields) -> Result<()> {
    if let Some(name) = f.name {
        let name = name.trim().to_string();
        if name.is_empty() || name.chars().count() > 200 {
            return Err(Error::invalid("name", "invalid_string", "name must be 1 to 200 characters"));
        }
        t.name = name;
    }
    if let Some(description) = f.description {
        t.description = Some(description).filter(|d| !d.trim().is_empty());
    }
    if let Some(subject) = f.subject {
        compose::check_subject(&subject, "subject")?;
        t.subject = subject;
    }
    if f.body.is_some() || f.format.is_some() {
        let format = match f.format {
            Some(name) => Format::parse(&name, "format")?,
            None => Format::stored(&t.format),
        };
        // A new format alone recompiles what the author wrote.
        let written = f.body.unwrap_or_else(|| t.source.clone().unwrap_or_else(|| t.body.clone()));
        let content = formats::compile(format, &written, "body")?;
        t.format = format.as_str().into();
        t.body = content.html;
        t.source = content.source;
    }
    if let Some(from) = f.from {
        t.from_email = parse_email(&from, "from")?;
    }
    if let Some(name) = f.from_name {
        t.from_name = Some(compose::check_name(&name, "fromName")?).filter(|n| !n.is_empty());
    }
    if let Some(reply) = f.reply_to {
        t.reply_to = if reply.trim().is_empty() { None } else { Some(parse_email(&reply, "replyTo")?) };
    }
    if let Some(kind) = f.kind {
        t.kind = compose::check_type(Some(&kind), "type", EmailKind::Marketing.as_str())?;
    }
    Ok(())
}

/// Template `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &TemplateId) -> Result<Template> {
    templates::get(conn, project, id)?.ok_or_else(|| TemplateId::missing(id))
}

/// Saves a new template whose fields were applied; its sender must be on a verified domain.
pub fn create(tx: &Tx, t: &Template) -> Result<()> {
    require_verified_sender(tx, &t.project_id, &t.from_email)?;
    Ok(templates::save(tx, t)?)
}

/// Saves a changed template; a new sender must be on a verified domain.
pub fn edit(tx: &Tx, t: &Template, from_changed: bool) -> Result<()> {
    if from_changed {
        require_verified_sender(tx, &t.project_id, &t.from_email)?;
    }
    Ok(templates::save(tx, t)?)
}

/// Queues template `id` once to `to`, marked as a test (`[Test]` before the subject, outside
/// every counter, ahead of campaign mail), from a verified sender, rendered as the `chosen`
/// contact (else as the contact with that address, if any).
pub fn send_test(tx: &Tx, t: &Template, to: &str, chosen: Option<&str>, now: i64) -> Result<Email> {
    require_verified_sender(tx, &t.project_id, &t.from_email)?;
    let contact_id = test_recipient(tx, &t.project_id, chosen, to)?;
    let draft = Draft {
        project_id: t.project_id.clone(),
        contact_id,
        to: (to.to_string(), None),
        from: (t.from_email.clone(), t.from_name.clone()),
        reply_to: t.reply_to.clone(),
        subject: format!("[Test] {}", t.subject),
        body: t.body.clone(),
        kind: t.kind.clone(),
        template_id: Some(t.id.clone()),
        ..Draft::default()
    };
    Ok(outbound::queue(tx, EmailSource::Test, draft, now)?)
}

/// Saves a copy of template `id`, named "<name> (copy)".
pub fn duplicate(tx: &Tx, project: &str, id: &TemplateId, now: i64) -> Result<Template> {
    let original = find(tx, project, id)?;
    let copy = Template {
        id: TemplateId::fresh().into(),
        name: format!("{} (copy)", original.name).chars().take(200).collect(),
        created_at: now,
        updated_at: now,
        ..original
    };
    templates::save(tx, &copy)?;
    Ok(copy)
}

/// Deletes template `id`, unless a workflow's SEND_EMAIL step sends it (it would fail on every
/// execution from then on): a conflict naming those workflows.
pub fn delete(tx: &Tx, project: &str, id: &TemplateId) -> Result<()> {
    let template = find(tx, project, id)?;
    let workflows = refs::workflows(tx, project, "template", &template.id)?;
    if !workflows.is_empty() {
        let names: Vec<Value> =
            workflows.iter().map(|(id, name, _)| json!({ "id": id, "name": name })).collect();
        return Err(Error::Conflict {
            message: format!(
                "the template is sent by {} workflow(s): change or delete their SEND_EMAIL steps first",
                names.len()
            ),
            details: Some(json!({ "workflows": names })),
        });
    }
    templates::delete(tx, project, &template.id)?;
    Ok(())
}
