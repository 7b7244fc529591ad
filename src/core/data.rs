//! The custom-field rules of api.md ("Custom fields (`data`)"), in one place for every endpoint
//! that takes `data`: `/contacts`, `PATCH /contacts/:id`, `/v1/send`, `/v1/track`, CSV import and
//! workflow steps.
//!
//! - `data` is a patch: only the keys sent change.
//! - `null` deletes the key; an empty string is ignored.
//! - Reserved keys are dropped silently.
//! - `timezone` must name a time zone (`Europe/Berlin`): 422 `invalid_timezone` otherwise.
//! - `{ "value": v, "persistent": false }` is used for this request only; with `persistent: true`
//!   `v` is stored as any other value.
//! - Primitives, plain objects and arrays are stored; an object replaces the stored object at
//!   its key (the patch is shallow).

use serde_json::{Map, Value};

use crate::core::delivery_windows::check_zone;
use crate::core::error::{Error, FieldError, Result};

/// Keys removed from every `data` payload without an error.
pub const RESERVED_KEYS: &[&str] =
    &["id", "svc_id", "svc_email", "email", "unsubscribeUrl", "subscribeUrl", "manageUrl"];

/// The key of a contact's time zone (an IANA name): when its marketing mail is due
/// (`core::delivery_windows`). A value that names no zone is refused.
pub const TIMEZONE: &str = "timezone";

/// Largest stored `data` object, serialized.
pub const MAX_DATA_BYTES: usize = 64 * 1024;

/// What a `data` payload asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataPatch {
    /// In payload order, each key once: a value to store, or `None` to delete the key.
    changes: Vec<(String, Option<Value>)>,
    /// Values for this request only (templates, event data); never stored on the contact.
    pub transient: Map<String, Value>,
}

/// Whether `key` is reserved.
pub fn is_reserved(key: &str) -> bool {
    RESERVED_KEYS.contains(&key)
}

/// The value a `{ "value": v, "persistent": p }` wrapper holds and `p`; any other value is itself,
/// stored.
fn unwrapped(value: Value) -> (Value, bool) {
    match value {
        Value::Object(mut object)
            if object.len() == 2
                && object.contains_key("value")
                && object.get("persistent").is_some_and(Value::is_boolean) =>
        {
            let persistent = object.get("persistent").and_then(Value::as_bool).unwrap_or(true);
            (object.remove("value").unwrap_or_default(), persistent)
        }
        other => (other, true),
    }
}

impl DataPatch {
    /// Reads a `data` payload; `field` names it in errors. Absent (`None`) is an empty patch.
    pub fn parse(payload: Option<&Value>, field: &str) -> Result<DataPatch> {
        let object = match payload {
            None | Some(Value::Null) => return Ok(DataPatch::default()),
            Some(Value::Object(object)) => object,
            Some(other) => {
                return Err(Error::Invalid(vec![
                    FieldError::new(field, "invalid_type", format!("{field} must be an object"))
                        .received(Value::String(type_name(other).into())),
                ]));
            }
        };
        let mut patch = DataPatch::default();
        for (key, value) in object {
            if !is_reserved(key) {
                patch.add(key.clone(), value.clone(), field)?;
            }
        }
        Ok(patch)
    }

    /// Adds one key of a payload, by the rules of [`DataPatch::parse`].
    fn add(&mut self, key: String, value: Value, field: &str) -> Result<()> {
        if is_reserved(&key) {
            return Ok(());
        }
        if key.is_empty() || key.len() > 256 {
            return Err(Error::invalid(
                &format!("{field}.{key}"),
                "invalid_string",
                "data keys must be 1 to 256 bytes long",
            ));
        }
        let (value, persistent) = unwrapped(value);
        if !persistent {
            self.transient.insert(key, value);
            return Ok(());
        }
        if key == TIMEZONE
            && !value.is_null()
            && !value.as_str().is_some_and(|z| z.is_empty() || check_zone(z))
        {
            return Err(Error::Invalid(vec![
                FieldError::new(
                    format!("{field}.{key}"),
                    "invalid_timezone",
                    "timezone is an IANA time zone name, such as Europe/Berlin",
                )
                .received(value),
            ]));
        }
        match value {
            Value::Null => self.changes.push((key, None)),
            Value::String(s) if s.is_empty() => {}
            other => self.changes.push((key, Some(other))),
        }
        Ok(())
    }

    /// A patch that stores every pair (CSV rows, workflow updates), with the same rules, the
    /// pairs moved into it. A `timezone` that names no zone is left out, so the rest of the row
    /// is kept; a key [`DataPatch::parse`] refuses empties the patch.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, Value)>) -> DataPatch {
        let object: Map<String, Value> = pairs.into_iter().collect();
        let mut patch = DataPatch::default();
        for (key, value) in object {
            if key == TIMEZONE && value.as_str().is_some_and(|z| !z.is_empty() && !check_zone(z)) {
                continue;
            }
            if patch.add(key, value, "data").is_err() {
                return DataPatch::default();
            }
        }
        patch
    }

    /// What an event records of the payload: every value sent, stored or not (keys deleted with
    /// `null` are left out).
    pub fn event_data(&self) -> Map<String, Value> {
        let mut out: Map<String, Value> =
            self.changes.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone()))).collect();
        out.extend(self.transient.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }

    /// Whether the patch changes nothing that is stored.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Applies the patch to stored data; returns whether anything changed.
    pub fn apply(&self, stored: &mut Map<String, Value>) -> bool {
        let mut changed = false;
        for (key, value) in &self.changes {
            match value {
                None => changed |= stored.remove(key).is_some(),
                Some(value) => {
                    if stored.get(key) != Some(value) {
                        stored.insert(key.clone(), value.clone());
                        changed = true;
                    }
                }
            }
        }
        changed
    }

    /// The stored data with the patch applied, checked against [`MAX_DATA_BYTES`].
    pub fn applied_to(&self, stored: &Map<String, Value>) -> Result<(Map<String, Value>, bool)> {
        let (data, changed) = if stored.is_empty() {
            let data = self.stored_values();
            let changed = !data.is_empty();
            (data, changed)
        } else {
            let mut data = stored.clone();
            let changed = self.apply(&mut data);
            (data, changed)
        };
        if changed {
            check_size(json_size(&data))?;
        }
        Ok((data, changed))
    }

    /// The data of a new contact the patch makes, checked against [`MAX_DATA_BYTES`], with its
    /// JSON text: written once, its length is the size checked.
    pub fn new_data(&self) -> Result<NewData> {
        let map = self.stored_values();
        let json = serde_json::to_string(&map).unwrap_or_else(|_| "{}".into());
        check_size(json.len())?;
        Ok(NewData { map, json })
    }

    /// The values the patch stores, as a new contact's data: built at once (the patch's keys
    /// are distinct).
    fn stored_values(&self) -> Map<String, Value> {
        let mut pairs = Vec::with_capacity(self.changes.len());
        pairs.extend(self.changes.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))));
        pairs.into_iter().collect()
    }
}

/// A new contact's data ([`DataPatch::new_data`]): the object and the JSON text it is stored as.
#[derive(Debug, Clone, PartialEq)]
pub struct NewData {
    pub map: Map<String, Value>,
    pub json: String,
}

/// 422 `too_big` when a contact's data would take more than [`MAX_DATA_BYTES`] of JSON.
fn check_size(size: usize) -> Result<()> {
    if size > MAX_DATA_BYTES {
        return Err(Error::invalid(
            "data",
            "too_big",
            format!(
                "a contact's data may hold at most {MAX_DATA_BYTES} bytes of JSON (this would be {size})"
            ),
        ));
    }
    Ok(())
}

/// The bytes of `data`'s JSON, counted as it is written instead of kept.
fn json_size(data: &Map<String, Value>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, data).map_or(usize::MAX, |()| count.0)
}

/// The variables a template or condition sees: stored data, then this request's values on top.
pub fn variables(stored: &Map<String, Value>, transient: &Map<String, Value>) -> Map<String, Value> {
    let mut merged = stored.clone();
    merged.extend(transient.iter().map(|(k, v)| (k.clone(), v.clone())));
    merged
}

/// The JSON type of a value, as error messages name it.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(value: Value) -> DataPatch {
        DataPatch::parse(Some(&value), "data").unwrap()
    }

    fn stored(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn only_the_keys_sent_change() {
        let mut data = stored(json!({ "plan": "free", "age": 30 }));
        assert!(patch(json!({ "plan": "pro" })).apply(&mut data));
        assert_eq!(Value::Object(data), json!({ "plan": "pro", "age": 30 }));
    }

    #[test]
    fn null_deletes_and_empty_string_is_ignored() {
        let mut data = stored(json!({ "plan": "free", "name": "Ada" }));
        assert!(patch(json!({ "plan": null, "name": "" })).apply(&mut data));
        assert_eq!(Value::Object(data.clone()), json!({ "name": "Ada" }));
        assert!(!patch(json!({ "gone": null, "name": "" })).apply(&mut data), "nothing to change");
    }

    #[test]
    fn reserved_keys_are_dropped_silently() {
        let p = patch(json!({
            "id": 1, "svc_id": 2, "svc_email": 3, "email": "x@y.z", "unsubscribeUrl": "u",
            "subscribeUrl": "s", "manageUrl": "m", "plan": "pro"
        }));
        let mut data = Map::new();
        p.apply(&mut data);
        assert_eq!(Value::Object(data), json!({ "plan": "pro" }));
        assert!(p.transient.is_empty());
    }

    #[test]
    fn non_persistent_values_are_for_this_request_only() {
        let p = patch(json!({
            "code": { "value": "123456", "persistent": false },
            "tier": { "value": "gold", "persistent": true },
            "plain": { "value": 1 }
        }));
        let mut data = Map::new();
        p.apply(&mut data);
        assert_eq!(Value::Object(data.clone()), json!({ "tier": "gold", "plain": { "value": 1 } }));
        assert_eq!(Value::Object(p.transient.clone()), json!({ "code": "123456" }));
        assert_eq!(Value::Object(variables(&data, &p.transient))["code"], json!("123456"));
        assert_eq!(
            Value::Object(p.event_data()),
            json!({ "code": "123456", "tier": "gold", "plain": { "value": 1 } })
        );
    }

    #[test]
    fn objects_and_arrays_are_kept_and_replace_the_stored_value() {
        let mut data = stored(json!({ "profile": { "tier": "gold", "since": 2020 } }));
        patch(json!({ "profile": { "tier": "silver" }, "tags": ["a", "b"], "locale": "fr" }))
            .apply(&mut data);
        assert_eq!(
            Value::Object(data),
            json!({ "profile": { "tier": "silver" }, "tags": ["a", "b"], "locale": "fr" })
        );
    }

    #[test]
    fn a_non_object_payload_is_422() {
        let e = DataPatch::parse(Some(&json!([1])), "data").unwrap_err();
        assert_eq!((e.kind(), e.fields()[0].field.as_str()), ("invalid", "data"));
        assert!(DataPatch::parse(Some(&Value::Null), "data").unwrap().is_empty());
    }

    #[test]
    fn oversized_data_is_refused() {
        let big = "x".repeat(MAX_DATA_BYTES);
        let e = patch(json!({ "blob": big })).applied_to(&Map::new()).unwrap_err();
        assert_eq!(e.fields()[0].code, "too_big");
    }
}
