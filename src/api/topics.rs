//! Subscription topics (issue 32): `/topics`. A contact's choices are set with
//! `PATCH /contacts/:id` (`topics`); what they mean is `core::topics`.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};

use super::guards::ProjectAccess;
use super::ids::Param;
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::ids::TopicId;
use crate::core::topics;
use crate::db::topics as rows;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::topics::{Topic, TopicFields};

documented_routes!(list, create, update, remove);

/// The project's topics, oldest first.
#[utoipa::path(
    tag = "Topics",
    operation_id = "listTopics",
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The topics", body = Vec<Topic>)),
)]
#[get("/topics")]
async fn list(state: &State<AppState>, access: ProjectAccess) -> Result<Json<Vec<Topic>>, ApiError> {
    let project = access.project.id;
    let all = state.db.run(move |conn| rows::list(conn, &project)).await?;
    Ok(Json(all.iter().map(Topic::from).collect()))
}

/// Adds a topic (at most 50 a project; 409 for a name the project has).
#[utoipa::path(
    tag = "Topics",
    operation_id = "createTopic",
    request_body = TopicFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The topic", body = Topic)),
)]
#[post("/topics", data = "<body>")]
async fn create(
    state: &State<AppState>,
    access: ProjectAccess,
    body: JsonBody<TopicFields, Small>,
) -> Result<Json<Topic>, ApiError> {
    let (project, settings) = (access.project.id, body.0.into());
    let topic = state.db.write(move |tx| topics::create(tx, &project, settings, clock::now_ms())).await?;
    Ok(Json(Topic::from(&topic)))
}

/// Changes a topic's name, description, default or visibility.
#[utoipa::path(
    tag = "Topics",
    operation_id = "updateTopic",
    params(("id" = String, Path)),
    request_body = TopicFields,
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "The topic as changed", body = Topic)),
)]
#[patch("/topics/<id>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TopicId>,
    body: JsonBody<TopicFields, Small>,
) -> Result<Json<Topic>, ApiError> {
    let (id, project, settings) = (id?, access.project.id, body.0.into());
    let topic =
        state.db.write(move |tx| topics::update(tx, &project, &id, settings, clock::now_ms())).await?;
    Ok(Json(Topic::from(&topic)))
}

/// Deletes a topic and the contacts' choices of it; campaigns that targeted it target no topic.
#[utoipa::path(
    tag = "Topics",
    operation_id = "deleteTopic",
    params(("id" = String, Path)),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/topics/<id>")]
async fn remove(
    state: &State<AppState>,
    access: ProjectAccess,
    id: Param<TopicId>,
) -> Result<Status, ApiError> {
    let (id, project) = (id?, access.project.id);
    state.db.write(move |tx| topics::remove(tx, &project, &id)).await?;
    Ok(Status::NoContent)
}
