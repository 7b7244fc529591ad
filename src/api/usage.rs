//! What uses a field, an event, a segment or a template: the `usage` endpoints' lists, read from
//! the references registry (`db::refs`).

use crate::db::{DbError, refs};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::usage::{CampaignRef, SegmentRef, Usage, WorkflowRef};

/// `{segments: [{id, name}], campaigns: [{id, name, status}], workflows: [{id, name, enabled}]}`
/// for `name` of `kind` in `project`.
pub async fn lists(
    state: &AppState,
    project: &str,
    kind: &'static str,
    name: &str,
) -> Result<Usage, ApiError> {
    let (project, name) = (project.to_string(), name.to_string());
    let (segments, campaigns, workflows) = state
        .db
        .run(move |conn| {
            Ok::<_, DbError>((
                refs::segments(conn, &project, kind, &name)?,
                refs::campaigns(conn, &project, kind, &name)?,
                refs::workflows(conn, &project, kind, &name)?,
            ))
        })
        .await?;
    Ok(Usage {
        segments: segments.into_iter().map(|(id, name)| SegmentRef { id, name }).collect(),
        campaigns: campaigns.into_iter().map(|(id, name, status)| CampaignRef { id, name, status }).collect(),
        workflows: workflows
            .into_iter()
            .map(|(id, name, enabled)| WorkflowRef { id, name, enabled })
            .collect(),
    })
}
