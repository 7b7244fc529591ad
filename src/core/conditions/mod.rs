//! Condition trees (api.md "Condition tree", appliance.md section 11): the one evaluator behind
//! segments, campaign audiences and workflow conditions.
//!
//! A tree is parsed and checked once ([`Condition::parse`]), which turns every filter value into
//! the exact test both paths run: `db::audience` compiles a tree to a `WHERE` expression over
//! the `contacts` table (alias `c`) for sets and counts, and [`eval`] decides one contact in memory.
//! Both follow the same rules, and a property test holds them to it:
//!
//! - `logic` is `AND` or `OR` over the groups (`AND` when absent); the filters of a group are
//!   ANDed, and its nested `conditions` is ANDed with them. An empty group or tree matches.
//! - Fields: `email`, `subscribed`, `snoozed` (marketing mail paused now: `snoozedUntil` is
//!   later; `equals` a boolean, `exists`), `createdAt`, `updatedAt`, `data.<dotted path>`, and
//!   `topic.<id>` (whether the contact is subscribed to the topic: its own choice, else the
//!   topic's `defaultOptIn`; `equals`/`notEquals` a boolean, `exists`). A custom
//!   field that is absent or `null` is missing, and a filter on a missing field matches only
//!   `notEquals`, `notContains` and `notExists`.
//! - `equals` compares by the stored value's type: a stored number equals a number (or a string
//!   that reads as that number), a stored string equals the same string, a stored boolean equals
//!   `true`/`false` (or the strings `"true"`/`"false"`). `email` compares without letter case.
//! - `contains` finds the value as text inside a stored string, ignoring ASCII letter case, or
//!   as an element (by `equals`) of a stored array.
//! - `greaterThan`/`gt`, `lessThan`/`lt`, `greaterThanOrEqual`, `lessThanOrEqual` take a number
//!   (compared with stored numbers) or a date (compared with stored dates in either form of the
//!   type table, and with `createdAt`/`updatedAt`).
//! - `within` / `olderThan` take an amount and a `unit` (`minutes`, `hours`, `days`; `days` when
//!   absent) and match full ISO 8601 dates (and `createdAt`/`updatedAt`) in the last amount of
//!   time up to now, or before it.
//! - Event filters name the event in `field`: `triggered`, `notTriggered`, `triggeredWithin`
//!   (an occurrence in the last amount of time), `notTriggeredWithin`, `triggeredOlderThan` (an
//!   occurrence before it).
//! - `memberOfSegment` / `notMemberOfSegment` take a segment id: a static segment's stored
//!   members, or a dynamic segment's condition evaluated live.
//! - The names Plunk's clients use mean the same and are stored in this form: an event filter's
//!   `event.<name>`, `contact.email` (and `subscribed`, `createdAt`, `updatedAt`),
//!   `contact.data.<path>`, and a membership filter's `field: "segment.<id>"`.

pub mod eval;
mod names;
mod parse;
pub mod resolve;
#[cfg(test)]
pub(crate) mod tests;

use serde_json::Value;

use crate::core::error::Result;
pub use names::canonical;
#[cfg(test)]
pub(crate) use names::{EVENT_OPERATORS, FIELD_OPERATORS, SEGMENT_OPERATORS};
pub use parse::{MAX_EVENT_NAME, MAX_FILTERS, MAX_GROUPS, MAX_NESTING};

pub use crate::db::audience::tree::{
    Bound, CampaignTest, Comparison, Condition, EventTest, Field, Filter, Group, Logic, Scalar, Target, Test,
};

impl Condition {
    /// Reads and checks a condition tree; errors are 422 naming the node (`path` is where the
    /// tree sits in the request, e.g. `condition`).
    pub fn parse(value: &Value, path: &str) -> Result<Condition> {
        parse::tree(value, path, false)
    }

    /// [`Condition::parse`] for a workflow's CONDITION step, whose filters may also name
    /// `event.<path>` and `workflow.<path>` of the execution's context. Such a tree is decided
    /// in memory only ([`eval`]): the database has no context to read.
    pub fn parse_in_workflow(value: &Value, path: &str) -> Result<Condition> {
        parse::tree(value, path, true)
    }

    /// Every filter of the tree, nested conditions included (not the conditions of segments it
    /// refers to).
    pub fn filters(&self) -> Vec<&Filter> {
        let mut out = Vec::new();
        self.walk(&mut |f| out.push(f));
        out
    }

    fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Filter)) {
        for group in &self.groups {
            group.filters.iter().for_each(&mut *visit);
            if let Some(nested) = &group.conditions {
                nested.walk(visit);
            }
        }
    }

    /// What the tree names, for the usage lists: contact fields (`data.plan`, `email`, ...),
    /// event names and segment ids.
    pub fn references(&self) -> References {
        let mut refs = References::default();
        for filter in self.filters() {
            match filter {
                Filter::Field { field: Field::Context { .. }, .. } => {}
                Filter::Field { field: Field::Topic { id, .. }, .. } => refs.topics.push(id.clone()),
                Filter::Field { field, .. } => refs.fields.push(field.name()),
                Filter::Event { name, .. } => refs.events.push(name.clone()),
                Filter::Segment { id, .. } => refs.segments.push(id.clone()),
                // Checked when the condition is resolved; a campaign is not a registry kind.
                Filter::Campaign { .. } => {}
            }
        }
        for list in [&mut refs.fields, &mut refs.events, &mut refs.segments, &mut refs.topics] {
            list.sort();
            list.dedup();
        }
        refs
    }
}

/// The names a condition refers to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct References {
    pub fields: Vec<String>,
    pub events: Vec<String>,
    pub segments: Vec<String>,
    pub topics: Vec<String>,
}

impl References {
    /// As the references registry keeps them: `(kind, name)` pairs.
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        let kinds = [
            ("field", &self.fields),
            ("event", &self.events),
            ("segment", &self.segments),
            ("topic", &self.topics),
        ];
        kinds.into_iter().flat_map(|(kind, names)| names.iter().map(move |n| (kind, n.as_str()))).collect()
    }
}

impl Field {
    /// The field as filters name it.
    pub fn name(&self) -> String {
        match self {
            Field::Email => "email".into(),
            Field::Subscribed => "subscribed".into(),
            Field::Snoozed => "snoozed".into(),
            Field::CreatedAt => "createdAt".into(),
            Field::UpdatedAt => "updatedAt".into(),
            Field::Data(path) => format!("data.{}", path.join(".")),
            Field::Topic { id, .. } => format!("topic.{id}"),
            Field::Context { event, path } => {
                format!("{}.{}", if *event { "event" } else { "workflow" }, path.join("."))
            }
        }
    }
}
