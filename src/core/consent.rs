//! Consent: who may be sent marketing mail. Every producer (the send API, workflows, the
//! delivery worker for campaigns and queued mail) asks this one rule.

use crate::core::vocabulary::EmailKind;
use crate::db::contacts::Contact;

/// The marketing rule, one for every producer: MARKETING mail goes only to a subscribed contact
/// that has not paused marketing mail at `now` (`snoozedUntil`) and is not suppressed
/// (`suppressed`: why it is, when the caller knows). The reason otherwise.
pub fn may_send(kind: &str, contact: &Contact, suppressed: Option<&str>, now: i64) -> Result<(), String> {
    if kind != EmailKind::Marketing {
        return Ok(());
    }
    if !contact.subscribed {
        return Err("the contact is unsubscribed from marketing email".into());
    }
    if let Some(until) = contact.snoozed_until.filter(|until| *until > now) {
        return Err(format!("the contact paused marketing email until {}", crate::clock::iso(until)));
    }
    if let Some(reason) = suppressed {
        let why = if reason == "complaint" { "complained about earlier mail" } else { "hard-bounced" };
        return Err(format!("the contact is suppressed for marketing email (it {why})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Contact, may_send};

    #[test]
    fn marketing_needs_a_subscribed_unsuppressed_contact() {
        let contact = |subscribed, snoozed_until| Contact { subscribed, snoozed_until, ..Contact::default() };
        let (on, off) = (contact(true, None), contact(false, None));
        assert!(may_send("TRANSACTIONAL", &off, Some("complaint"), 0).is_ok(), "not marketing");
        assert!(may_send("MARKETING", &on, None, 0).is_ok());
        assert!(may_send("MARKETING", &off, None, 0).unwrap_err().contains("unsubscribed"));
        assert!(may_send("MARKETING", &on, Some("complaint"), 0).unwrap_err().contains("complained"));
        assert!(may_send("MARKETING", &on, Some("bounce"), 0).unwrap_err().contains("hard-bounced"));
        let paused = contact(true, Some(1_000));
        assert!(
            may_send("MARKETING", &paused, None, 999).unwrap_err().contains("paused marketing email until")
        );
        assert!(may_send("MARKETING", &paused, None, 1_000).is_ok(), "the pause is over");
        assert!(may_send("TRANSACTIONAL", &paused, None, 0).is_ok(), "a pause is of marketing mail");
    }
}
