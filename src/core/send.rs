//! `/v1/send`: checking a request and queueing one email per recipient, in one transaction.

use crate::core::outbound::{self, Draft};
use crate::core::vocabulary::EmailKind;
use crate::core::vocabulary::EmailSource;
use crate::db::Tx;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::compose;
use super::consent::may_send;
use super::contacts::{self as core_contacts, Upsert};
use super::data::DataPatch;
use super::domains::require_verified_sender;
use super::fields::FieldChanges;
use crate::core::error::{Error, FieldError, Limit, Result};
use crate::db::contacts::Indexing;
use crate::db::email_parts;
use crate::db::templates;

/// Most recipients in one request.
pub const MAX_RECIPIENTS: usize = 50;
/// Most attachments in one message.
pub const MAX_ATTACHMENTS: usize = 10;

pub use crate::mail::message::Attachment;

/// A `Content-ID` as an attachment gives it: 1 to 255 visible ASCII characters other than `<`,
/// `>` and `"`, the header's own delimiters.
fn content_id(value: Option<&Value>, field: &str) -> Result<Option<String>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id))
            if (1..=255).contains(&id.len())
                && id.bytes().all(|b| b.is_ascii_graphic() && !matches!(b, b'<' | b'>' | b'"')) =>
        {
            Ok(Some(id.clone()))
        }
        Some(_) => Err(Error::invalid(
            field,
            "invalid_string",
            "contentId is 1 to 255 visible ASCII characters, without <, > or quotes (the HTML names it as cid:<contentId>)",
        )),
    }
}

/// Checks the attachments: at most ten, each `{filename, content, contentType?, contentId?,
/// disposition?}` with valid base64, the decoded total within `max_bytes` (413 above). An
/// `inline` one (Plunk's inline image) needs its `contentId`, and no two share one.
pub fn check_attachments(items: &[Value], max_bytes: u64) -> Result<Vec<Attachment>> {
    if items.len() > MAX_ATTACHMENTS {
        return Err(Error::invalid(
            "attachments",
            "too_big",
            format!("at most {MAX_ATTACHMENTS} attachments per email"),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    let mut total: u64 = 0;
    for (i, item) in items.iter().enumerate() {
        let field = |name: &str| format!("attachments[{i}].{name}");
        let Value::Object(item) = item else {
            return Err(Error::invalid(
                &format!("attachments[{i}]"),
                "invalid_type",
                "an attachment is {filename, content, contentType}",
            ));
        };
        let filename = item.get("filename").and_then(Value::as_str).map(str::trim).unwrap_or("");
        if filename.is_empty() || filename.len() > 255 || filename.contains(['\r', '\n', '/', '\\', '"']) {
            return Err(Error::invalid(
                &field("filename"),
                "invalid_string",
                "filename must be 1 to 255 characters without slashes, quotes or line breaks",
            ));
        }
        let content_type = match item.get("contentType") {
            None | Some(Value::Null) => "application/octet-stream".to_string(),
            Some(Value::String(t)) if is_media_type(t) => t.trim().to_ascii_lowercase(),
            Some(_) => {
                return Err(Error::invalid(
                    &field("contentType"),
                    "invalid_string",
                    "contentType must be a media type like application/pdf",
                ));
            }
        };
        let Some(content) = item.get("content").and_then(Value::as_str) else {
            return Err(Error::invalid(&field("content"), "required", "content is required (base64)"));
        };
        let content: String = content.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        let bytes = STANDARD
            .decode(&content)
            .map_err(|_| Error::invalid(&field("content"), "invalid_string", "content must be base64"))?;
        total += bytes.len() as u64;
        if total > max_bytes {
            return Err(Error::OverLimit(Limit::Bytes {
                bytes: max_bytes,
                field: "attachments",
                suggestion: "Attachments may add up to the configured attachment limit; link to large files instead",
            }));
        }
        for key in item.keys() {
            if !matches!(key.as_str(), "filename" | "content" | "contentType" | "contentId" | "disposition") {
                return Err(Error::invalid(
                    &field(key),
                    "unrecognized_key",
                    format!("unknown attachment field {key}"),
                ));
            }
        }
        let content_id = content_id(item.get("contentId"), &field("contentId"))?;
        let inline = match item.get("disposition") {
            None | Some(Value::Null) => false,
            Some(Value::String(d)) if d == "attachment" => false,
            Some(Value::String(d)) if d == "inline" => true,
            Some(other) => {
                return Err(Error::Invalid(vec![
                    FieldError::new(
                        field("disposition"),
                        "invalid_enum_value",
                        "disposition is attachment or inline",
                    )
                    .received(other.clone()),
                ]));
            }
        };
        if inline && content_id.is_none() {
            return Err(Error::invalid(
                &field("contentId"),
                "required",
                "an inline attachment needs its contentId, which the HTML names as cid:<contentId>",
            ));
        }
        if content_id.is_some() && out.iter().any(|a: &Attachment| a.content_id == content_id) {
            return Err(Error::invalid(
                &field("contentId"),
                "conflict",
                "another attachment has this contentId",
            ));
        }
        out.push(Attachment { filename: filename.to_string(), content_type, content, content_id, inline });
    }
    Ok(out)
}

fn is_media_type(text: &str) -> bool {
    let Some((kind, sub)) = text.trim().split_once('/') else { return false };
    let token =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    token(kind) && token(sub.split(';').next().unwrap_or("").trim())
}

/// A checked send request.
#[derive(Debug, Clone)]
pub struct Send {
    pub recipients: Vec<(String, Option<String>)>,
    pub template: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<(String, Option<String>)>,
    /// The deprecated `name`, used only when `from` is a string without a name.
    pub name: Option<String>,
    pub subscribed: Option<bool>,
    pub data: DataPatch,
    pub headers: Vec<(String, String)>,
    pub reply: Option<String>,
    pub attachments: Vec<Attachment>,
}

/// Checks the recipients: a string, `{name, email}`, or an array of either (1 to 50).
pub fn recipients(to: &Value) -> Result<Vec<(String, Option<String>)>> {
    match to {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(Error::invalid("to", "too_small", "to must name at least one recipient"));
            }
            if items.len() > MAX_RECIPIENTS {
                return Err(Error::invalid(
                    "to",
                    "too_big",
                    format!("at most {MAX_RECIPIENTS} recipients per request"),
                ));
            }
            items.iter().enumerate().map(|(i, item)| compose::mailbox(item, &format!("to[{i}]"))).collect()
        }
        other => Ok(vec![compose::mailbox(other, "to")?]),
    }
}

/// One queued (or refused) email, as the response lists it.
#[derive(Debug, Clone)]
pub struct Queued {
    pub contact_id: String,
    pub contact_email: String,
    pub email_id: String,
}

/// Queues the emails of a checked request in the caller's transaction: the template is read,
/// the sender checked, each recipient's contact upserted (new contacts unsubscribed unless
/// `subscribed` says otherwise) and an email row written per recipient.
pub fn queue(conn: &Tx, project: &str, request: &Send, now: i64) -> Result<Vec<Queued>> {
    let template = match &request.template {
        None => None,
        Some(id) => Some(templates::get(conn, project, id)?.ok_or_else(|| {
            Error::Invalid(vec![
                FieldError::new("template", "not_found", "no template with this id in the project")
                    .received(json!(id)),
            ])
        })?),
    };
    let subject = request.subject.clone().or_else(|| template.as_ref().map(|t| t.subject.clone()));
    let body = request.body.clone().or_else(|| template.as_ref().map(|t| t.body.clone()));
    let (Some(subject), Some(body)) = (subject, body) else {
        return Err(Error::Invalid(vec![FieldError::new(
            "subject",
            "required",
            "give a template, or both subject and body",
        )]));
    };
    let template_name = template.as_ref().and_then(|t| t.from_name.clone());
    let (from_email, from_name) = match (&request.from, &template) {
        (Some((email, Some(name))), _) => (email.clone(), Some(name.clone())),
        (Some((email, None)), _) => (email.clone(), request.name.clone().or(template_name)),
        (None, Some(t)) => (t.from_email.clone(), template_name),
        (None, None) => {
            return Err(Error::invalid("from", "required", "from is required when the template has none"));
        }
    };
    let reply_to = request.reply.clone().or_else(|| template.as_ref().and_then(|t| t.reply_to.clone()));
    let kind = template.as_ref().map(|t| t.kind.clone()).unwrap_or_else(|| EmailKind::Transactional.into());
    require_verified_sender(conn, project, &from_email)?;

    let headers: Map<String, Value> =
        request.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    let headers = Value::Object(headers).to_string();
    // One copy of the attachments for every recipient of the request.
    let attachment_set = if request.attachments.is_empty() {
        None
    } else {
        let content = serde_json::to_string(&request.attachments).unwrap_or_default();
        Some(email_parts::insert_attachment_set(conn, project, &content, now)?)
    };
    let variables = Value::Object(request.data.transient.clone()).to_string();

    let mut fields = FieldChanges::default();
    let mut queued = Vec::with_capacity(request.recipients.len());
    for (to_email, to_name) in &request.recipients {
        let upsert = Upsert {
            email: to_email,
            subscribed: request.subscribed,
            default_subscribed: false,
            data: &request.data,
            source: "api",
            indexing: Indexing::AtCommit,
            new_likely: false,
        };
        let contact = core_contacts::upsert(conn, project, &upsert, &mut fields, now)?.contact;
        // Suppressions are the delivery worker's to check, when the email goes out.
        let refused = may_send(&kind, &contact, None, now).err().map(|why| format!("not sent: {why}"));
        let draft = Draft {
            project_id: project.into(),
            contact_id: Some(contact.id.clone()),
            to: (to_email.clone(), to_name.clone()),
            from: (from_email.clone(), from_name.clone()),
            reply_to: reply_to.clone(),
            subject: subject.clone(),
            body: body.clone(),
            headers: Some(headers.clone()),
            variables: Some(variables.clone()),
            kind: kind.clone(),
            template_id: template.as_ref().map(|t| t.id.clone()),
            attachment_set: attachment_set.clone(),
            refused,
            ..Draft::default()
        };
        let email = outbound::queue(conn, EmailSource::Transactional, draft, now)?;
        queued.push(Queued { contact_id: contact.id, contact_email: contact.email, email_id: email.id });
    }
    fields.save(conn, project)?;
    // No recipient may be sent to (all refused above): the attachments are not kept.
    if let Some(set) = &attachment_set {
        email_parts::drop_attachment_set_when_done(conn, set)?;
    }
    Ok(queued)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_rules() {
        let ok = json!({ "filename": "a.pdf", "content": STANDARD.encode(b"%PDF"), "contentType": "application/pdf" });
        assert_eq!(
            check_attachments(std::slice::from_ref(&ok), 100).unwrap()[0].content_type,
            "application/pdf"
        );
        let default_type = json!({ "filename": "a.bin", "content": "AAAA" });
        assert_eq!(
            check_attachments(&[default_type], 100).unwrap()[0].content_type,
            "application/octet-stream"
        );
        assert_eq!(check_attachments(&vec![ok.clone(); 11], 10_000).unwrap_err().kind(), "invalid");
        assert_eq!(check_attachments(&vec![ok.clone(); 3], 10).unwrap_err().kind(), "over_limit");
        for bad in [
            json!({ "filename": "", "content": "AAAA" }),
            json!({ "filename": "../etc/passwd", "content": "AAAA" }),
            json!({ "filename": "a", "content": "not base64!" }),
            json!({ "filename": "a", "content": "AAAA", "contentType": "pdf" }),
            json!({ "filename": "a" }),
            json!({ "filename": "a", "content": "AAAA", "cid": "x" }),
            json!({ "filename": "a", "content": "AAAA", "disposition": "inline" }),
            json!({ "filename": "a", "content": "AAAA", "disposition": "embedded", "contentId": "x" }),
            json!({ "filename": "a", "content": "AAAA", "contentId": "<x>" }),
            json!({ "filename": "a", "content": "AAAA", "contentId": "a b" }),
            json!({ "filename": "a", "content": "AAAA", "contentId": "" }),
        ] {
            assert_eq!(
                check_attachments(std::slice::from_ref(&bad), 100).unwrap_err().kind(),
                "invalid",
                "{bad}"
            );
        }
    }

    #[test]
    fn inline_attachments_carry_their_content_id() {
        let logo = json!({ "filename": "logo.png", "content": "AAAA", "contentType": "image/png",
            "contentId": "logo@acme", "disposition": "inline" });
        let checked = check_attachments(std::slice::from_ref(&logo), 100).unwrap();
        assert_eq!((checked[0].content_id.as_deref(), checked[0].inline), (Some("logo@acme"), true));
        let file = json!({ "filename": "a.pdf", "content": "AAAA", "contentId": "doc", "disposition": "attachment" });
        assert!(!check_attachments(&[file], 100).unwrap()[0].inline);
        assert_eq!(check_attachments(&[logo.clone(), logo], 100).unwrap_err().fields()[0].code, "conflict");
        // Stored before inline parts existed: read back as plain attachments.
        let old: Attachment =
            serde_json::from_value(json!({ "filename": "a", "contentType": "text/plain", "content": "" }))
                .unwrap();
        assert_eq!((old.content_id, old.inline), (None, false));
    }

    #[test]
    fn recipient_forms() {
        assert_eq!(recipients(&json!("a@b.co")).unwrap().len(), 1);
        assert_eq!(recipients(&json!([{ "email": "a@b.co", "name": "A" }, "c@d.co"])).unwrap().len(), 2);
        assert_eq!(recipients(&json!([])).unwrap_err().kind(), "invalid");
        assert_eq!(recipients(&json!(["a@b.co", "bad"])).unwrap_err().fields()[0].field, "to[1]");
        let many: Vec<String> = (0..51).map(|i| format!("u{i}@b.co")).collect();
        assert_eq!(recipients(&json!(many)).unwrap_err().fields()[0].code, "too_big");
    }
}
