//! The step configs a client may send, and the form each is stored in.

use super::*;
use serde_json::json;

#[test]
fn references_read_back_from_a_stored_config_are_what_the_check_found() {
    let configs = [
        ("TRIGGER", json!({"eventName": "signup"})),
        ("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeoutSeconds": 60})),
        ("SEND_EMAIL", json!({"templateId": "t1"})),
        (
            "CONDITION",
            json!({"condition": {"groups": [{"filters": [
            {"field": "data.plan", "operator": "equals", "value": "pro"},
            {"field": "opened", "operator": "triggered"},
            {"operator": "memberOfSegment", "value": "s1"}]}]}}),
        ),
        ("WEBHOOK", json!({"url": "https://x.test/{{ contact.email }}"})),
        ("DELAY", json!({"amount": 1, "unit": "days"})),
    ];
    for (kind, config) in configs {
        let (stored, refs) = check_config(kind, &config, "config").unwrap();
        let read = StepConfig::stored(kind, &stored.to_config().to_string()).unwrap();
        assert_eq!(read, stored, "{kind}");
        assert_eq!(read.references(), refs, "{kind}");
    }
}

#[test]
fn configs_are_checked_per_type() {
    let ok = |kind: &str, config: Value| check_config(kind, &config, "config").map(|(v, _)| v.to_config());
    assert_eq!(
        ok("DELAY", json!({"amount": 2, "unit": "hours"})).unwrap(),
        json!({"amount": 2, "unit": "hours"})
    );
    assert!(ok("DELAY", json!({"amount": 0, "unit": "hours"})).is_err());
    assert!(ok("DELAY", json!({"amount": 366, "unit": "days"})).is_err());
    assert!(ok("DELAY", json!({"amount": 1, "unit": "weeks"})).is_err());
    assert_eq!(
        ok("DELAY", json!({"amount": 2, "unit": "seconds"})).unwrap(),
        json!({"amount": 2, "unit": "seconds"})
    );
    assert!(ok("DELAY", json!({"amount": 1, "unit": "days", "extra": 1})).is_err());
    assert_eq!(
        ok("SEND_EMAIL", json!({"templateId": "t1"})).unwrap(),
        json!({"templateId": "t1", "recipient": {"type": "CONTACT"}})
    );
    assert!(ok("SEND_EMAIL", json!({"templateId": "t1", "recipient": {"type": "CUSTOM"}})).is_err());
    assert!(
        ok("SEND_EMAIL", json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "email": "x"}})).is_err()
    );
    assert!(ok("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeoutSeconds": 0})).is_err());
    assert!(ok("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeoutSeconds": 60})).is_ok());
    assert!(ok("WEBHOOK", json!({"url": "ftp://x"})).is_err());
    assert!(ok("WEBHOOK", json!({"url": "https://x/{{ contact.email"})).is_err(), "template syntax");
    assert_eq!(ok("WEBHOOK", json!({"url": "https://x", "method": "put"})).unwrap()["method"], "PUT");
    assert!(ok("WEBHOOK", json!({"url": "https://x", "headers": {"X-A": "1\r\nX-B: 2"}})).is_err());
    assert!(ok("UPDATE_CONTACT", json!({})).is_err());
    assert!(ok("UPDATE_CONTACT", json!({"subscribed": "yes"})).is_err());
    assert!(ok("UPDATE_CONTACT", json!({"data": {"plan": "pro"}})).is_ok());
    assert_eq!(ok("EXIT", json!({})).unwrap(), json!({}));
    let condition = json!({"condition": {"logic": "AND", "groups": [{"filters": [
        {"field": "event.amount", "operator": "greaterThan", "value": 10},
        {"field": "workflow.source", "operator": "equals", "value": "ads"}]}]}});
    assert!(ok("CONDITION", condition).is_ok(), "event.* and workflow.* fields");
    assert_eq!(ok("TRIGGER", json!({})).unwrap(), json!({}), "named when the workflow is enabled");
    assert_eq!(ok("TRIGGER", json!({"eventName": " signup "})).unwrap(), json!({"eventName": "signup"}));
}

#[test]
fn plunk_step_configs_are_stored_in_our_form() {
    let ok = |kind: &str, config: Value| check_config(kind, &config, "config").map(|(v, _)| v.to_config());
    let refused = |kind: &str, config: Value| ok(kind, config).unwrap_err().kind();
    // SEND_EMAIL's custom recipient.
    assert_eq!(
        ok(
            "SEND_EMAIL",
            json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "customEmail": "ops@x.test"}})
        )
        .unwrap(),
        json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "email": "ops@x.test"}})
    );
    assert_eq!(
        ok(
            "SEND_EMAIL",
            json!({"templateId": "t1", "recipient": {"type": "CONTACT", "customEmail": "ops@x.test"}})
        )
        .unwrap(),
        json!({"templateId": "t1", "recipient": {"type": "CONTACT"}}),
        "Plunk ignores customEmail with CONTACT"
    );
    assert_eq!(
        refused(
            "SEND_EMAIL",
            json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "email": "a@x.test", "customEmail": "b@x.test"}})
        ),
        "invalid"
    );
    // WAIT_FOR_EVENT's timeout, in seconds.
    assert_eq!(
        ok("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeout": 86400})).unwrap(),
        json!({"eventName": "paid", "timeoutSeconds": 86400})
    );
    assert_eq!(
        ok("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeout": 1.5})).unwrap()["timeoutSeconds"],
        2
    );
    assert_eq!(refused("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeout": 31_536_001})), "invalid");
    assert_eq!(refused("WAIT_FOR_EVENT", json!({"eventName": "paid", "timeoutSeconds": 1.5})), "invalid");
    // DELAY's fractional amounts.
    assert_eq!(
        ok("DELAY", json!({"amount": 1.5, "unit": "hours"})).unwrap(),
        json!({"amount": 90, "unit": "minutes"})
    );
    assert_eq!(
        ok("DELAY", json!({"amount": 0.5, "unit": "days"})).unwrap(),
        json!({"amount": 12, "unit": "hours"})
    );
    assert_eq!(
        ok("DELAY", json!({"amount": 0.25, "unit": "minutes"})).unwrap(),
        json!({"amount": 15, "unit": "seconds"})
    );
    assert_eq!(refused("DELAY", json!({"amount": 365.5, "unit": "days"})), "invalid");
    // CONDITION's single test, with its contact.* fields.
    assert_eq!(
        ok("CONDITION", json!({"field": "contact.data.plan", "operator": "equals", "value": "pro"})).unwrap(),
        json!({"condition": {"logic": "AND", "groups": [{"filters": [{"field": "data.plan", "operator": "equals", "value": "pro"}]}]}})
    );
    assert!(
        ok("CONDITION", json!({"field": "event.amount", "operator": "greaterThan", "value": 10})).is_ok()
    );
    assert_eq!(
        refused("CONDITION", json!({"mode": "multi", "field": "data.plan", "branches": []})),
        "invalid"
    );
    let unknown =
        ok("CONDITION", json!({"field": "data.plan", "operator": "isAbout", "value": 1})).unwrap_err();
    assert_eq!(unknown.fields()[0].field, "config.operator", "the single test's own key is named");
    assert_eq!(
        refused(
            "CONDITION",
            json!({"field": "data.plan", "operator": "exists", "condition": {"groups": []}})
        ),
        "invalid"
    );
    // UPDATE_CONTACT's updates and subscriptionAction.
    assert_eq!(
        ok("UPDATE_CONTACT", json!({"updates": {"plan": "pro"}, "subscriptionAction": "unsubscribe"}))
            .unwrap(),
        json!({"data": {"plan": "pro"}, "subscribed": false})
    );
    assert_eq!(
        ok("UPDATE_CONTACT", json!({"updates": {"plan": "pro"}, "subscriptionAction": "none"})).unwrap(),
        json!({"data": {"plan": "pro"}})
    );
    assert_eq!(refused("UPDATE_CONTACT", json!({"subscriptionAction": "none"})), "invalid", "nothing to do");
    assert_eq!(refused("UPDATE_CONTACT", json!({"subscriptionAction": "maybe"})), "invalid");
    assert_eq!(
        refused("UPDATE_CONTACT", json!({"subscribed": true, "subscriptionAction": "unsubscribe"})),
        "invalid"
    );
}
