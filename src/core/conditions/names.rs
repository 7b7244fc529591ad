//! The operators a filter may use, the other names Plunk's clients give fields, events and
//! segments, and the one form a tree is stored and shown in.

use serde_json::{Map, Value};

pub(crate) const FIELD_OPERATORS: &[&str] = &[
    "equals",
    "notEquals",
    "contains",
    "notContains",
    "greaterThan",
    "lessThan",
    "greaterThanOrEqual",
    "lessThanOrEqual",
    "gt",
    "lt",
    "exists",
    "notExists",
    "within",
    "olderThan",
];
pub(crate) const EVENT_OPERATORS: &[&str] =
    &["triggered", "triggeredWithin", "triggeredOlderThan", "notTriggered", "notTriggeredWithin"];
pub(crate) const SEGMENT_OPERATORS: &[&str] = &["memberOfSegment", "notMemberOfSegment"];
/// On `campaign.<id>`: what the contact did with that campaign's email.
pub(crate) const CAMPAIGN_OPERATORS: &[&str] =
    &["received", "notReceived", "opened", "notOpened", "clicked", "notClicked"];

/// A filter's field in the form this evaluator reads, from the names Plunk's clients also use:
/// `event.<name>` for an event filter's event, `contact.email`, `contact.subscribed`,
/// `contact.createdAt`, `contact.updatedAt` and `contact.data.<path>` for contact fields.
pub(super) fn unaliased<'a>(field: &'a str, operator: &str) -> &'a str {
    if EVENT_OPERATORS.contains(&operator) {
        return field.strip_prefix("event.").filter(|name| !name.trim().is_empty()).unwrap_or(field);
    }
    match field.strip_prefix("contact.") {
        Some(rest)
            if FIELD_OPERATORS.contains(&operator)
                && (matches!(rest, "email" | "subscribed" | "createdAt" | "updatedAt")
                    || rest.starts_with("data.")) =>
        {
            rest
        }
        _ => field,
    }
}

/// The segment a membership filter names: its `value`, or Plunk's `field: "segment.<id>"`.
pub(super) fn segment_named<'a>(field: Option<&'a str>, value: &'a Value) -> Option<&'a str> {
    match value {
        Value::Null => field.and_then(|f| f.strip_prefix("segment.")),
        other => other.as_str(),
    }
    .map(str::trim)
    .filter(|id| !id.is_empty())
}

/// A filter written the one way the API shows it: aliased fields in their own form, a
/// membership filter's segment in `value`.
fn canonical_filter(filter: &Value) -> Value {
    let Value::Object(node) = filter else { return filter.clone() };
    let Some(operator) = node.get("operator").and_then(Value::as_str) else { return filter.clone() };
    let mut out = node.clone();
    if SEGMENT_OPERATORS.contains(&operator) {
        let field = node.get("field").and_then(Value::as_str);
        if let Some(id) = segment_named(field, node.get("value").unwrap_or(&Value::Null)) {
            out.insert("value".into(), Value::String(id.to_string()));
            if field.is_some_and(|f| f.starts_with("segment.")) {
                out.remove("field");
            }
        }
    } else if let Some(field) = node.get("field").and_then(Value::as_str) {
        out.insert("field".into(), Value::String(unaliased(field, operator).to_string()));
    }
    Value::Object(out)
}

/// A tree that [`Condition::parse`] accepted, written the one way the API shows it: `logic` in
/// capitals (`AND` where it was left out or null), `filters` always an array, a null
/// `conditions` left out, and the fields Plunk's clients name otherwise in their own form
/// (see [`unaliased`]). What is stored is this form, so what is read back matches the
/// documented `ConditionTree`.
pub fn canonical(tree: &Value) -> Value {
    let Value::Object(node) = tree else { return tree.clone() };
    let logic = match node.get("logic").and_then(Value::as_str) {
        Some(l) if l.eq_ignore_ascii_case("or") => "OR",
        _ => "AND",
    };
    let groups: Vec<Value> = node
        .get("groups")
        .and_then(Value::as_array)
        .map(|groups| {
            groups
                .iter()
                .map(|group| {
                    let mut out = Map::new();
                    let filters = group
                        .get("filters")
                        .and_then(Value::as_array)
                        .map(|filters| filters.iter().map(canonical_filter).collect())
                        .unwrap_or_default();
                    out.insert("filters".into(), Value::Array(filters));
                    if let Some(nested) = group.get("conditions").filter(|c| !c.is_null()) {
                        out.insert("conditions".into(), canonical(nested));
                    }
                    Value::Object(out)
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("logic".into(), Value::String(logic.into()));
    out.insert("groups".into(), Value::Array(groups));
    Value::Object(out)
}
