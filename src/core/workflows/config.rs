//! Step configs: each step type's config checked and made a [`StepConfig`], with what it refers
//! to (templates, events, segments, fields). What a client sends may take Plunk's names and
//! forms; what comes out is the one form the step row stores and the engine runs.

use serde_json::{Map, Value, json};

use super::rules::{MAX_WAIT_SECS, STEP_TYPES, check_text, invalid, required};
use super::step::{
    ConditionStep, Delay, Exit, Recipient, SendEmail, StepConfig, StepRefs, Trigger, Unit, UpdateContact,
    WaitForEvent, Webhook,
};
use crate::core::conditions::Condition;
use crate::core::contacts::parse_email;
use crate::core::data::{DataPatch, type_name};
use crate::core::error::{Error, FieldError, Result};
use crate::core::render::{self, Mode};

const WEBHOOK_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];
const MAX_URL: usize = 2048;
const MAX_HEADERS: usize = 50;

/// An event name a trigger or a wait names: any event, the service's own included.
fn check_event_name(value: Option<&Value>, field: &str) -> Result<String> {
    match value {
        None | Some(Value::Null) => Err(required(field)),
        Some(Value::String(name)) => {
            let name = name.trim();
            if name.is_empty()
                || name.chars().count() > crate::core::conditions::MAX_EVENT_NAME
                || name.chars().any(char::is_control)
            {
                return Err(invalid(
                    field,
                    "invalid_string",
                    format!("{field} is 1 to {} characters", crate::core::conditions::MAX_EVENT_NAME),
                ));
            }
            Ok(name.to_string())
        }
        Some(other) => Err(Error::Invalid(vec![
            FieldError::new(field, "invalid_type", format!("{field} is a string"))
                .received(json!(type_name(other))),
        ])),
    }
}

/// The config object of a step, with only the `allowed` keys.
fn object<'a>(config: &'a Value, allowed: &[&str], field: &str) -> Result<&'a Map<String, Value>> {
    let Value::Object(map) = config else {
        return Err(Error::Invalid(vec![
            FieldError::new(field, "invalid_type", format!("{field} is an object"))
                .received(json!(type_name(config))),
        ]));
    };
    if let Some(key) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
        let takes = if allowed.is_empty() { "nothing".to_string() } else { allowed.join(", ") };
        return Err(invalid(
            &format!("{field}.{key}"),
            "unrecognized_key",
            format!("unknown key {key:?}; this config takes {takes}"),
        ));
    }
    Ok(map)
}

/// A trigger config `{eventName}` (the name may be left out until the workflow is enabled).
pub fn check_trigger_config(config: &Value, field: &str) -> Result<Trigger> {
    let map = object(config, &["eventName"], field)?;
    let event_name = match map.get("eventName") {
        None | Some(Value::Null) => None,
        value => Some(check_event_name(value, &format!("{field}.eventName"))?),
    };
    Ok(Trigger { event_name })
}

/// Checks a step's config for its type (CPU only: templates parse here) and returns it typed,
/// with what it refers to. Errors are [`Error::Invalid`] naming the key under `field`.
pub fn check_config(kind: &str, config: &Value, field: &str) -> Result<(StepConfig, StepRefs)> {
    let checked = match kind {
        "TRIGGER" => StepConfig::Trigger(check_trigger_config(config, field)?),
        "SEND_EMAIL" => StepConfig::SendEmail(send_email(config, field)?),
        "DELAY" => StepConfig::Delay(delay(config, field)?),
        "WAIT_FOR_EVENT" => StepConfig::WaitForEvent(wait_for_event(config, field)?),
        "CONDITION" => {
            // The condition parsed here (its errors named under `field`) is the one referred to.
            let (step, condition) = condition(config, field)?;
            let refs = StepRefs {
                events: condition.references().events,
                condition: Some(condition),
                ..StepRefs::default()
            };
            return Ok((StepConfig::Condition(step), refs));
        }
        "WEBHOOK" => StepConfig::Webhook(webhook(config, field)?),
        "UPDATE_CONTACT" => StepConfig::UpdateContact(update_contact(config, field)?),
        "EXIT" => StepConfig::Exit(exit(config, field)?),
        other => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    "type",
                    "invalid_enum_value",
                    format!("type is one of {}", STEP_TYPES.join(", ")),
                )
                .received(json!(other)),
            ]));
        }
    };
    let refs = checked.references();
    Ok((checked, refs))
}

/// WEBHOOK `{url, method?, headers?, body?}`, the method POST unless given.
fn webhook(config: &Value, field: &str) -> Result<Webhook> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["url", "method", "headers", "body"], field)?;
    let url = map.get("url").and_then(Value::as_str).map(str::trim).unwrap_or_default();
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) || url.len() > MAX_URL {
        return Err(invalid(
            &at("url"),
            "invalid_string",
            format!("url is an http:// or https:// address of at most {MAX_URL} characters"),
        ));
    }
    render::check(url, Mode::Text, &at("url"))?;
    let method = match map.get("method") {
        None | Some(Value::Null) => "POST".to_string(),
        Some(Value::String(m)) if WEBHOOK_METHODS.contains(&m.to_ascii_uppercase().as_str()) => {
            m.to_ascii_uppercase()
        }
        Some(other) => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    at("method"),
                    "invalid_enum_value",
                    format!("method is one of {}", WEBHOOK_METHODS.join(", ")),
                )
                .received(other.clone()),
            ]));
        }
    };
    let headers = match map.get("headers").filter(|h| !h.is_null()) {
        Some(headers) => Some(check_webhook_headers(headers, &at("headers"))?),
        None => None,
    };
    let body = map.get("body").filter(|b| !b.is_null()).cloned();
    if let Some(body) = &body {
        check_templates_in(body, &at("body"))?;
    }
    Ok(Webhook { url: url.to_string(), method, headers, body })
}

/// EXIT `{reason?}`.
fn exit(config: &Value, field: &str) -> Result<Exit> {
    let at = format!("{field}.reason");
    let map = object(config, &["reason"], field)?;
    match map.get("reason") {
        None | Some(Value::Null) => Ok(Exit::default()),
        Some(Value::String(reason)) => Ok(Exit { reason: check_text(Some(reason.clone()), &at)? }),
        Some(other) => Err(Error::Invalid(vec![
            FieldError::new(at, "invalid_type", "reason is a string").received(json!(type_name(other))),
        ])),
    }
}

/// A value given under our name or Plunk's: 422 naming the alias when both are given and
/// differ.
fn one_of<'a>(
    map: &'a Map<String, Value>,
    (name, alias): (&str, &str),
    field: &str,
) -> Result<Option<&'a Value>> {
    let given = |key: &str| map.get(key).filter(|v| !v.is_null());
    match (given(name), given(alias)) {
        (Some(a), Some(b)) if a != b => Err(invalid(
            &format!("{field}.{alias}"),
            "conflict",
            format!("{alias} is another name for {name}: give one of them"),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

/// SEND_EMAIL `{templateId, recipient?: {type: CONTACT | CUSTOM, email?}}`; Plunk's
/// `recipient.customEmail` is `email` (and ignored with CONTACT, as Plunk ignores it).
fn send_email(config: &Value, field: &str) -> Result<SendEmail> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["templateId", "recipient"], field)?;
    let template = match map.get("templateId") {
        Some(Value::String(id)) if !id.trim().is_empty() => id.trim().to_string(),
        _ => return Err(required(&at("templateId"))),
    };
    let recipient = match map.get("recipient") {
        None | Some(Value::Null) => Recipient::Contact,
        Some(value) => {
            let path = at("recipient");
            let r = object(value, &["type", "email", "customEmail"], &path)?;
            match r.get("type").and_then(Value::as_str) {
                Some("CONTACT") | None if r.get("email").is_none_or(Value::is_null) => Recipient::Contact,
                Some("CONTACT") | None => {
                    return Err(invalid(
                        &format!("{path}.email"),
                        "unrecognized_key",
                        "email goes with type CUSTOM; CONTACT sends to the execution's contact",
                    ));
                }
                Some("CUSTOM") => {
                    let email = one_of(r, ("email", "customEmail"), &path)?
                        .and_then(Value::as_str)
                        .ok_or_else(|| required(&format!("{path}.email")))?;
                    Recipient::Custom { email: parse_email(email, &format!("{path}.email"))? }
                }
                Some(_) => {
                    return Err(Error::Invalid(vec![
                        FieldError::new(
                            format!("{path}.type"),
                            "invalid_enum_value",
                            "recipient.type is CONTACT or CUSTOM",
                        )
                        .received(r["type"].clone()),
                    ]));
                }
            }
        }
    };
    Ok(SendEmail { template_id: template, recipient })
}

/// DELAY `{amount > 0, unit}`, at most 365 days. A fractional amount (Plunk's `1.5` hours) is
/// stored as the same time in the longest unit that makes it whole (`90` minutes).
fn delay(config: &Value, field: &str) -> Result<Delay> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["amount", "unit"], field)?;
    let unit_value = map.get("unit").cloned().unwrap_or(Value::Null);
    let Some(unit) = Unit::ALL.into_iter().find(|u| unit_value.as_str() == Some(u.name())) else {
        return Err(Error::Invalid(vec![
            FieldError::new(at("unit"), "invalid_enum_value", "unit is seconds, minutes, hours or days")
                .received(unit_value),
        ]));
    };
    let amount = map
        .get("amount")
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n > 0.0)
        .ok_or_else(|| invalid(&at("amount"), "invalid_type", "amount is a number above 0"))?;
    let unit_secs = unit.seconds();
    if amount * unit_secs as f64 > MAX_WAIT_SECS as f64 {
        return Err(invalid(&at("amount"), "too_big", "a delay is at most 365 days"));
    }
    if amount.fract() == 0.0 {
        return Ok(Delay { amount: amount as i64, unit });
    }
    let seconds = (amount * unit_secs as f64).round() as i64;
    if seconds < 1 {
        return Err(invalid(&at("amount"), "too_small", "a delay is at least a second"));
    }
    let unit = Unit::ALL.into_iter().find(|u| seconds % u.seconds() == 0).unwrap_or(Unit::Seconds);
    Ok(Delay { amount: seconds / unit.seconds(), unit })
}

/// WAIT_FOR_EVENT `{eventName, timeoutSeconds?}`; Plunk's `timeout` (seconds, perhaps with a
/// fraction, rounded up) is `timeoutSeconds`.
fn wait_for_event(config: &Value, field: &str) -> Result<WaitForEvent> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["eventName", "timeoutSeconds", "timeout"], field)?;
    let event_name = check_event_name(map.get("eventName"), &at("eventName"))?;
    let Some(value) = one_of(map, ("timeoutSeconds", "timeout"), field)? else {
        return Ok(WaitForEvent { event_name, timeout_seconds: None });
    };
    let seconds = value
        .as_f64()
        .filter(|n| n.is_finite() && *n > 0.0 && *n <= MAX_WAIT_SECS as f64)
        .map(|n| n.ceil() as i64)
        .filter(|_| map.contains_key("timeout") || value.is_i64())
        .ok_or_else(|| {
            invalid(
                &at("timeoutSeconds"),
                "invalid_type",
                "timeoutSeconds is a whole number of seconds from 1 to 365 days",
            )
        })?;
    Ok(WaitForEvent { event_name, timeout_seconds: Some(seconds) })
}

/// CONDITION `{condition}` (a condition tree), or Plunk's single test `{field, operator,
/// value}`, stored as the tree of that one filter.
fn condition(config: &Value, field: &str) -> Result<(ConditionStep, Condition)> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["condition", "field", "operator", "value", "mode", "branches"], field)?;
    if map.contains_key("mode") || map.contains_key("branches") {
        return Err(invalid(
            &at("mode"),
            "unsupported",
            "a CONDITION step branches yes or no; for more ways, chain CONDITION steps (Plunk's multi-branch mode is not supported)",
        ));
    }
    let single = ["field", "operator", "value"].iter().any(|k| map.contains_key(*k));
    let tree = match map.get("condition").filter(|v| !v.is_null()) {
        Some(_) if single => {
            return Err(invalid(
                &at("field"),
                "conflict",
                "give a condition tree or a single {field, operator, value}, not both",
            ));
        }
        Some(tree) => tree.clone(),
        None if single => {
            let mut filter = Map::new();
            for key in ["field", "operator", "value"] {
                if let Some(v) = map.get(key) {
                    filter.insert(key.into(), v.clone());
                }
            }
            json!({ "logic": "AND", "groups": [{ "filters": [Value::Object(filter)] }] })
        }
        None => return Err(required(&at("condition"))),
    };
    let condition = if single {
        // The single test's errors name its own keys (`config.operator`), not the tree made of it.
        let inside = format!("{field}.groups[0].filters[0]");
        Condition::parse_in_workflow(&tree, field).map_err(|mut e| {
            if let Error::Invalid(items) = &mut e {
                for item in items {
                    item.field = item.field.replacen(&inside, field, 1);
                }
            }
            e
        })?
    } else {
        Condition::parse_in_workflow(&tree, &at("condition"))?
    };
    Ok((ConditionStep { condition: crate::core::conditions::canonical(&tree) }, condition))
}

/// UPDATE_CONTACT `{data?, subscribed?}` with the custom-field rules; Plunk's `updates` is
/// `data`, and its `subscriptionAction` (`subscribe`, `unsubscribe`, `none`) is `subscribed`.
fn update_contact(config: &Value, field: &str) -> Result<UpdateContact> {
    let at = |key: &str| format!("{field}.{key}");
    let map = object(config, &["data", "subscribed", "updates", "subscriptionAction"], field)?;
    let data = one_of(map, ("data", "updates"), field)?;
    let patch = DataPatch::parse(data, &at("data"))?;
    if !patch.transient.is_empty() {
        return Err(invalid(
            &at("data"),
            "invalid_type",
            "an update stores every value: leave out the {value, persistent: false} form",
        ));
    }
    let subscribed = match map.get("subscribed") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            return Err(Error::Invalid(vec![
                FieldError::new(at("subscribed"), "invalid_type", "subscribed is true or false")
                    .received(json!(type_name(other))),
            ]));
        }
    };
    let action = match map.get("subscriptionAction") {
        None | Some(Value::Null) => None,
        Some(Value::String(a)) if a == "none" => None,
        Some(Value::String(a)) if a == "subscribe" => Some(true),
        Some(Value::String(a)) if a == "unsubscribe" => Some(false),
        Some(other) => {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    at("subscriptionAction"),
                    "invalid_enum_value",
                    "subscriptionAction is subscribe, unsubscribe or none",
                )
                .received(other.clone()),
            ]));
        }
    };
    let subscribed = match (subscribed, action) {
        (Some(a), Some(b)) if a != b => {
            return Err(invalid(
                &at("subscriptionAction"),
                "conflict",
                "subscriptionAction says the opposite of subscribed: give one of them",
            ));
        }
        (a, b) => a.or(b),
    };
    if data.is_none() && subscribed.is_none() {
        return Err(invalid(field, "required", "an update names data, subscribed, or both"));
    }
    Ok(UpdateContact { data: data.cloned(), subscribed })
}

/// A step's config with the template Plunk's clients give beside it (`templateId`, over
/// `config.templateId`): only a SEND_EMAIL step takes one, and cannot be left without one.
pub fn with_template(kind: &str, mut config: Value, template: Option<Option<String>>) -> Result<Value> {
    match (kind, template) {
        (_, None) => {}
        ("SEND_EMAIL", Some(Some(id))) => {
            if let Value::Object(map) = &mut config {
                map.insert("templateId".into(), Value::String(id));
            }
        }
        ("SEND_EMAIL", Some(None)) => {
            return Err(invalid(
                "templateId",
                "required",
                "a SEND_EMAIL step sends a template: templateId stays",
            ));
        }
        (_, Some(None)) => {}
        (_, Some(Some(_))) => {
            return Err(invalid(
                "templateId",
                "unrecognized_key",
                format!("a {kind} step takes no template"),
            ));
        }
    }
    Ok(config)
}

/// Webhook headers: an object of at most 50 names (HTTP tokens) with template values.
fn check_webhook_headers(headers: &Value, field: &str) -> Result<Map<String, Value>> {
    let map = match headers {
        Value::Object(map) => map,
        other => {
            return Err(Error::Invalid(vec![
                FieldError::new(field, "invalid_type", "headers is an object of names and values")
                    .received(json!(type_name(other))),
            ]));
        }
    };
    if map.len() > MAX_HEADERS {
        return Err(invalid(field, "too_big", format!("at most {MAX_HEADERS} headers")));
    }
    for (name, value) in map {
        let path = format!("{field}.{name}");
        let token = !name.is_empty()
            && name.len() <= 256
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            return Err(invalid(&path, "invalid_string", "a header name is letters, digits and -"));
        }
        let Value::String(value) = value else {
            return Err(invalid(&path, "invalid_type", "a header value is a string"));
        };
        if value.contains(['\r', '\n']) || value.len() > MAX_URL {
            return Err(invalid(
                &path,
                "invalid_string",
                "a header value is one line of at most 2048 characters",
            ));
        }
        render::check(value, Mode::Text, &path)?;
    }
    Ok(map.clone())
}

/// Checks every string inside a webhook body as a template.
fn check_templates_in(value: &Value, field: &str) -> Result<()> {
    match value {
        Value::String(text) => render::check(text, Mode::Text, field),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, item)| check_templates_in(item, &format!("{field}[{i}]"))),
        Value::Object(map) => {
            map.iter().try_for_each(|(k, item)| check_templates_in(item, &format!("{field}.{k}")))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
