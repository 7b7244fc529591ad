//! The condition tree (segments, campaign audiences, workflow conditions), as the OpenAPI
//! document describes it. Conditions are read by `core::conditions::Condition::parse`, which
//! names each problem by its path; these types only describe what it accepts.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// Groups joined by `logic`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({ "logic": "AND", "groups": [{ "filters": [
    { "field": "data.plan", "operator": "equals", "value": "pro" },
    { "field": "signed-up", "operator": "triggeredWithin", "value": 7, "unit": "days" },
] }] }))]
pub struct ConditionTree {
    /// `AND` or `OR`.
    pub logic: String,
    pub groups: Vec<ConditionGroup>,
}

/// Filters joined by the tree's `logic`, and an optional nested tree.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConditionGroup {
    pub filters: Vec<Filter>,
    #[schema(no_recursion)]
    pub conditions: Option<Box<ConditionTree>>,
}

/// One test.
#[derive(Debug, Serialize, ToSchema)]
pub struct Filter {
    /// `email`, `subscribed`, `createdAt`, `updatedAt`, `data.<path>`; an event's name for the
    /// event operators; a segment's id for the segment operators; `campaign.<id>` for the
    /// campaign operators.
    pub field: String,
    /// Fields: `equals`, `notEquals`, `contains`, `notContains`, `greaterThan`, `lessThan`,
    /// `greaterThanOrEqual`, `lessThanOrEqual`, `gt`, `lt`, `exists`, `notExists`, `within`,
    /// `olderThan`. Events: `triggered`, `triggeredWithin`, `triggeredOlderThan`,
    /// `notTriggered`, `notTriggeredWithin`. Segments: `memberOfSegment`, `notMemberOfSegment`.
    /// Campaigns (what the contact did with that campaign's email): `received`, `notReceived`,
    /// `opened`, `notOpened`, `clicked`, `notClicked`; all but `notReceived` only among those
    /// it was sent to, and a click counts as an open.
    pub operator: String,
    /// What the operator compares with (a number of `unit`s for the time operators).
    pub value: Option<Value>,
    /// `minutes`, `hours` or `days` (the default), with the time operators.
    pub unit: Option<String>,
    /// Event and campaign operators only: count what a machine did too (an `email.opened` fetched by a
    /// privacy proxy, an `email.clicked` by a link scanner). Left out or `false`, only people's.
    #[serde(rename = "includeMachine", skip_serializing_if = "Option::is_none")]
    pub include_machine: Option<bool>,
}
