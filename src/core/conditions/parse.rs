//! Reading a condition tree from JSON: each node checked, each filter value turned into the
//! test both paths run, and every error naming its node.

use serde_json::{Map, Value};

use super::names::{
    CAMPAIGN_OPERATORS, EVENT_OPERATORS, FIELD_OPERATORS, SEGMENT_OPERATORS, segment_named, unaliased,
};
use crate::clock;
use crate::core::data::type_name;
use crate::core::error::{Error, FieldError, Result};
use crate::db::audience::tree::{
    Bound, CampaignTest, Comparison, Condition, EventTest, Field, Filter, Group, Logic, Scalar, Target, Test,
};

/// Most filters in one tree, counting nested conditions and the conditions of segments it
/// refers to.
pub const MAX_FILTERS: usize = 100;
/// Most groups in one tree, counting nested conditions'.
pub const MAX_GROUPS: usize = 100;
/// Deepest nesting of `conditions`.
pub const MAX_NESTING: usize = 5;
/// Longest event name.
pub const MAX_EVENT_NAME: usize = 200;

fn err(path: &str, code: &str, message: impl Into<String>) -> Error {
    Error::Invalid(vec![FieldError::new(path, code, message)])
}

fn err_received(path: &str, code: &str, message: impl Into<String>, received: &Value) -> Error {
    let mut shown = received.clone();
    if let Value::String(s) = &mut shown {
        *s = s.chars().take(200).collect();
    }
    Error::Invalid(vec![FieldError::new(path, code, message).received(shown)])
}

/// Rejects keys other than `allowed` in a node.
fn known_keys(node: &Map<String, Value>, allowed: &[&str], path: &str) -> Result<()> {
    match node.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(key) => Err(err(
            &format!("{path}.{key}"),
            "unrecognized_key",
            format!("unknown key {key:?}; this node takes {}", allowed.join(", ")),
        )),
    }
}

/// Reads and checks a tree; `context`: its fields may name a workflow execution's context.
pub(super) fn tree(value: &Value, path: &str, context: bool) -> Result<Condition> {
    parse_condition(value, path, 0, &mut Parsing { filters: 0, groups: 0, context })
}

/// What a parse has seen so far, and what it allows.
struct Parsing {
    filters: usize,
    groups: usize,
    /// Whether fields may name the workflow execution's context.
    context: bool,
}

fn parse_condition(value: &Value, path: &str, depth: usize, p: &mut Parsing) -> Result<Condition> {
    let Value::Object(node) = value else {
        return Err(err_received(
            path,
            "invalid_type",
            "a condition is an object {logic, groups}",
            &Value::String(type_name(value).into()),
        ));
    };
    if depth > MAX_NESTING {
        return Err(err(path, "too_deep", format!("conditions nest at most {MAX_NESTING} deep")));
    }
    known_keys(node, &["logic", "groups"], path)?;
    let logic = match node.get("logic") {
        None | Some(Value::Null) => Logic::And,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("and") => Logic::And,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("or") => Logic::Or,
        Some(other) => {
            return Err(err_received(
                &format!("{path}.logic"),
                "invalid_enum_value",
                "logic is AND or OR",
                other,
            ));
        }
    };
    let groups_path = format!("{path}.groups");
    let groups = match node.get("groups") {
        Some(Value::Array(items)) => items,
        None => return Err(err(&groups_path, "required", "groups is required (an array of groups)")),
        Some(other) => {
            return Err(err_received(
                &groups_path,
                "invalid_type",
                "groups is an array of {filters, conditions}",
                &Value::String(type_name(other).into()),
            ));
        }
    };
    p.groups += groups.len();
    if p.groups > MAX_GROUPS {
        return Err(err(&groups_path, "too_big", format!("a condition holds at most {MAX_GROUPS} groups")));
    }
    let mut out = Vec::with_capacity(groups.len());
    for (i, group) in groups.iter().enumerate() {
        out.push(parse_group(group, &format!("{groups_path}[{i}]"), depth, p)?);
    }
    Ok(Condition { logic, groups: out })
}

fn parse_group(value: &Value, path: &str, depth: usize, p: &mut Parsing) -> Result<Group> {
    let Value::Object(node) = value else {
        return Err(err_received(
            path,
            "invalid_type",
            "a group is an object {filters, conditions}",
            &Value::String(type_name(value).into()),
        ));
    };
    known_keys(node, &["filters", "conditions"], path)?;
    let filters_path = format!("{path}.filters");
    let items: &[Value] = match node.get("filters") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(err_received(
                &filters_path,
                "invalid_type",
                "filters is an array of {field, operator, value, unit}",
                &Value::String(type_name(other).into()),
            ));
        }
    };
    let mut filters = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        p.filters += 1;
        if p.filters > MAX_FILTERS {
            return Err(err(
                &filters_path,
                "too_big",
                format!("a condition holds at most {MAX_FILTERS} filters"),
            ));
        }
        filters.push(parse_filter(item, &format!("{filters_path}[{i}]"), p.context)?);
    }
    let conditions = match node.get("conditions") {
        None | Some(Value::Null) => None,
        Some(nested) => Some(Box::new(parse_condition(nested, &format!("{path}.conditions"), depth + 1, p)?)),
    };
    Ok(Group { filters, conditions })
}

fn parse_filter(value: &Value, path: &str, context: bool) -> Result<Filter> {
    let Value::Object(node) = value else {
        return Err(err_received(
            path,
            "invalid_type",
            "a filter is an object {field, operator, value, unit}",
            &Value::String(type_name(value).into()),
        ));
    };
    let is_event = node
        .get("operator")
        .and_then(Value::as_str)
        .is_some_and(|op| EVENT_OPERATORS.contains(&op) || CAMPAIGN_OPERATORS.contains(&op));
    if is_event {
        known_keys(node, &["field", "operator", "value", "unit", "includeMachine"], path)?;
    } else {
        known_keys(node, &["field", "operator", "value", "unit"], path)?;
    }
    let operator = match node.get("operator") {
        Some(Value::String(op)) => op.as_str(),
        None | Some(Value::Null) => {
            return Err(err(&format!("{path}.operator"), "required", "operator is required"));
        }
        Some(other) => {
            return Err(err_received(
                &format!("{path}.operator"),
                "invalid_type",
                "operator is a string",
                other,
            ));
        }
    };
    let field_path = format!("{path}.field");
    let field = match node.get("field") {
        Some(Value::String(f)) => unaliased(f, operator),
        None | Some(Value::Null) if SEGMENT_OPERATORS.contains(&operator) => "",
        None | Some(Value::Null) => return Err(err(&field_path, "required", "field is required")),
        Some(other) => return Err(err_received(&field_path, "invalid_type", "field is a string", other)),
    };
    let value = node.get("value").unwrap_or(&Value::Null);
    let unit = node.get("unit").unwrap_or(&Value::Null);
    let value_path = format!("{path}.value");
    if FIELD_OPERATORS.contains(&operator) {
        let field = parse_field(field, &field_path, context)?;
        let test = parse_test(&field, operator, value, unit, path)?;
        Ok(Filter::Field { field, test })
    } else if EVENT_OPERATORS.contains(&operator) {
        let name = field.trim();
        if name.is_empty() || name.len() > MAX_EVENT_NAME {
            return Err(err_received(
                &field_path,
                "invalid_string",
                format!("name the event in field (1 to {MAX_EVENT_NAME} characters)"),
                &Value::String(field.into()),
            ));
        }
        let span = || span(value, unit, path);
        let test = match operator {
            "triggered" => EventTest::Triggered,
            "notTriggered" => EventTest::NotTriggered,
            "triggeredWithin" => EventTest::Within(span()?),
            "notTriggeredWithin" => EventTest::NotWithin(span()?),
            _ => EventTest::OlderThan(span()?),
        };
        Ok(Filter::Event { name: name.to_string(), test, machines: include_machine(node, path)? })
    } else if CAMPAIGN_OPERATORS.contains(&operator) {
        let Some(id) = field.strip_prefix("campaign.").map(str::trim).filter(|id| !id.is_empty()) else {
            return Err(err_received(
                &field_path,
                "invalid_string",
                "field is campaign.<id> with the campaign operators",
                &Value::String(field.into()),
            ));
        };
        let test = match operator {
            "received" => CampaignTest::Received,
            "notReceived" => CampaignTest::NotReceived,
            "opened" => CampaignTest::Opened,
            "notOpened" => CampaignTest::NotOpened,
            "clicked" => CampaignTest::Clicked,
            _ => CampaignTest::NotClicked,
        };
        Ok(Filter::Campaign { id: id.to_string(), test, machines: include_machine(node, path)? })
    } else if SEGMENT_OPERATORS.contains(&operator) {
        let Some(id) = segment_named(Some(field), value) else {
            return Err(err_received(&value_path, "required", "value is the id of a segment", value));
        };
        Ok(Filter::Segment {
            id: id.to_string(),
            member: operator == "memberOfSegment",
            target: Target::Unresolved,
        })
    } else {
        Err(err_received(
            &format!("{path}.operator"),
            "unknown_operator",
            format!(
                "unknown operator {operator:?}; operators are {}, {}, {} and {}",
                FIELD_OPERATORS.join(", "),
                EVENT_OPERATORS.join(", "),
                SEGMENT_OPERATORS.join(", "),
                CAMPAIGN_OPERATORS.join(", ")
            ),
            &Value::String(operator.into()),
        ))
    }
}

/// An event or campaign filter's `includeMachine`: count what machines did too (false when
/// left out).
fn include_machine(node: &Map<String, Value>, path: &str) -> Result<bool> {
    match node.get("includeMachine") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(err_received(
            &format!("{path}.includeMachine"),
            "invalid_type",
            "includeMachine is a boolean",
            other,
        )),
    }
}

fn parse_field(field: &str, path: &str, context: bool) -> Result<Field> {
    let unknown =
        |message: String| err_received(path, "unknown_field", message, &Value::String(field.into()));
    match field {
        "email" => return Ok(Field::Email),
        "subscribed" => return Ok(Field::Subscribed),
        "snoozed" => return Ok(Field::Snoozed),
        "createdAt" => return Ok(Field::CreatedAt),
        "updatedAt" => return Ok(Field::UpdatedAt),
        _ => {}
    }
    if let Some(id) = field.strip_prefix("topic.") {
        return match crate::core::ids::TopicId::parse(id) {
            Some(id) => Ok(Field::Topic { id: id.into(), default_opt_in: false }),
            None => Err(unknown(format!("{field:?} does not name a topic: topic.<id> takes a topic's id"))),
        };
    }
    let scoped = |prefix: &str| field.strip_prefix(prefix).filter(|_| context);
    let (rest, scope) = match (field.strip_prefix("data."), scoped("event."), scoped("workflow.")) {
        (Some(rest), _, _) => (rest, None),
        (_, Some(rest), _) => (rest, Some(true)),
        (_, _, Some(rest)) => (rest, Some(false)),
        _ if context => {
            return Err(unknown(format!(
                "unknown field {field:?}: use email, subscribed, createdAt, updatedAt, a custom field as \
                 data.<name>, a topic as topic.<id>, or the execution's event.<name> or workflow.<name>"
            )));
        }
        _ => {
            return Err(unknown(format!(
                "unknown field {field:?}: use email, subscribed, createdAt, updatedAt, a custom field as data.<name>, or a topic as topic.<id>"
            )));
        }
    };
    let parts: Vec<String> = rest.split('.').map(str::to_string).collect();
    if parts.len() > crate::core::fields::MAX_DEPTH || !parts.iter().all(|p| crate::core::fields::nameable(p))
    {
        return Err(unknown(format!(
            "{field:?} is not a custom field path: names separated by dots, at most {} deep, without quotes or control characters",
            crate::core::fields::MAX_DEPTH
        )));
    }
    Ok(match scope {
        None => Field::Data(parts),
        Some(event) => Field::Context { event, path: parts },
    })
}

fn parse_test(field: &Field, operator: &str, value: &Value, unit: &Value, path: &str) -> Result<Test> {
    let value_path = format!("{path}.value");
    let is_time = matches!(field, Field::CreatedAt | Field::UpdatedAt);
    let not_for = || {
        err_received(
            &format!("{path}.operator"),
            "invalid_operator",
            format!("{operator} does not apply to {}", field.name()),
            &Value::String(operator.into()),
        )
    };
    let required =
        |what: &str| err_received(&value_path, "required", format!("{operator} needs {what}"), value);
    if !matches!(operator, "within" | "olderThan") && !unit.is_null() {
        return Err(err(
            &format!("{path}.unit"),
            "unrecognized_key",
            "unit goes with within and olderThan only",
        ));
    }
    match operator {
        "equals" | "notEquals" => {
            let negated = operator == "notEquals";
            if is_time {
                let Some((ms, full)) = value.as_str().and_then(clock::parse_date) else {
                    return Err(required("a date (YYYY-MM-DD or an ISO 8601 time)"));
                };
                let to = if full { ms + 1 } else { ms + 86_400_000 };
                return Ok(Test::EqualsTime { from: ms, to, negated });
            }
            let Some(mut scalar) = Scalar::of(value) else {
                return Err(required("a string, a number or a boolean"));
            };
            match field {
                Field::Email => {
                    scalar =
                        Scalar { text: scalar.text.map(|t| t.to_lowercase()), number: None, boolean: None }
                }
                Field::Subscribed | Field::Snoozed | Field::Topic { .. } if scalar.boolean.is_none() => {
                    return Err(required("true or false"));
                }
                _ => {}
            }
            Ok(Test::Equals { value: scalar, negated })
        }
        "contains" | "notContains" => {
            if matches!(field, Field::Subscribed | Field::Snoozed | Field::Topic { .. }) || is_time {
                return Err(not_for());
            }
            let Some(element) = Scalar::of(value) else {
                return Err(required("a string, a number or a boolean"));
            };
            let needle = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if needle.is_empty() {
                return Err(required("some text to look for"));
            }
            Ok(Test::Contains {
                needle: needle.to_ascii_lowercase(),
                element,
                negated: operator == "notContains",
            })
        }
        "greaterThan" | "gt" | "lessThan" | "lt" | "greaterThanOrEqual" | "lessThanOrEqual" => {
            if matches!(field, Field::Email | Field::Subscribed | Field::Snoozed | Field::Topic { .. }) {
                return Err(not_for());
            }
            let op = match operator {
                "greaterThan" | "gt" => Comparison::Greater,
                "lessThan" | "lt" => Comparison::Less,
                "greaterThanOrEqual" => Comparison::GreaterOrEqual,
                _ => Comparison::LessOrEqual,
            };
            let bound = match value {
                Value::Number(n) => n.as_f64().map(Bound::Number),
                Value::String(s) => match (number(s), clock::parse_date(s)) {
                    (Some(n), _) => Some(Bound::Number(n)),
                    (None, Some((ms, _))) => Some(Bound::Date(ms)),
                    _ => None,
                },
                _ => None,
            };
            match bound {
                Some(Bound::Number(_)) if is_time => Err(required("a date (YYYY-MM-DD or an ISO 8601 time)")),
                Some(bound) => Ok(Test::Compare { op, bound }),
                None => Err(required("a number or a date (YYYY-MM-DD or an ISO 8601 time)")),
            }
        }
        "exists" | "notExists" => Ok(Test::Exists { negated: operator == "notExists" }),
        _ => {
            // within / olderThan
            if matches!(field, Field::Email | Field::Subscribed | Field::Snoozed | Field::Topic { .. }) {
                return Err(not_for());
            }
            Ok(Test::Age { span: span(value, unit, path)?, older: operator == "olderThan" })
        }
    }
}

/// An amount of time from `value` and `unit`, in milliseconds.
fn span(value: &Value, unit: &Value, path: &str) -> Result<i64> {
    let unit_ms: f64 = match unit {
        Value::Null => 86_400_000.0,
        Value::String(u) => match u.as_str() {
            "minutes" => 60_000.0,
            "hours" => 3_600_000.0,
            "days" => 86_400_000.0,
            _ => {
                return Err(err_received(
                    &format!("{path}.unit"),
                    "invalid_enum_value",
                    "unit is minutes, hours or days",
                    unit,
                ));
            }
        },
        other => {
            return Err(err_received(
                &format!("{path}.unit"),
                "invalid_enum_value",
                "unit is minutes, hours or days",
                other,
            ));
        }
    };
    let amount = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => number(s),
        _ => None,
    };
    match amount {
        Some(a) if a > 0.0 && a * unit_ms <= 200.0 * 365.0 * 86_400_000.0 => Ok((a * unit_ms).round() as i64),
        _ => Err(err_received(
            &format!("{path}.value"),
            "invalid_value",
            "value is a positive amount of the unit (at most 200 years)",
            value,
        )),
    }
}

/// A string that reads as a finite number (`"42"`, `"-1.5"`).
pub(super) fn number(s: &str) -> Option<f64> {
    let looks_numeric = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        && s.bytes().any(|b| b.is_ascii_digit());
    s.parse::<f64>().ok().filter(|n| looks_numeric && n.is_finite())
}

impl Scalar {
    /// What a filter value can equal; `None` for null, arrays and objects.
    pub fn of(value: &Value) -> Option<Scalar> {
        match value {
            Value::String(s) => Some(Scalar {
                text: Some(s.clone()),
                number: number(s),
                boolean: match s.as_str() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                },
            }),
            Value::Number(n) => Some(Scalar { number: n.as_f64(), ..Scalar::default() }),
            Value::Bool(b) => Some(Scalar { boolean: Some(*b), ..Scalar::default() }),
            _ => None,
        }
    }

    /// Whether a stored JSON value equals this one (see the module's rules).
    pub fn equals(&self, stored: &Value) -> bool {
        match stored {
            Value::String(s) => self.text.as_deref() == Some(s.as_str()),
            Value::Number(n) => match (self.number, n.as_f64()) {
                (Some(a), Some(b)) => a == b,
                _ => false,
            },
            Value::Bool(b) => self.boolean == Some(*b),
            _ => false,
        }
    }
}
