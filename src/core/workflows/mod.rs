//! Workflows (appliance.md §11): checking a workflow's fields, its steps' configs and the
//! changes to its graph, and the view the API answers with.
//!
//! The graph's rules: one TRIGGER step, made with the workflow and never added or deleted; a
//! step leads to at most one next step per branch (CONDITION: `yes`/`no`, WAIT_FOR_EVENT:
//! `event`/`timeout`, every other step: none), so an execution's path is never ambiguous;
//! nothing leads back to the trigger or away from an EXIT; and every cycle holds a DELAY or a
//! WAIT_FOR_EVENT, so no execution can loop without waiting.

pub mod engine;
pub mod webhook;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::conditions::Condition;
use super::contacts::parse_email;
use super::data::{DataPatch, type_name};
use super::render::{self, Mode};
use crate::db::workflows::{Step, Transition};
use crate::error::{ApiError, FieldError};

/// The step types `POST /workflows/:id/steps` adds (the TRIGGER step comes with the workflow).
pub const STEP_TYPES: &[&str] =
    &["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"];
/// How long a WEBHOOK step waits for its answer (appliance.md §11).
pub const WEBHOOK_TIMEOUT_SECS: u64 = 10;
/// Most steps in one workflow.
pub const MAX_STEPS: usize = 200;
/// The longest DELAY, and the longest timeout of a WAIT_FOR_EVENT.
pub const MAX_WAIT_SECS: i64 = 365 * 24 * 3600;
const WEBHOOK_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];
const MAX_URL: usize = 2048;
const MAX_HEADERS: usize = 50;
const MAX_TEXT: usize = 500;

fn invalid(field: &str, code: &str, message: impl Into<String>) -> ApiError {
    ApiError::invalid_field(field, code, message)
}

fn required(field: &str) -> ApiError {
    invalid(field, "required", format!("{field} is required"))
}

/// A name: 1 to 200 characters.
pub fn check_name(name: &str, field: &str) -> Result<String, ApiError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err(invalid(field, "invalid_string", format!("{field} must be 1 to 200 characters")));
    }
    Ok(name.to_string())
}

/// An optional text of at most 500 characters; empty clears it.
pub fn check_text(text: Option<String>, field: &str) -> Result<Option<String>, ApiError> {
    let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    if text.as_ref().is_some_and(|t| t.chars().count() > MAX_TEXT) {
        return Err(invalid(field, "too_big", format!("{field} is at most {MAX_TEXT} characters")));
    }
    Ok(text)
}

/// An event name a trigger or a wait names: any event, the service's own included.
fn check_event_name(value: Option<&Value>, field: &str) -> Result<String, ApiError> {
    match value {
        None | Some(Value::Null) => Err(required(field)),
        Some(Value::String(name)) => {
            let name = name.trim();
            if name.is_empty()
                || name.chars().count() > super::track::MAX_NAME
                || name.chars().any(char::is_control)
            {
                return Err(invalid(
                    field,
                    "invalid_string",
                    format!("{field} is 1 to {} characters", super::track::MAX_NAME),
                ));
            }
            Ok(name.to_string())
        }
        Some(other) => Err(ApiError::validation(vec![
            FieldError::new(field, "invalid_type", format!("{field} is a string"))
                .received(json!(type_name(other))),
        ])),
    }
}

/// The config object of a step, with only the `allowed` keys.
fn object<'a>(config: &'a Value, allowed: &[&str], field: &str) -> Result<&'a Map<String, Value>, ApiError> {
    let Value::Object(map) = config else {
        return Err(ApiError::validation(vec![
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
pub fn check_trigger_config(config: &Value, field: &str) -> Result<(Value, Option<String>), ApiError> {
    let map = object(config, &["eventName"], field)?;
    let event = match map.get("eventName") {
        None | Some(Value::Null) => None,
        value => Some(check_event_name(value, &format!("{field}.eventName"))?),
    };
    let config = match &event {
        Some(name) => json!({ "eventName": name }),
        None => json!({}),
    };
    Ok((config, event))
}

/// What a step's config names that must exist in the project (checked in the write that saves
/// it), and what it refers to for the usage lists.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StepRefs {
    pub template: Option<String>,
    pub condition: Option<Condition>,
    pub events: Vec<String>,
}

/// Checks a step's config for its type (CPU only: templates parse here) and returns it as it is
/// stored, with what it refers to. Errors are 422 naming the key under `field`.
pub fn check_config(kind: &str, config: &Value, field: &str) -> Result<(Value, StepRefs), ApiError> {
    let at = |key: &str| format!("{field}.{key}");
    let mut refs = StepRefs::default();
    let stored = match kind {
        "TRIGGER" => {
            let (config, event) = check_trigger_config(config, field)?;
            refs.events.extend(event);
            config
        }
        "SEND_EMAIL" => {
            let map = object(config, &["templateId", "recipient"], field)?;
            let template = match map.get("templateId") {
                Some(Value::String(id)) if !id.trim().is_empty() => id.trim().to_string(),
                _ => return Err(required(&at("templateId"))),
            };
            refs.template = Some(template.clone());
            let recipient = match map.get("recipient") {
                None | Some(Value::Null) => json!({ "type": "CONTACT" }),
                Some(value) => {
                    let path = at("recipient");
                    let r = object(value, &["type", "email"], &path)?;
                    match r.get("type").and_then(Value::as_str) {
                        Some("CONTACT") | None if r.get("email").is_none_or(Value::is_null) => {
                            json!({ "type": "CONTACT" })
                        }
                        Some("CONTACT") | None => {
                            return Err(invalid(
                                &format!("{path}.email"),
                                "unrecognized_key",
                                "email goes with type CUSTOM; CONTACT sends to the execution's contact",
                            ));
                        }
                        Some("CUSTOM") => {
                            let email = r
                                .get("email")
                                .and_then(Value::as_str)
                                .ok_or_else(|| required(&format!("{path}.email")))?;
                            json!({ "type": "CUSTOM", "email": parse_email(email, &format!("{path}.email"))? })
                        }
                        Some(_) => {
                            return Err(ApiError::validation(vec![
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
            json!({ "templateId": template, "recipient": recipient })
        }
        "DELAY" => {
            let map = object(config, &["amount", "unit"], field)?;
            let amount =
                map.get("amount").and_then(Value::as_i64).filter(|n| *n > 0).ok_or_else(|| {
                    invalid(&at("amount"), "invalid_type", "amount is a whole number above 0")
                })?;
            let unit = map.get("unit").and_then(Value::as_str).unwrap_or_default();
            let seconds = match unit {
                // Beyond appliance.md's three units: short delays for tests and follow-ups
                // within the minute.
                "seconds" => 1,
                "minutes" => 60,
                "hours" => 3600,
                "days" => 86_400,
                _ => {
                    return Err(ApiError::validation(vec![
                        FieldError::new(
                            at("unit"),
                            "invalid_enum_value",
                            "unit is seconds, minutes, hours or days",
                        )
                        .received(map.get("unit").cloned().unwrap_or(Value::Null)),
                    ]));
                }
            };
            if amount.saturating_mul(seconds) > MAX_WAIT_SECS {
                return Err(invalid(&at("amount"), "too_big", "a delay is at most 365 days"));
            }
            json!({ "amount": amount, "unit": unit })
        }
        "WAIT_FOR_EVENT" => {
            let map = object(config, &["eventName", "timeoutSeconds"], field)?;
            let event = check_event_name(map.get("eventName"), &at("eventName"))?;
            refs.events.push(event.clone());
            match map.get("timeoutSeconds") {
                None | Some(Value::Null) => json!({ "eventName": event }),
                Some(value) => {
                    let seconds =
                        value.as_i64().filter(|n| (1..=MAX_WAIT_SECS).contains(n)).ok_or_else(|| {
                            invalid(
                                &at("timeoutSeconds"),
                                "invalid_type",
                                "timeoutSeconds is a whole number of seconds from 1 to 365 days",
                            )
                        })?;
                    json!({ "eventName": event, "timeoutSeconds": seconds })
                }
            }
        }
        "CONDITION" => {
            let map = object(config, &["condition"], field)?;
            let tree =
                map.get("condition").filter(|v| !v.is_null()).ok_or_else(|| required(&at("condition")))?;
            let condition = Condition::parse_in_workflow(tree, &at("condition"))?;
            refs.events.extend(condition.references().events);
            refs.condition = Some(condition);
            json!({ "condition": super::conditions::canonical(tree) })
        }
        "WEBHOOK" => {
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
                    return Err(ApiError::validation(vec![
                        FieldError::new(
                            at("method"),
                            "invalid_enum_value",
                            format!("method is one of {}", WEBHOOK_METHODS.join(", ")),
                        )
                        .received(other.clone()),
                    ]));
                }
            };
            let mut stored = json!({ "url": url, "method": method });
            if let Some(headers) = map.get("headers").filter(|h| !h.is_null()) {
                stored["headers"] = check_webhook_headers(headers, &at("headers"))?;
            }
            if let Some(body) = map.get("body").filter(|b| !b.is_null()) {
                check_templates_in(body, &at("body"))?;
                stored["body"] = body.clone();
            }
            stored
        }
        "UPDATE_CONTACT" => {
            let map = object(config, &["data", "subscribed"], field)?;
            let data = map.get("data").filter(|d| !d.is_null());
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
                    return Err(ApiError::validation(vec![
                        FieldError::new(at("subscribed"), "invalid_type", "subscribed is true or false")
                            .received(json!(type_name(other))),
                    ]));
                }
            };
            if data.is_none() && subscribed.is_none() {
                return Err(invalid(field, "required", "an update names data, subscribed, or both"));
            }
            let mut stored = Map::new();
            if let Some(data) = data {
                stored.insert("data".into(), data.clone());
            }
            if let Some(subscribed) = subscribed {
                stored.insert("subscribed".into(), Value::Bool(subscribed));
            }
            Value::Object(stored)
        }
        "EXIT" => {
            let map = object(config, &["reason"], field)?;
            match map.get("reason") {
                None | Some(Value::Null) => json!({}),
                Some(Value::String(reason)) => match check_text(Some(reason.clone()), &at("reason"))? {
                    Some(reason) => json!({ "reason": reason }),
                    None => json!({}),
                },
                Some(other) => {
                    return Err(ApiError::validation(vec![
                        FieldError::new(at("reason"), "invalid_type", "reason is a string")
                            .received(json!(type_name(other))),
                    ]));
                }
            }
        }
        other => {
            return Err(ApiError::validation(vec![
                FieldError::new(
                    "type",
                    "invalid_enum_value",
                    format!("type is one of {}", STEP_TYPES.join(", ")),
                )
                .received(json!(other)),
            ]));
        }
    };
    Ok((stored, refs))
}

/// What a stored step config (already checked by [`check_config`]) refers to, read without
/// checking it again: the registry is rewritten from every step on each change, inside the
/// writer's transaction, where templates are not parsed.
pub fn references(kind: &str, config: &Value) -> StepRefs {
    let text = |key: &str| config.get(key).and_then(Value::as_str).map(str::to_string);
    let mut refs = StepRefs::default();
    match kind {
        "TRIGGER" | "WAIT_FOR_EVENT" => refs.events.extend(text("eventName")),
        "SEND_EMAIL" => refs.template = text("templateId"),
        "CONDITION" => {
            if let Some(condition) =
                config.get("condition").and_then(|c| Condition::parse_in_workflow(c, "").ok())
            {
                refs.events.extend(condition.references().events);
                refs.condition = Some(condition);
            }
        }
        _ => {}
    }
    refs
}

/// Webhook headers: an object of at most 50 names (HTTP tokens) with template values.
fn check_webhook_headers(headers: &Value, field: &str) -> Result<Value, ApiError> {
    let map = match headers {
        Value::Object(map) => map,
        other => {
            return Err(ApiError::validation(vec![
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
    Ok(headers.clone())
}

/// Checks every string inside a webhook body as a template.
fn check_templates_in(value: &Value, field: &str) -> Result<(), ApiError> {
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

/// The branches a step's outgoing transitions carry: `None` for steps with one way on.
pub fn branches(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "CONDITION" => Some(&["yes", "no"]),
        "WAIT_FOR_EVENT" => Some(&["event", "timeout"]),
        _ => None,
    }
}

/// Steps an execution waits at, which may close a cycle.
fn waits(kind: &str) -> bool {
    kind == "DELAY" || kind == "WAIT_FOR_EVENT"
}

/// Checks a new transition against the graph of `steps` and `transitions`: both steps exist,
/// the branch fits the step it leaves, that branch is free (409 otherwise), nothing leads to
/// the trigger or away from an EXIT, and no cycle without a wait appears.
pub fn check_transition(
    steps: &[Step],
    transitions: &[Transition],
    from: &str,
    to: &str,
    branch: Option<&str>,
) -> Result<Option<String>, ApiError> {
    let find = |id: &str, field: &str| {
        steps.iter().find(|s| s.id == id).ok_or_else(|| {
            ApiError::validation(vec![
                FieldError::new(field, "not_found", "no step of this workflow has this id")
                    .received(json!(id)),
            ])
        })
    };
    let (source, target) = (find(from, "fromStepId")?, find(to, "toStepId")?);
    if target.kind == "TRIGGER" {
        return Err(invalid("toStepId", "invalid_step", "nothing leads back to the TRIGGER step"));
    }
    if source.kind == "EXIT" {
        return Err(invalid(
            "fromStepId",
            "invalid_step",
            "an EXIT step ends the execution: nothing follows it",
        ));
    }
    let branch = match (branches(&source.kind), branch) {
        (None, None) => None,
        (None, Some(b)) => {
            return Err(invalid(
                "branch",
                "unrecognized_key",
                format!("a {} step has one way on: leave out branch (found {b:?})", source.kind),
            ));
        }
        (Some(allowed), Some(b)) if allowed.contains(&b) => Some(b.to_string()),
        (Some(allowed), b) => {
            return Err(ApiError::validation(vec![
                FieldError::new(
                    "branch",
                    if b.is_none() { "required" } else { "invalid_enum_value" },
                    format!(
                        "a transition from a {} step carries branch {}",
                        source.kind,
                        allowed.join(" or ")
                    ),
                )
                .received(json!(b)),
            ]));
        }
    };
    if transitions.iter().any(|t| t.from_step_id == from && t.branch == branch) {
        let way = branch.as_deref().map_or(String::new(), |b| format!(" on branch {b:?}"));
        return Err(ApiError::conflict(format!(
            "the step already leads somewhere{way}: delete that transition first"
        )));
    }
    if closes_waitless_cycle(steps, transitions, from, to) {
        return Err(invalid(
            "toStepId",
            "waitless_cycle",
            "this transition closes a loop without a DELAY or WAIT_FOR_EVENT step, which would run forever",
        ));
    }
    Ok(branch)
}

/// Whether adding `from → to` closes a cycle none of whose steps waits: that is, neither end
/// waits and `to` reaches `from` through steps that do not wait.
fn closes_waitless_cycle(steps: &[Step], transitions: &[Transition], from: &str, to: &str) -> bool {
    let kinds: HashMap<&str, &str> = steps.iter().map(|s| (s.id.as_str(), s.kind.as_str())).collect();
    let passable = |id: &str| kinds.get(id).is_some_and(|k| !waits(k));
    if !passable(from) || !passable(to) {
        return false;
    }
    let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
    for t in transitions {
        next.entry(t.from_step_id.as_str()).or_default().push(t.to_step_id.as_str());
    }
    let mut seen = HashSet::from([to]);
    let mut stack = vec![to];
    while let Some(at) = stack.pop() {
        if at == from {
            return true;
        }
        for &n in next.get(at).into_iter().flatten() {
            if passable(n) && seen.insert(n) {
                stack.push(n);
            }
        }
    }
    false
}

/// The transitions that replace a deleted step's when `splice=true`: each way into the step
/// now leads where the step led. A step that branches to more than one place cannot be
/// spliced out (400): which way would its predecessors go?
pub fn splice(
    steps: &[Step],
    transitions: &[Transition],
    removed: &str,
) -> Result<Vec<(String, String, Option<String>)>, ApiError> {
    let outgoing: Vec<&Transition> = transitions.iter().filter(|t| t.from_step_id == removed).collect();
    let incoming: Vec<&Transition> =
        transitions.iter().filter(|t| t.to_step_id == removed && t.from_step_id != removed).collect();
    let targets: HashSet<&str> =
        outgoing.iter().map(|t| t.to_step_id.as_str()).filter(|&to| to != removed).collect();
    if targets.len() > 1 {
        return Err(ApiError::bad_request(
            "the step leads to more than one step, so its predecessors cannot be reconnected: delete it \
             without splice=true and add the transitions you want",
        ));
    }
    let Some(&target) = targets.iter().next() else { return Ok(Vec::new()) };
    let remaining: Vec<Transition> = transitions
        .iter()
        .filter(|t| t.from_step_id != removed && t.to_step_id != removed)
        .cloned()
        .collect();
    let kept: Vec<Step> = steps.iter().filter(|s| s.id != removed).cloned().collect();
    let mut added = Vec::new();
    let mut graph = remaining;
    for t in incoming {
        if closes_waitless_cycle(&kept, &graph, &t.from_step_id, target) {
            return Err(ApiError::bad_request(
                "reconnecting around the step would close a loop without a DELAY or WAIT_FOR_EVENT step",
            ));
        }
        graph.push(Transition {
            from_step_id: t.from_step_id.clone(),
            to_step_id: target.to_string(),
            branch: t.branch.clone(),
            ..Transition::default()
        });
        added.push((t.from_step_id.clone(), target.to_string(), t.branch.clone()));
    }
    Ok(added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, kind: &str) -> Step {
        Step { id: id.into(), kind: kind.into(), config: "{}".into(), ..Step::default() }
    }

    fn edge(from: &str, to: &str, branch: Option<&str>) -> Transition {
        Transition {
            id: format!("{from}-{to}"),
            from_step_id: from.into(),
            to_step_id: to.into(),
            branch: branch.map(str::to_string),
            ..Transition::default()
        }
    }

    #[test]
    fn loops_need_a_wait() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("s", "SEND_EMAIL"), step("d", "DELAY")];
        let graph = [edge("t", "c", None), edge("c", "s", Some("yes"))];
        let err = check_transition(&steps, &graph, "s", "c", None).unwrap_err();
        assert_eq!(err.status().code, 422, "send → condition → send never waits");
        // Through a delay the same loop is fine.
        let graph = [edge("t", "c", None), edge("c", "s", Some("yes")), edge("s", "d", None)];
        assert_eq!(check_transition(&steps, &graph, "d", "c", None).unwrap(), None);
        // A delay may even lead to itself.
        assert!(check_transition(&steps, &graph, "d", "d", None).is_ok());
    }

    #[test]
    fn branches_fit_the_step_and_each_is_taken_once() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("a", "SEND_EMAIL"), step("e", "EXIT")];
        let graph = [edge("t", "c", None), edge("c", "a", Some("yes"))];
        assert_eq!(check_transition(&steps, &graph, "c", "e", None).unwrap_err().status().code, 422);
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("maybe")).unwrap_err().status().code, 422);
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("yes")).unwrap_err().status().code, 409);
        assert_eq!(check_transition(&steps, &graph, "c", "e", Some("no")).unwrap(), Some("no".into()));
        assert_eq!(check_transition(&steps, &graph, "a", "e", Some("yes")).unwrap_err().status().code, 422);
        assert_eq!(check_transition(&steps, &graph, "t", "a", None).unwrap_err().status().code, 409);
        assert_eq!(check_transition(&steps, &graph, "e", "a", None).unwrap_err().status().code, 422);
        assert_eq!(check_transition(&steps, &graph, "a", "t", None).unwrap_err().status().code, 422);
        assert_eq!(check_transition(&steps, &graph, "a", "x", None).unwrap_err().status().code, 422);
    }

    #[test]
    fn splicing_reconnects_each_way_in_to_the_one_way_out() {
        let steps =
            [step("t", "TRIGGER"), step("c", "CONDITION"), step("d", "DELAY"), step("s", "SEND_EMAIL")];
        let graph = [
            edge("t", "c", None),
            edge("c", "d", Some("yes")),
            edge("c", "d", Some("no")),
            edge("d", "s", None),
        ];
        let added = splice(&steps, &graph, "d").unwrap();
        assert_eq!(
            added,
            [
                ("c".to_string(), "s".to_string(), Some("yes".to_string())),
                ("c".into(), "s".into(), Some("no".into()))
            ]
        );
        // Both branches of c lead to d: one way out, so t now leads to d.
        assert_eq!(splice(&steps, &graph, "c").unwrap(), [("t".to_string(), "d".to_string(), None)]);
        // A condition whose branches part cannot be spliced out.
        let parted = [edge("t", "c", None), edge("c", "d", Some("yes")), edge("c", "s", Some("no"))];
        assert_eq!(splice(&steps, &parted, "c").unwrap_err().status().code, 400);
        // Nothing after it: the ways in just go.
        assert_eq!(splice(&steps, &graph, "s").unwrap(), []);
    }

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
            assert_eq!(references(kind, &stored), refs, "{kind}");
        }
    }

    #[test]
    fn configs_are_checked_per_type() {
        let ok = |kind: &str, config: Value| check_config(kind, &config, "config").map(|(v, _)| v);
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
            ok("SEND_EMAIL", json!({"templateId": "t1", "recipient": {"type": "CUSTOM", "email": "x"}}))
                .is_err()
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
}
