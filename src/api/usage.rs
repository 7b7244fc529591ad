//! What uses a field, an event, a segment or a template: the `usage` endpoints' lists, read from
//! the references registry (`db::refs`).

use serde_json::{Map, Value, json};

use crate::db::{DbError, refs};
use crate::error::ApiError;
use crate::state::AppState;

/// `{segments: [{id, name}], campaigns: [{id, name, status}], workflows: [{id, name, enabled}]}`
/// for `name` of `kind` in `project`.
pub async fn lists(
    state: &AppState,
    project: &str,
    kind: &'static str,
    name: &str,
) -> Result<Map<String, Value>, ApiError> {
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
    let mut out = Map::new();
    out.insert(
        "segments".into(),
        segments.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect(),
    );
    out.insert(
        "campaigns".into(),
        campaigns
            .iter()
            .map(|(id, name, status)| json!({ "id": id, "name": name, "status": status }))
            .collect(),
    );
    out.insert(
        "workflows".into(),
        workflows
            .iter()
            .map(|(id, name, enabled)| json!({ "id": id, "name": name, "enabled": enabled }))
            .collect(),
    );
    Ok(out)
}
