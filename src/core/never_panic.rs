//! The request checkers never panic, whatever they are given: arbitrary JSON, with strings of
//! any Unicode, into every checker a request reaches before anything is stored. A panic in a
//! handler is a 500 at best; this keeps the next byte-slice or unwrap from reaching one (a
//! webhook pattern of `é` once did).

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::conditions::{Condition, canonical};
use super::workflows::{self, STEP_TYPES};

/// Any JSON value: a few levels deep, with keys the checkers know mixed among unknown ones.
fn any_json() -> impl Strategy<Value = Value> {
    let keys = prop_oneof![
        Just("field".to_string()),
        Just("operator".to_string()),
        Just("value".to_string()),
        Just("groups".to_string()),
        Just("filters".to_string()),
        Just("logic".to_string()),
        Just("templateId".to_string()),
        Just("recipient".to_string()),
        Just("eventName".to_string()),
        Just("timeout".to_string()),
        Just("amount".to_string()),
        Just("unit".to_string()),
        Just("url".to_string()),
        Just("updates".to_string()),
        Just("branch".to_string()),
        "\\PC{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,24}".prop_map(Value::String),
        prop_oneof![Just("é*é"), Just("*"), Just("{{ x"), Just("data.a.b"), Just("event.x"), Just("days")]
            .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn checkers_answer_without_panicking(value in any_json(), text in "\\PC{0,40}") {
        let _ = super::webhooks::check_events(&value);
        let _ = super::webhooks::check_url(&text);
        for kind in STEP_TYPES.iter().chain(&["TRIGGER", "OTHER"]) {
            let _ = workflows::check_config(kind, &value, "config");
            let _ = workflows::with_template(kind, value.clone(), Some(Some(text.clone())));
        }
        let _ = workflows::check_trigger_config(&value, "triggerConfig");
        let _ = workflows::branch_named(Some(&text), Some(&value), Some(&text));
        let _ = Condition::parse(&value, "condition");
        let _ = Condition::parse_in_workflow(&value, "condition");
        let _ = canonical(&value);
        let _ = super::data::DataPatch::parse(Some(&value), "data");
        let _ = super::send::recipients(&value);
        let _ = super::send::check_attachments(std::slice::from_ref(&value), 1 << 20);
        let _ = super::contacts::parse_email(&text, "email");
        let _ = crate::clock::parse_date(&text);
        let _ = super::render::check(&text, super::render::Mode::Html, "body");
        let _ = crate::mail::text::text_of(&text);
    }
}
