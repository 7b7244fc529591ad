//! The custom-field catalogue: which fields a project's contacts have, their inferred type, and
//! how many contacts have each one set.
//!
//! A field is the dotted path of a leaf under `data` (`plan`, `profile.tier`); objects are walked
//! up to [`MAX_DEPTH`] levels, arrays are leaves. The type comes from the first non-null value seen
//! in the project and never changes (api.md rule 5); later values of another type are stored as
//! they are. Counts are kept as contacts change, so listing fields with their coverage never
//! scans contacts.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::clock;
use crate::core::error::{Error, Result};
use crate::db::{Tx, contacts, fields};

/// How deep objects are walked for fields.
pub const MAX_DEPTH: usize = 4;

/// The type api.md's table gives a value: `number`, `boolean`, `date` or `string`; `None` for null.
pub fn infer_type(value: &Value) -> Option<&'static str> {
    match value {
        Value::Null => None,
        Value::Bool(_) => Some("boolean"),
        Value::Number(_) => Some("number"),
        Value::String(s) if is_date(s) => Some("date"),
        _ => Some("string"),
    }
}

/// `YYYY-MM-DD` or `YYYY-MM-DDTHH:MM:SS[.sss]Z`.
pub fn is_date(s: &str) -> bool {
    clock::parse_date(s).is_some()
}

/// Every field (dotted path) set in `data`, with its value.
pub fn leaves(data: &Map<String, Value>) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    each_leaf(data, &mut |path, value| out.push((path.to_string(), value)));
    out
}

/// Calls `visit` with every field (dotted path) set in `data` and its value, in one path buffer
/// (a new contact's row of an import or a tracked request allocates none for its fields).
pub fn each_leaf<'a>(data: &'a Map<String, Value>, visit: &mut impl FnMut(&str, &'a Value)) {
    walk(data, &mut String::new(), 1, visit);
}

fn walk<'a>(
    object: &'a Map<String, Value>,
    path: &mut String,
    depth: usize,
    visit: &mut impl FnMut(&str, &'a Value),
) {
    for (key, value) in object {
        if !nameable(key) {
            continue;
        }
        let parent = path.len();
        if parent > 0 {
            path.push('.');
        }
        path.push_str(key);
        match value {
            Value::Null => {}
            Value::Object(inner) if depth < MAX_DEPTH => walk(inner, path, depth + 1, visit),
            other => visit(path, other),
        }
        path.truncate(parent);
    }
}

/// Whether a data key can be one step of a field path: 1 to 256 bytes, no dot (the path's
/// separator), no quote and no control character (SQLite's JSON paths cannot carry them). Other
/// keys are stored on the contact but are not fields: not in the catalogue, not in conditions.
pub fn nameable(key: &str) -> bool {
    let plain = |b: &u8| !matches!(b, b'.' | b'"' | 0..0x20 | 0x7f);
    let fine = if key.is_ascii() {
        key.as_bytes().iter().all(plain)
    } else {
        !key.contains(['.', '"']) && !key.chars().any(char::is_control)
    };
    !key.is_empty() && key.len() <= 256 && fine
}

/// Fields every contact has, with their types.
pub const STANDARD: &[(&str, &str)] =
    &[("email", "string"), ("subscribed", "boolean"), ("createdAt", "date"), ("updatedAt", "date")];

/// Whether `field` is one of the [`STANDARD`] fields.
pub fn is_standard(field: &str) -> bool {
    STANDARD.iter().any(|(name, _)| *name == field)
}

/// A contact field as the catalogue lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Known {
    /// `email`, …, or `data.<path>` for a custom field.
    pub field: String,
    pub kind: String,
    pub is_custom: bool,
    /// The share of contacts that have it, 0 to 1.
    pub coverage: f64,
}

/// The project's contact fields: the standard ones, then the catalogue's custom ones.
pub fn catalogue(conn: &Tx, project: &str) -> crate::db::Result<Vec<Known>> {
    let (total, _) = contacts::counts(conn, project)?;
    let coverage = |n: i64| if total > 0 { (n as f64 / total as f64).clamp(0.0, 1.0) } else { 0.0 };
    let standard = STANDARD.iter().map(|(field, kind)| Known {
        field: field.to_string(),
        kind: kind.to_string(),
        is_custom: false,
        coverage: coverage(total),
    });
    let custom = fields::list(conn, project)?.into_iter().map(|f| Known {
        field: format!("data.{}", f.path),
        kind: f.kind,
        is_custom: true,
        coverage: coverage(f.contacts),
    });
    Ok(standard.chain(custom).collect())
}

/// The custom field a `data.<path>` name refers to: its path and type; 404 when the catalogue
/// does not have it.
pub fn custom(conn: &Tx, project: &str, field: &str) -> Result<(String, String)> {
    // A name no field can have (an older catalogue may hold one) is not looked up: SQLite's
    // JSON paths cannot carry its characters.
    let Some(path) = field.strip_prefix("data.").filter(|p| p.split('.').all(nameable)) else {
        return Err(Error::not_found(format!(
            "No custom field {field:?}; custom fields are named data.<key>"
        )));
    };
    let kind = fields::kind_of(conn, project, path)?;
    kind.map(|kind| (path.to_string(), kind))
        .ok_or_else(|| Error::not_found(format!("No custom field {field:?} in this project")))
}

/// Event names whose data keys [`event_keys`] lists, newest names first.
const KEYED_EVENTS: usize = 100;
/// Events of each name sampled for their data keys, and the largest data sampled: at most
/// 100 × 5 × 16 KiB of JSON read for one answer, whatever the project tracked.
const KEY_SAMPLES: (usize, usize) = (5, 16 * 1024);
/// Keys listed per event name.
const KEYS_PER_EVENT: usize = 50;

/// One event name, how many events carry it, and the data keys (dotted paths) its newest events
/// carry with their types, by key.
#[derive(Debug, Clone, PartialEq)]
pub struct EventKeys {
    pub name: String,
    pub count: i64,
    pub keys: Vec<(String, &'static str)>,
}

/// What a condition can test of the project's events: for its 100 newest event names, the keys
/// their newest events carry (sampled: the last 5 of at most 16 KiB each, 50 keys a name), by
/// name.
pub fn event_keys(conn: &Tx, project: &str) -> crate::db::Result<Vec<EventKeys>> {
    let mut names = crate::db::events::names(conn, project)?;
    names.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    names.truncate(KEYED_EVENTS);
    let mut out = Vec::with_capacity(names.len());
    for (name, count, _) in names {
        let mut keys: std::collections::BTreeMap<String, &'static str> = Default::default();
        for data in crate::db::events::recent_data(conn, project, &name, KEY_SAMPLES)? {
            if let Value::Object(map) = &data {
                for (path, value) in leaves(map) {
                    if let Some(kind) = infer_type(value)
                        && (keys.len() < KEYS_PER_EVENT || keys.contains_key(&path))
                    {
                        keys.entry(path).or_insert(kind);
                    }
                }
            }
        }
        out.push(EventKeys { name, count, keys: keys.into_iter().collect() });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Changes to the catalogue gathered over one transaction, saved at its end.
#[derive(Debug, Default)]
pub struct FieldChanges {
    deltas: HashMap<String, (i64, Option<&'static str>)>,
}

impl FieldChanges {
    /// Records one contact's data going from `old` to `new`.
    /// A new contact (`old` empty, an import's usual row) builds no set of paths and no path
    /// strings; a field seen before in the transaction costs no new key, and a field whose type
    /// is known no look at its value.
    pub fn record(&mut self, old: &Map<String, Value>, new: &Map<String, Value>) {
        if old.is_empty() {
            each_leaf(new, &mut |path, value| self.bump(path, 1, Some(value)));
            return;
        }
        let before = leaves(old);
        let after = leaves(new);
        let old_paths: HashSet<&str> = before.iter().map(|(p, _)| p.as_str()).collect();
        let new_paths: HashSet<&str> =
            if before.is_empty() { HashSet::new() } else { after.iter().map(|(p, _)| p.as_str()).collect() };
        for (path, _) in before.iter().filter(|(p, _)| !new_paths.contains(p.as_str())) {
            self.bump(path, -1, None);
        }
        for (path, value) in after.iter().filter(|(p, _)| !old_paths.contains(p.as_str())) {
            self.bump(path, 1, Some(value));
        }
    }

    /// Adds `by` to `path`'s count; `value`, the path's value when it was set, gives the field
    /// its type when it has none yet.
    fn bump(&mut self, path: &str, by: i64, value: Option<&Value>) {
        match self.deltas.get_mut(path) {
            Some(entry) => {
                entry.0 += by;
                if entry.1.is_none() {
                    entry.1 = value.and_then(infer_type);
                }
            }
            None => {
                self.deltas.insert(path.to_string(), (by, value.and_then(infer_type)));
            }
        }
    }

    /// Writes the changes; a field seen for the first time gets its type now. A known field is
    /// updated, so only a new one is inserted: the insert is what the project's field cap
    /// (migration V22) refuses, failing the whole write with `FIELD_LIMIT_EXCEEDED` (422).
    pub fn save(&mut self, conn: &Tx, project: &str) -> crate::db::Result<()> {
        let now = clock::now_ms();
        for (path, (delta, kind)) in self.deltas.drain() {
            let updated = if delta != 0 || kind.is_some() {
                fields::add_to_count(conn, project, &path, delta)?
            } else {
                1
            };
            if let (0, Some(kind)) = (updated, kind) {
                fields::insert(conn, project, &path, kind, delta, now)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_follow_the_table_of_api_md() {
        assert_eq!(infer_type(&json!(3)), Some("number"));
        assert_eq!(infer_type(&json!(2.5)), Some("number"));
        assert_eq!(infer_type(&json!(true)), Some("boolean"));
        assert_eq!(infer_type(&json!("2024-02-29")), Some("date"));
        assert_eq!(infer_type(&json!("2024-01-15T10:30:00Z")), Some("date"));
        assert_eq!(infer_type(&json!("2024-01-15T10:30:00.123Z")), Some("date"));
        assert_eq!(infer_type(&json!("2023-02-29")), Some("string"), "not a real day");
        assert_eq!(infer_type(&json!("2024-01-15 10:30")), Some("string"));
        assert_eq!(infer_type(&json!("2024-01-15T10:30:00+02:00")), Some("string"));
        assert_eq!(infer_type(&json!("42")), Some("string"), "a JSON string stays a string");
        assert_eq!(infer_type(&json!(["a"])), Some("string"));
        assert_eq!(infer_type(&Value::Null), None);
    }

    #[test]
    fn leaves_are_dotted_paths() {
        let data = json!({ "plan": "pro", "profile": { "tier": "gold", "address": { "city": "Oslo" } },
            "tags": [1], "gone": null, "odd.key": 1 });
        let mut paths: Vec<String> = leaves(data.as_object().unwrap()).into_iter().map(|(p, _)| p).collect();
        paths.sort();
        assert_eq!(paths, ["plan", "profile.address.city", "profile.tier", "tags"]);
    }

    #[test]
    fn a_nameable_key_has_no_dot_quote_or_control_character() {
        for key in ["plan", "first name", "é-tier", "x".repeat(256).as_str(), "日本"] {
            assert!(nameable(key), "{key:?}");
        }
        let long = "x".repeat(257);
        for key in
            ["", "a.b", "say\"hi", "tab\there", "nul\0", "del\u{7f}", "next\u{85}line", "é.x", long.as_str()]
        {
            assert!(!nameable(key), "{key:?}");
        }
    }

    #[test]
    fn changes_count_additions_and_removals() {
        let mut changes = FieldChanges::default();
        let empty = Map::new();
        let a = json!({ "plan": "pro", "age": 3 }).as_object().unwrap().clone();
        let b = json!({ "plan": 5, "city": "Oslo" }).as_object().unwrap().clone();
        changes.record(&empty, &a);
        changes.record(&a, &b);
        assert_eq!(changes.deltas["plan"], (1, Some("string")), "type of the first value");
        assert_eq!(changes.deltas["age"], (0, Some("number")));
        assert_eq!(changes.deltas["city"], (1, Some("string")));
    }
}
