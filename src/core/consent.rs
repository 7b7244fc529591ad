//! Consent: who may be sent marketing mail. Every producer (the send API, workflows, the
//! delivery worker for campaigns and queued mail) asks this one rule.

use crate::core::vocabulary::EmailKind;

/// The marketing rule, one for every producer: MARKETING mail goes only to a subscribed contact
/// that is not suppressed (`suppressed`: why it is, when the caller knows). The reason otherwise.
pub fn may_send(kind: &str, subscribed: bool, suppressed: Option<&str>) -> Result<(), String> {
    if kind != EmailKind::Marketing {
        return Ok(());
    }
    if !subscribed {
        return Err("the contact is unsubscribed from marketing email".into());
    }
    if let Some(reason) = suppressed {
        let why = if reason == "complaint" { "complained about earlier mail" } else { "hard-bounced" };
        return Err(format!("the contact is suppressed for marketing email (it {why})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::may_send;

    #[test]
    fn marketing_needs_a_subscribed_unsuppressed_contact() {
        assert!(may_send("TRANSACTIONAL", false, Some("complaint")).is_ok(), "not marketing");
        assert!(may_send("MARKETING", true, None).is_ok());
        assert!(may_send("MARKETING", false, None).unwrap_err().contains("unsubscribed"));
        assert!(may_send("MARKETING", true, Some("complaint")).unwrap_err().contains("complained"));
        assert!(may_send("MARKETING", true, Some("bounce")).unwrap_err().contains("hard-bounced"));
    }
}
