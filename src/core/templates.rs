//! Templates: a reusable subject, body and sender. Checking their fields, and the use cases
//! that make, change, copy and delete one (a template a workflow sends is not deleted).

use serde_json::{Value, json};

use super::compose;
use super::contacts::parse_email;
use super::domains::require_verified_sender;
use super::error::{Error, Result};
use super::ids::TemplateId;
use super::vocabulary::EmailKind;
use crate::db::Tx;
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
    }
}

/// Checks `f` and applies it to `t` (the subject and body are parsed as Liquid: run it off the
/// executor). The sender's domain is checked where the template is saved.
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
    if let Some(body) = f.body {
        compose::check_body(&body, "body")?;
        t.body = body;
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
