//! The usage lists: what refers to a field, an event or a template (segments, campaigns,
//! workflows), read from the references registry.

use serde::Serialize;
use utoipa::ToSchema;

/// A segment that refers to the thing.
#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentRef {
    pub id: String,
    pub name: String,
}

/// A campaign that refers to the thing.
#[derive(Debug, Serialize, ToSchema)]
pub struct CampaignRef {
    pub id: String,
    pub name: String,
    pub status: String,
}

/// A workflow that refers to the thing.
#[derive(Debug, Serialize, ToSchema)]
pub struct WorkflowRef {
    pub id: String,
    pub name: String,
    pub enabled: bool,
}

/// What refers to a field, an event or a template.
#[derive(Debug, Serialize, ToSchema)]
pub struct Usage {
    pub segments: Vec<SegmentRef>,
    pub campaigns: Vec<CampaignRef>,
    pub workflows: Vec<WorkflowRef>,
}

/// `GET /events/{name}/usage`.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventUsage {
    pub event: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// `GET /contacts/fields/{field}/usage`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FieldUsage {
    pub field: String,
    #[serde(flatten)]
    pub usage: Usage,
}

/// `GET /templates/{id}/usage` (segments never refer to templates).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateUsage {
    pub template_id: String,
    pub campaigns: Vec<CampaignRef>,
    pub workflows: Vec<WorkflowRef>,
}
