//! An import's choices (issue 32, item 6): what happens to subscriptions, which topics its
//! contacts join, and what each column becomes (skipped, renamed, typed). Without any, an import
//! is api.md's: new contacts subscribed, a `subscribed` column dropped, cells typed by the rules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::{Error, FieldError, Result};

/// What an import does to subscriptions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subscription {
    /// api.md's: new contacts subscribed, existing ones keep their state.
    #[default]
    Subscribe,
    /// Every row's contact unsubscribed.
    Unsubscribe,
    /// The `subscribed` column says, row by row (an empty cell: as `subscribe`).
    FromColumn,
    /// Existing contacts keep their state; new ones are not subscribed.
    Keep,
}

impl Subscription {
    /// The `subscribed` to upsert with and the default for a new contact; `cell` is the row's
    /// `subscribed` column with `FromColumn`.
    pub fn upsert(self, cell: Option<bool>) -> (Option<bool>, bool) {
        match self {
            Subscription::Subscribe => (None, true),
            Subscription::Unsubscribe => (Some(false), false),
            Subscription::FromColumn => (cell, true),
            Subscription::Keep => (None, false),
        }
    }
}

/// What one column becomes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnMap {
    /// Not imported.
    #[serde(default)]
    pub skip: bool,
    /// The custom field's key instead of the column's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rename: Option<String>,
    /// `string`, `number`, `boolean` or `date` instead of the typing rules; a cell that is not
    /// one skips its row, said in the job's errors.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// An import's choices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options {
    #[serde(default)]
    pub subscription: Subscription,
    #[serde(default)]
    pub topics: Vec<String>,
    /// By the column's name as the header row has it.
    #[serde(default)]
    pub mapping: BTreeMap<String, ColumnMap>,
    /// The import said what its contacts consent to (a subscription choice, topics): what it
    /// grants is recorded as their consent. A mapping alone records nothing.
    #[serde(default)]
    pub records_consent: bool,
}

/// Most columns a mapping names.
pub const MAX_MAPPED: usize = 200;

impl Options {
    /// Reads the choices of an upload's parts: `subscription` (`subscribe`, `unsubscribe`,
    /// `from_column`, `keep`), `topics` (a JSON array of ids, or ids separated by commas) and
    /// `mapping` (a JSON object). 422 naming the part for anything else.
    pub fn parse(
        subscription: Option<&str>,
        topics: Option<&str>,
        mapping: Option<&str>,
    ) -> Result<Option<Options>> {
        if subscription.is_none() && topics.is_none() && mapping.is_none() {
            return Ok(None);
        }
        let bad = |field: &str, message: &str| {
            Error::Invalid(vec![FieldError::new(field, "invalid_type", message)])
        };
        let given_subscription = subscription.is_some_and(|s| !s.trim().is_empty());
        let subscription = match subscription.map(str::trim).filter(|s| !s.is_empty()) {
            None => Subscription::default(),
            Some(text) => serde_json::from_value(Value::String(text.to_string())).map_err(|_| {
                bad("subscription", "subscription is subscribe, unsubscribe, from_column or keep")
            })?,
        };
        let topics = match topics.map(str::trim).filter(|t| !t.is_empty()) {
            None => Vec::new(),
            Some(text) if text.starts_with('[') => serde_json::from_str::<Vec<String>>(text)
                .map_err(|_| bad("topics", "topics is a JSON array of topic ids"))?,
            Some(text) => text.split(',').map(|t| t.trim().to_string()).filter(|t| !t.is_empty()).collect(),
        };
        if topics.len() as u64 > super::topics::MAX_TOPICS {
            return Err(bad("topics", "at most 50 topics"));
        }
        let mapping: BTreeMap<String, ColumnMap> = match mapping.map(str::trim).filter(|m| !m.is_empty()) {
            None => BTreeMap::new(),
            Some(text) => serde_json::from_str(text).map_err(|e| {
                bad(
                    "mapping",
                    &format!("mapping is an object of column names to {{skip, rename, type}}: {e}"),
                )
            })?,
        };
        if mapping.len() > MAX_MAPPED {
            return Err(bad("mapping", "a mapping names at most 200 columns"));
        }
        let mut errors = Vec::new();
        for (column, map) in &mapping {
            if let Some(kind) = map.kind.as_deref().filter(|k| !super::forms::FIELD_TYPES.contains(k)) {
                errors.push(FieldError::new(
                    format!("mapping.{column}.type"),
                    "invalid_enum_value",
                    format!("{kind} is no type: string, number, boolean or date"),
                ));
            }
            if let Some(key) = map.rename.as_deref()
                && (key.trim().is_empty()
                    || key == "email"
                    || super::data::is_reserved(key)
                    || key.chars().count() > 200)
            {
                errors.push(FieldError::new(
                    format!("mapping.{column}.rename"),
                    "invalid_string",
                    "a new name is 1 to 200 characters, and not email nor a reserved key",
                ));
            }
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let records_consent = given_subscription || !topics.is_empty();
        Ok(Some(Options { subscription, topics, mapping, records_consent }))
    }

    /// Checks the choices against the file's header: each mapped column is in it, and with
    /// `from_column` so is a `subscribed` column (422 otherwise).
    pub fn check_header(&self, header: &[String]) -> Result<()> {
        let mut errors = Vec::new();
        for (column, map) in &self.mapping {
            if !header.iter().any(|h| h.trim() == column) {
                errors.push(FieldError::new(
                    format!("mapping.{column}"),
                    "not_found",
                    "the file has no such column",
                ));
            } else if column.eq_ignore_ascii_case("email")
                && (map.skip || map.rename.is_some() || map.kind.is_some())
            {
                errors.push(FieldError::new(
                    format!("mapping.{column}"),
                    "invalid_type",
                    "the email column is the contact's address: it cannot be skipped, renamed or typed",
                ));
            }
        }
        if self.subscription == Subscription::FromColumn
            && !header.iter().any(|h| h.trim().eq_ignore_ascii_case("subscribed"))
        {
            errors.push(FieldError::new(
                "subscription",
                "not_found",
                "from_column needs a `subscribed` column in the file",
            ));
        }
        if errors.is_empty() { Ok(()) } else { Err(Error::Invalid(errors)) }
    }
}

/// A cell as the column's chosen type keeps it; `None` when it is not one.
pub fn typed(kind: &str, raw: &str) -> Option<Value> {
    let cell = raw.trim();
    match kind {
        "string" => Some(Value::String(cell.to_string())),
        "number" => cell.parse::<f64>().ok().filter(|n| n.is_finite()).and_then(|n| {
            if n.fract() == 0.0 && n.abs() < 9e15 {
                Some(Value::from(n as i64))
            } else {
                serde_json::Number::from_f64(n).map(Value::Number)
            }
        }),
        "boolean" => match cell.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" | "y" => Some(Value::Bool(true)),
            "false" | "no" | "0" | "n" => Some(Value::Bool(false)),
            _ => None,
        },
        "date" => crate::clock::parse_date(cell).map(|(ms, _)| {
            if cell.len() == 10 {
                Value::String(cell.to_string())
            } else {
                Value::String(crate::clock::iso(ms))
            }
        }),
        _ => None,
    }
}

/// A `subscribed` cell: `None` when empty; the row's error reason when it is no yes or no.
pub fn subscribed_cell(raw: &str) -> std::result::Result<Option<bool>, &'static str> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    match typed("boolean", raw) {
        Some(Value::Bool(b)) => Ok(Some(b)),
        _ => Err("invalid_subscribed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_are_read_and_checked() {
        assert_eq!(Options::parse(None, None, None).unwrap(), None);
        let options = Options::parse(
            Some("from_column"),
            Some("a, b"),
            Some(r#"{"Plan":{"rename":"plan","type":"string"},"Notes":{"skip":true}}"#),
        )
        .unwrap()
        .unwrap();
        assert_eq!(options.subscription, Subscription::FromColumn);
        assert_eq!(options.topics, ["a", "b"]);
        assert!(options.mapping["Notes"].skip);
        assert!(Options::parse(Some("maybe"), None, None).is_err());
        assert!(Options::parse(None, None, Some(r#"{"x":{"type":"color"}}"#)).is_err());
        assert!(Options::parse(None, None, Some(r#"{"x":{"rename":"email"}}"#)).is_err());
        let header = vec!["email".to_string(), "Plan".to_string()];
        assert!(options.check_header(&header).is_err(), "Notes and subscribed are missing");
        let skip_email = Options::parse(None, None, Some(r#"{"email":{"skip":true}}"#)).unwrap().unwrap();
        assert!(skip_email.check_header(&header).is_err(), "the address cannot be skipped");
    }

    #[test]
    fn typed_cells_follow_the_chosen_type() {
        assert_eq!(typed("string", " 007 "), Some(Value::String("007".into())));
        assert_eq!(typed("number", "42"), Some(Value::from(42)));
        assert_eq!(typed("number", "x"), None);
        assert_eq!(typed("boolean", "Yes"), Some(Value::Bool(true)));
        assert_eq!(typed("date", "2026-01-31"), Some(Value::String("2026-01-31".into())));
        assert_eq!(subscribed_cell(""), Ok(None));
        assert_eq!(subscribed_cell("no"), Ok(Some(false)));
        assert_eq!(subscribed_cell("perhaps"), Err("invalid_subscribed"));
    }
}
