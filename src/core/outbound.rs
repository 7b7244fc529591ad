//! Turning a message's stored parts into what the recipient reads: the variables a contact's
//! message sees and the rendered subject and HTML body.
//!
//! The delivery worker renders every email with [`render`], and the dashboard's template
//! preview does too, so what the preview shows is what is sent. (Tracking links, the open pixel
//! and the MIME build come after this, in the worker.)

use serde_json::{Map, Value};

use super::data;
use super::links;
use super::render::{self, Mode, TemplateError};
use crate::db::contacts::Contact;

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
/// message they go in when its unsubscribes are counted (campaign mail).
pub struct LinkBase<'a> {
    pub public_url: &'a str,
    pub secret: &'a str,
    pub email: Option<&'a str>,
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
    let contact_links = links::contact_links(base.public_url, base.secret, contact_id, base.email);
    let scope = render::scope(&vars, to_email, contact_id, &contact_links);
    let subject = render::render(subject, Mode::Text, &scope).map_err(|e| (Part::Subject, e))?;
    let html = render::render(body, Mode::Html, &scope).map_err(|e| (Part::Body, e))?;
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
        LinkBase { public_url: "https://mail.example.com", secret: "s", email: None };

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
}
