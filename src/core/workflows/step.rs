//! [`StepConfig`]: a step's config, typed. Checking a config ([`super::config::check_config`]) makes one
//! from what a client sent; the step row stores it as JSON beside its type; the engine reads it
//! back to run the step. Both sides use this one type, so a key the check stores is the key the
//! engine reads.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::core::conditions::Condition;

/// A step's config by its type. Serialized adjacently (`{"type": .., "config": {..}}`): the
/// step row keeps the two parts in two columns ([`StepConfig::stored`], [`StepConfig::to_config`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "config", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepConfig {
    Trigger(Trigger),
    SendEmail(SendEmail),
    Delay(Delay),
    WaitForEvent(WaitForEvent),
    Condition(ConditionStep),
    Webhook(Webhook),
    UpdateContact(UpdateContact),
    Exit(Exit),
}

/// TRIGGER `{eventName?}`: the event that starts the workflow (named by the time it is enabled).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_name: Option<String>,
}

/// SEND_EMAIL `{templateId, recipient}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendEmail {
    pub template_id: String,
    #[serde(default)]
    pub recipient: Recipient,
}

/// Who a SEND_EMAIL step's email goes to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Recipient {
    /// The execution's contact.
    #[default]
    Contact,
    /// Someone else, about the contact.
    Custom { email: String },
}

/// DELAY `{amount, unit}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delay {
    pub amount: i64,
    pub unit: Unit,
}

impl Delay {
    /// How long the delay lasts, in milliseconds (saturating).
    pub fn millis(&self) -> i64 {
        self.amount.saturating_mul(self.unit.seconds()).saturating_mul(1000)
    }
}

/// A DELAY's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Days,
    Hours,
    Minutes,
    Seconds,
}

impl Unit {
    /// Longest first. Beyond appliance.md's three units: `seconds`, for tests and follow-ups
    /// within the minute.
    pub const ALL: [Unit; 4] = [Unit::Days, Unit::Hours, Unit::Minutes, Unit::Seconds];

    pub fn seconds(self) -> i64 {
        match self {
            Unit::Days => 86_400,
            Unit::Hours => 3600,
            Unit::Minutes => 60,
            Unit::Seconds => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Unit::Days => "days",
            Unit::Hours => "hours",
            Unit::Minutes => "minutes",
            Unit::Seconds => "seconds",
        }
    }
}

/// WAIT_FOR_EVENT `{eventName, timeoutSeconds?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitForEvent {
    pub event_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
}

/// CONDITION `{condition}`: the condition tree, in its canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionStep {
    pub condition: Value,
}

impl ConditionStep {
    /// The tree as a condition (ids of segments not yet resolved).
    pub fn parse(&self, field: &str) -> crate::core::Result<Condition> {
        Condition::parse_in_workflow(&self.condition, field)
    }
}

/// WEBHOOK `{url, method, headers?, body?}`: the url, header values and the strings of the body
/// are templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    pub url: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// UPDATE_CONTACT `{data?, subscribed?}` (at least one of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateContact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribed: Option<bool>,
}

/// EXIT `{reason?}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Exit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a step's config names that must exist in the project (checked in the write that saves
/// it), and what it refers to for the usage lists.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StepRefs {
    pub template: Option<String>,
    pub condition: Option<Condition>,
    pub events: Vec<String>,
}

impl StepConfig {
    /// The config stored in a step row of type `kind`; `None` when it cannot be read as that
    /// type (a row written by hand, or by a version that stored another form).
    pub fn stored(kind: &str, config: &str) -> Option<StepConfig> {
        let config: Value = serde_json::from_str(config).ok()?;
        serde_json::from_value(json!({ "type": kind, "config": config })).ok()
    }

    /// The step type: `TRIGGER`, `SEND_EMAIL`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            StepConfig::Trigger(_) => "TRIGGER",
            StepConfig::SendEmail(_) => "SEND_EMAIL",
            StepConfig::Delay(_) => "DELAY",
            StepConfig::WaitForEvent(_) => "WAIT_FOR_EVENT",
            StepConfig::Condition(_) => "CONDITION",
            StepConfig::Webhook(_) => "WEBHOOK",
            StepConfig::UpdateContact(_) => "UPDATE_CONTACT",
            StepConfig::Exit(_) => "EXIT",
        }
    }

    /// The config as the step row stores it (without its type).
    pub fn to_config(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("config").unwrap_or_else(|| json!({})),
            _ => json!({}),
        }
    }

    /// What the config refers to, read without checking it again: the registry is rewritten
    /// from every step on each change, inside the writer's transaction, where templates are not
    /// parsed.
    pub fn references(&self) -> StepRefs {
        let mut refs = StepRefs::default();
        match self {
            StepConfig::Trigger(t) => refs.events.extend(t.event_name.clone()),
            StepConfig::WaitForEvent(w) => refs.events.push(w.event_name.clone()),
            StepConfig::SendEmail(s) => refs.template = Some(s.template_id.clone()),
            StepConfig::Condition(c) => {
                if let Ok(condition) = c.parse("") {
                    refs.events.extend(condition.references().events);
                    refs.condition = Some(condition);
                }
            }
            StepConfig::Delay(_)
            | StepConfig::Webhook(_)
            | StepConfig::UpdateContact(_)
            | StepConfig::Exit(_) => {}
        }
        refs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_is_stored_without_its_type_and_read_back_whole() {
        let configs = [
            StepConfig::Trigger(Trigger { event_name: Some("signup".into()) }),
            StepConfig::Trigger(Trigger::default()),
            StepConfig::SendEmail(SendEmail { template_id: "t1".into(), recipient: Recipient::Contact }),
            StepConfig::SendEmail(SendEmail {
                template_id: "t1".into(),
                recipient: Recipient::Custom { email: "ops@x.test".into() },
            }),
            StepConfig::Delay(Delay { amount: 90, unit: Unit::Minutes }),
            StepConfig::WaitForEvent(WaitForEvent { event_name: "paid".into(), timeout_seconds: Some(60) }),
            StepConfig::Webhook(Webhook {
                url: "https://x.test".into(),
                method: "POST".into(),
                headers: None,
                body: Some(json!({"a": "{{ email }}"})),
            }),
            StepConfig::UpdateContact(UpdateContact { data: None, subscribed: Some(false) }),
            StepConfig::Exit(Exit::default()),
        ];
        for config in configs {
            let text = config.to_config().to_string();
            assert_eq!(StepConfig::stored(config.kind(), &text), Some(config));
        }
        assert_eq!(
            StepConfig::SendEmail(SendEmail {
                template_id: "t1".into(),
                recipient: Recipient::Custom { email: "ops@x.test".into() }
            })
            .to_config(),
            json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "email": "ops@x.test"}})
        );
        assert_eq!(StepConfig::Exit(Exit::default()).to_config(), json!({}));
    }

    #[test]
    fn a_config_that_is_not_its_type_is_not_read() {
        assert_eq!(StepConfig::stored("DELAY", r#"{"amount": "soon", "unit": "days"}"#), None);
        assert_eq!(StepConfig::stored("DELAY", r#"{"amount": 1, "unit": "weeks"}"#), None);
        assert_eq!(StepConfig::stored("TELEPORT", "{}"), None);
        assert_eq!(StepConfig::stored("EXIT", "not json"), None);
    }
}
