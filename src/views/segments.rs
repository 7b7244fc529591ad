//! Segments: the view, the bodies that make and change one, and the members' replies.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::segments::Segment as Row;
use crate::views::conditions::ConditionTree;
use crate::views::present;

/// A group of contacts: DYNAMIC (whoever matches its condition now) or STATIC (members added
/// by email).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    pub id: String,
    pub name: String,
    /// In the names of its membership events: `segment.<slug>.entry|exit`.
    pub slug: String,
    pub description: Option<String>,
    /// `DYNAMIC` or `STATIC`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `null` for a STATIC segment.
    #[schema(value_type = Option<ConditionTree>)]
    pub condition: Option<Value>,
    /// Whether entries and exits are recorded as events (DYNAMIC).
    pub track_membership: bool,
    /// As last counted.
    pub member_count: i64,
    #[schema(format = DateTime)]
    pub counted_at: Option<String>,
    /// The membership computation of a tracked segment (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub computation: Option<Computation>,
    pub project_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// Where a tracked segment's membership computation is.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Computation {
    pub running: bool,
    #[schema(format = DateTime)]
    pub computed_at: Option<String>,
    /// Contacts that entered in the last pass.
    pub entered: i64,
    /// Contacts that left in the last pass.
    pub exited: i64,
}

impl From<&Row> for Segment {
    /// The view; `computation` only for a tracked DYNAMIC segment.
    fn from(s: &Row) -> Self {
        let tracked = crate::core::segments::is_tracked_dynamic(s);
        Segment {
            id: s.id.clone(),
            name: s.name.clone(),
            slug: s.slug.clone(),
            description: s.description.clone(),
            kind: s.kind.clone(),
            condition: s.condition.as_ref().map(crate::core::conditions::canonical),
            track_membership: s.track_membership,
            member_count: s.member_count,
            counted_at: s.counted_at.map(iso),
            computation: tracked.then(|| Computation {
                running: s.compute_cursor.is_some(),
                computed_at: s.computed_at.map(iso),
                entered: s.compute_entered,
                exited: s.compute_exited,
            }),
            project_id: s.project_id.clone(),
            created_at: iso(s.created_at),
            updated_at: iso(s.updated_at),
        }
    }
}

/// DYNAMIC (whoever matches the condition) or STATIC (members added by hand).
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum SegmentKind {
    #[schema(rename = "DYNAMIC")]
    Dynamic,
    #[schema(rename = "STATIC")]
    Static,
}

/// `POST /segments`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "name": "Pro users", "type": "DYNAMIC", "condition": { "logic": "AND", "groups": [{ "filters": [{ "field": "data.plan", "operator": "equals", "value": "pro" }] }] }, "trackMembership": true }))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateSegment {
    /// 1 to 100 characters.
    #[schema(required, value_type = String, min_length = 1, max_length = 100)]
    pub name: Option<String>,
    /// At most 500 characters.
    pub description: Option<String>,
    /// `DYNAMIC` (the default) or `STATIC`.
    #[serde(rename = "type")]
    #[schema(value_type = Option<SegmentKind>)]
    pub kind: Option<String>,
    /// Required for DYNAMIC (a 400 with the short `{error}` body without it).
    #[schema(value_type = Option<ConditionTree>)]
    pub condition: Option<Value>,
    /// Record entries and exits as events (default `false`).
    pub track_membership: Option<bool>,
}

/// `PATCH /segments/{id}`: a field left out stays; `description: null` clears it. The type
/// cannot change: `type` may be sent only as the segment's own (as a client sending back what
/// it read does).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ChangeSegment {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ConditionTree>)]
    pub condition: Option<Value>,
    /// The segment's own type, or left out; another type is refused.
    #[serde(rename = "type")]
    #[schema(value_type = Option<SegmentKind>)]
    pub kind: Option<String>,
    pub track_membership: Option<bool>,
}

/// `POST /segments/count`: how many contacts a condition matches now.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CountBody {
    #[schema(value_type = ConditionTree)]
    pub condition: Value,
}

/// `POST /segments/{id}/members`: add contacts to a STATIC segment by email.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddMembers {
    /// 1 to 1,000 addresses.
    #[schema(required, value_type = Vec<String>, min_items = 1, max_items = 1000)]
    pub emails: Option<Value>,
    /// Make contacts for addresses that have none (default `false`).
    #[serde(default)]
    pub create_missing: bool,
    /// The subscription of contacts made here (default `true`).
    pub subscribed: Option<bool>,
}

/// `DELETE /segments/{id}/members`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveMembers {
    /// 1 to 1,000 addresses.
    #[schema(required, value_type = Vec<String>, min_items = 1, max_items = 1000)]
    pub emails: Option<Value>,
}

/// What adding members did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembersAdded {
    pub segment: Segment,
    pub member_count: i64,
    pub added: usize,
    pub already_members: usize,
    pub created: usize,
    /// Addresses with no contact (when `createMissing` is false).
    pub not_found: Vec<String>,
}

/// What removing members did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembersRemoved {
    pub segment: Segment,
    pub member_count: i64,
    pub removed: usize,
    pub not_members: Vec<String>,
}
