//! The custom-field catalogue: which fields a project's contacts have, their inferred type, and
//! how many contacts have each one set.
//!
//! A field is the dotted path of a leaf under `data` (`plan`, `profile.tier`); objects are walked
//! up to [`MAX_DEPTH`] levels, arrays are leaves. The type comes from the first non-null value seen
//! in the project and never changes (api.md rule 5); later values of another type are stored as
//! they are. Counts are kept as contacts change, so listing fields with their coverage never
//! scans contacts.

use std::collections::HashMap;

use rusqlite::{Connection, params};
use serde_json::{Map, Value};

use crate::clock;

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
    walk(data, String::new(), 1, &mut out);
    out
}

fn walk<'a>(
    object: &'a Map<String, Value>,
    prefix: String,
    depth: usize,
    out: &mut Vec<(String, &'a Value)>,
) {
    for (key, value) in object {
        if !nameable(key) {
            continue;
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Null => {}
            Value::Object(inner) if depth < MAX_DEPTH => walk(inner, path, depth + 1, out),
            other => out.push((path, other)),
        }
    }
}

/// Whether a data key can be one step of a field path: 1 to 256 bytes, no dot (the path's
/// separator), no quote and no control character (SQLite's JSON paths cannot carry them). Other
/// keys are stored on the contact but are not fields: not in the catalogue, not in conditions.
pub fn nameable(key: &str) -> bool {
    !key.is_empty() && key.len() <= 256 && !key.contains(['.', '"']) && !key.chars().any(char::is_control)
}

/// The SQLite JSON path of a dotted field path (`profile.tier` → `$."profile"."tier"`).
pub fn json_path(path: &str) -> String {
    let mut out = String::from("$");
    for part in path.split('.') {
        out.push_str(".\"");
        out.push_str(part);
        out.push('"');
    }
    out
}

/// Changes to the catalogue gathered over one transaction, saved at its end.
#[derive(Debug, Default)]
pub struct FieldChanges {
    deltas: HashMap<String, (i64, Option<&'static str>)>,
}

impl FieldChanges {
    /// Records one contact's data going from `old` to `new`.
    pub fn record(&mut self, old: &Map<String, Value>, new: &Map<String, Value>) {
        let before: HashMap<String, &Value> = leaves(old).into_iter().collect();
        let after = leaves(new);
        for (path, value) in &after {
            if !before.contains_key(path) {
                let entry = self.deltas.entry(path.clone()).or_insert((0, None));
                entry.0 += 1;
                entry.1 = entry.1.or(infer_type(value));
            }
        }
        let after: HashMap<&String, ()> = after.iter().map(|(p, _)| (p, ())).collect();
        for path in before.keys() {
            if !after.contains_key(path) {
                self.deltas.entry(path.clone()).or_insert((0, None)).0 -= 1;
            }
        }
    }

    /// Writes the changes; a field seen for the first time gets its type now. A known field is
    /// updated, so only a new one is inserted: the insert is what the project's field cap
    /// (migration V22) refuses, failing the whole write with `FIELD_LIMIT_EXCEEDED` (422).
    pub fn save(&mut self, conn: &Connection, project: &str) -> crate::db::Result<()> {
        let now = clock::now_ms();
        let mut insert = conn.prepare_cached(
            "INSERT INTO contact_fields (project_id, path, type, contacts, created_at) VALUES (?1, ?2, ?3, max(?4, 0), ?5)",
        )?;
        let mut update = conn.prepare_cached(
            "UPDATE contact_fields SET contacts = max(contacts + ?3, 0) WHERE project_id = ?1 AND path = ?2",
        )?;
        for (path, (delta, kind)) in self.deltas.drain() {
            let updated = if delta != 0 || kind.is_some() {
                update.execute(params![project, path, delta])?
            } else {
                1
            };
            if let (0, Some(kind)) = (updated, kind) {
                insert.execute(params![project, path, kind, delta, now])?;
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
        assert_eq!(json_path("profile.tier"), "$.\"profile\".\"tier\"");
        assert_eq!(json_path("first name"), "$.\"first name\"");
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
