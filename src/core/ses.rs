//! Amazon SES notifications (the `Message` of an SNS notification): which email they are about
//! and what they report, for [`super::feedback`].

use serde_json::Value;

use super::feedback::Feedback;

/// What an SES notification reports: the Message-IDs it names (ours first, from the mail's
/// headers, then SES's own) and the report. `None` for kinds it does not report on (sends,
/// opens seen by SES, rejects) or for JSON that is not an SES notification.
pub fn report(message: &Value) -> Option<(Vec<String>, Feedback)> {
    let kind = message.get("notificationType").or_else(|| message.get("eventType"))?.as_str()?;
    let feedback = match kind {
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
            Feedback::Bounce { hard, detail }
        }
        "Complaint" => {
            let complaint = message.get("complaint")?;
            let detail = complaint.get("complaintFeedbackType").and_then(Value::as_str).map(str::to_string);
            Feedback::Complaint { detail }
        }
        "Delivery" => Feedback::Delivered,
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
    (!ids.is_empty()).then_some((ids, feedback))
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
        let (ids, feedback) = report(&permanent).unwrap();
        assert_eq!(ids[0], "<ours@example.test>");
        assert_eq!(ids.last().unwrap(), "ses-1");
        assert_eq!(feedback, Feedback::Bounce { hard: true, detail: Some("smtp; 550 5.1.1 unknown".into()) });
        let transient = json!({ "eventType": "Bounce", "mail": mail, "bounce": { "bounceType": "Transient", "bounceSubType": "MailboxFull" } });
        assert_eq!(
            report(&transient).unwrap().1,
            Feedback::Bounce { hard: false, detail: Some("MailboxFull".into()) }
        );
        let complaint = json!({ "notificationType": "Complaint", "mail": mail, "complaint": { "complaintFeedbackType": "abuse" } });
        assert_eq!(report(&complaint).unwrap().1, Feedback::Complaint { detail: Some("abuse".into()) });
        let delivery = json!({ "notificationType": "Delivery", "mail": mail, "delivery": {} });
        assert_eq!(report(&delivery).unwrap().1, Feedback::Delivered);
        assert!(report(&json!({ "notificationType": "Send", "mail": mail })).is_none());
        assert!(report(&json!({ "hello": 1 })).is_none());
    }
}
