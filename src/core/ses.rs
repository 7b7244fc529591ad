//! Amazon SES notifications (the `Message` of an SNS notification): which email they are about
//! and what they report, for [`super::feedback`].

use serde_json::Value;

use super::feedback::Feedback;

/// What an SES notification is about and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The Message-IDs it names: ours first (from the mail's headers), then SES's own.
    pub message_ids: Vec<String>,
    /// The recipients it reports on (bounced, complained or delivered), as SES gives them.
    pub recipients: Vec<String>,
    pub feedback: Feedback,
}

/// The addresses of `list` (`[{emailAddress}]`, or plain strings).
fn addresses(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("emailAddress").unwrap_or(r).as_str().map(str::to_string))
        .collect()
}

/// What an SES notification reports. `None` for kinds it does not report on (sends, opens
/// seen by SES, rejects) or for JSON that is not an SES notification.
pub fn report(message: &Value) -> Option<Report> {
    let kind = message.get("notificationType").or_else(|| message.get("eventType"))?.as_str()?;
    let (recipients, feedback) = match kind {
        "Bounce" => {
            let bounce = message.get("bounce")?;
            let hard = bounce.get("bounceType").and_then(Value::as_str) == Some("Permanent");
            let detail = bounce
                .get("bouncedRecipients")
                .and_then(|r| r.get(0))
                .and_then(|r| r.get("diagnosticCode"))
                .and_then(Value::as_str)
                .or_else(|| bounce.get("bounceSubType").and_then(Value::as_str))
                .map(|d| d.chars().take(500).collect());
            (addresses(bounce.get("bouncedRecipients")), Feedback::Bounce { hard, detail })
        }
        "Complaint" => {
            let complaint = message.get("complaint")?;
            let detail = complaint.get("complaintFeedbackType").and_then(Value::as_str).map(str::to_string);
            (addresses(complaint.get("complainedRecipients")), Feedback::Complaint { detail })
        }
        "Delivery" => (addresses(message.pointer("/delivery/recipients")), Feedback::Delivered),
        _ => return None,
    };
    let mail = message.get("mail")?;
    let mut ids = Vec::new();
    if let Some(id) = mail.pointer("/commonHeaders/messageId").and_then(Value::as_str) {
        ids.push(id.to_string());
    }
    for header in mail.get("headers").and_then(Value::as_array).into_iter().flatten() {
        if header.get("name").and_then(Value::as_str).is_some_and(|n| n.eq_ignore_ascii_case("Message-ID"))
            && let Some(value) = header.get("value").and_then(Value::as_str)
        {
            ids.push(value.to_string());
        }
    }
    if let Some(id) = mail.get("messageId").and_then(Value::as_str) {
        ids.push(id.to_string());
    }
    (!ids.is_empty()).then_some(Report { message_ids: ids, recipients, feedback })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounces_complaints_and_deliveries() {
        let mail = json!({ "messageId": "ses-1", "commonHeaders": { "messageId": "<ours@example.test>" },
                           "headers": [{ "name": "Message-ID", "value": "<ours@example.test>" }] });
        let permanent = json!({ "notificationType": "Bounce", "mail": mail,
            "bounce": { "bounceType": "Permanent", "bounceSubType": "General",
                        "bouncedRecipients": [{ "emailAddress": "a@b.c", "diagnosticCode": "smtp; 550 5.1.1 unknown" }] } });
        let Report { message_ids: ids, recipients, feedback } = report(&permanent).unwrap();
        assert_eq!(ids[0], "<ours@example.test>");
        assert_eq!(ids.last().unwrap(), "ses-1");
        assert_eq!(recipients, ["a@b.c"]);
        assert_eq!(feedback, Feedback::Bounce { hard: true, detail: Some("smtp; 550 5.1.1 unknown".into()) });
        let transient = json!({ "eventType": "Bounce", "mail": mail, "bounce": { "bounceType": "Transient", "bounceSubType": "MailboxFull" } });
        assert_eq!(
            report(&transient).unwrap().feedback,
            Feedback::Bounce { hard: false, detail: Some("MailboxFull".into()) }
        );
        let complaint = json!({ "notificationType": "Complaint", "mail": mail, "complaint": { "complaintFeedbackType": "abuse" } });
        assert_eq!(
            report(&complaint).unwrap().feedback,
            Feedback::Complaint { detail: Some("abuse".into()) }
        );
        let delivery =
            json!({ "notificationType": "Delivery", "mail": mail, "delivery": { "recipients": ["d@b.c"] } });
        let delivered = report(&delivery).unwrap();
        assert_eq!(
            (delivered.feedback, delivered.recipients),
            (Feedback::Delivered, vec!["d@b.c".to_string()])
        );
        assert!(report(&json!({ "notificationType": "Send", "mail": mail })).is_none());
        assert!(report(&json!({ "hello": 1 })).is_none());
    }
}
