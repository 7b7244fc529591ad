//! The signed-in user and their projects: `/users/@me` and `/users/@me/projects/...`.

use super::auth::user_view;
use super::guards::Session;
use super::json::{JsonBody, Small};
use super::roles::{ProjectAdmin, ProjectMember, ProjectOwner};
use crate::clock;
use crate::core::{keys, projects as core_projects, reputation};
use crate::db::projects::{self, Project, Role, Wipe};
use crate::db::{DbError, keys as db_keys};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::accounts::User as UserView;
use crate::views::projects::{NewProject, Project as ProjectView, ProjectChanges, Security, SetupState};
use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};

documented_routes!(
    me,
    list,
    read,
    create,
    update,
    security,
    project_security,
    regenerate_keys,
    reset,
    remove,
    setup_state
);

/// The signed-in user.
#[utoipa::path(
    get,
    path = "/users/@me",
    tag = "Account",
    operation_id = "getMe",
    security(("session" = [])),
    responses((status = 200, description = "The user", body = UserView)),
)]
#[get("/users/@me")]
fn me(session: Session) -> Json<UserView> {
    Json(user_view(&session.user))
}

/// The projects the user is a member of, with their role in each.
#[utoipa::path(
    get,
    path = "/users/@me/projects",
    tag = "Account",
    operation_id = "listProjects",
    security(("session" = [])),
    responses((status = 200, description = "The projects", body = Vec<ProjectView>)),
)]
#[get("/users/@me/projects")]
async fn list(state: &State<AppState>, session: Session) -> Result<Json<Vec<ProjectView>>, ApiError> {
    let user = session.user.id.clone();
    let rows = state
        .db
        .run(move |conn| {
            let mut out = Vec::new();
            for (project, role) in projects::for_user(conn, &user)? {
                let public_key = db_keys::public_key(conn, &project.id)?;
                out.push(ProjectView::new(&project, public_key.as_deref(), role, None));
            }
            Ok::<_, DbError>(out)
        })
        .await?;
    Ok(Json(rows))
}

/// One of the user's projects, with their role in it (the dashboard shows what the role allows).
#[utoipa::path(
    get,
    path = "/users/@me/projects/{projectId}",
    tag = "Account",
    operation_id = "getProject",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The project", body = ProjectView)),
)]
#[get("/users/@me/projects/<_>")]
async fn read(state: &State<AppState>, member: ProjectMember) -> Result<Json<ProjectView>, ApiError> {
    let ProjectMember { project, role, .. } = member;
    let id = project.id.clone();
    let public_key = state.db.run(move |conn| db_keys::public_key(conn, &id)).await?;
    Ok(Json(ProjectView::new(&project, public_key.as_deref(), role, None)))
}

fn check_name(name: Option<&str>) -> Result<String, ApiError> {
    let name = name
        .ok_or_else(|| ApiError::validation(vec![FieldError::new("name", "required", "name is required")]))?;
    core_projects::check_name(name)
        .map_err(|why| ApiError::invalid_field("name", "invalid_string", format!("name {why}")))
}

/// Makes a project owned by the user, with its keys: the secret key is shown this once.
#[utoipa::path(
    post,
    path = "/users/@me/projects",
    tag = "Account",
    operation_id = "createProject",
    request_body = NewProject,
    security(("session" = [])),
    responses((status = 200, description = "The project, with its secret key", body = ProjectView)),
)]
#[post("/users/@me/projects", data = "<body>")]
async fn create(
    state: &State<AppState>,
    session: Session,
    body: JsonBody<NewProject, Small>,
) -> Result<Json<ProjectView>, ApiError> {
    let name = check_name(body.0.name.as_deref())?;
    let owner = session.user.id.clone();
    let created =
        state.db.write(move |tx| Ok::<_, ApiError>(core_projects::create(tx, &name, &owner)?)).await?;
    Ok(Json(ProjectView::new(
        &created.project,
        Some(&created.keys.public_key),
        Role::Owner,
        Some(&created.keys.secret_key),
    )))
}

/// Renames, disables or enables the project (owners and admins).
#[utoipa::path(
    patch,
    path = "/users/@me/projects/{projectId}",
    tag = "Account",
    operation_id = "updateProject",
    request_body = ProjectChanges,
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The project", body = ProjectView)),
)]
#[patch("/users/@me/projects/<_>", data = "<body>")]
async fn update(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: JsonBody<ProjectChanges, Small>,
) -> Result<Json<ProjectView>, ApiError> {
    let ProjectMember { project, role, .. } = admin.0;
    let name = body.0.name.as_deref().map(|n| check_name(Some(n))).transpose()?;
    let (disabled, language) = (body.0.disabled, body.0.language);
    let changed = state
        .db
        .write(move |tx| {
            let now = clock::now_ms();
            if let Some(language) = language {
                // Plunk's project `language`: the default language of the public pages.
                let changes =
                    crate::core::branding::Changes { language: Some(language), ..Default::default() };
                crate::core::branding::update(tx, &project.id, changes, now)?;
            }
            let updated = core_projects::update(tx, &project.id, name.as_deref(), disabled, now)?;
            let public_key = db_keys::public_key(tx, &project.id)?;
            Ok::<_, ApiError>((updated, public_key))
        })
        .await;
    // A disabled project's keys stop working with the next request.
    state.keys.forget_all();
    let (updated, public_key) = changed?;
    Ok(Json(ProjectView::new(&updated, public_key.as_deref(), role, None)))
}

/// The onboarding checklist: which first steps the project has taken.
#[utoipa::path(
    get,
    path = "/projects/{projectId}/setup-state",
    tag = "Account",
    operation_id = "getSetupState",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The checklist", body = SetupState)),
)]
#[get("/projects/<_>/setup-state")]
async fn setup_state(state: &State<AppState>, member: ProjectMember) -> Result<Json<SetupState>, ApiError> {
    let id = member.project.id;
    let setup = state.db.run(move |conn| core_projects::setup_state(conn, &id)).await?;
    Ok(Json(setup.into()))
}

/// Bounce and complaint rates over the window, the thresholds, and the recent suspensions.
#[utoipa::path(
    get,
    path = "/users/@me/projects/{projectId}/security",
    tag = "Account",
    operation_id = "getProjectSecurity",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The sending reputation", body = Security)),
)]
#[get("/users/@me/projects/<_>/security")]
async fn security(state: &State<AppState>, member: ProjectMember) -> Result<Json<Security>, ApiError> {
    security_state(state, member.project).await
}

/// The project's security state (the same as under `/users/@me/projects`).
#[utoipa::path(
    get,
    path = "/projects/{projectId}/security",
    tag = "Account",
    operation_id = "getSecurity",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The sending reputation", body = Security)),
)]
#[get("/projects/<_>/security")]
async fn project_security(
    state: &State<AppState>,
    member: ProjectMember,
) -> Result<Json<Security>, ApiError> {
    security_state(state, member.project).await
}

async fn security_state(state: &AppState, project: Project) -> Result<Json<Security>, ApiError> {
    let config = state.config.reputation.clone();
    let view = state
        .db
        .run(move |conn| reputation::state(conn, &project.id, project.disabled, &config, clock::now_ms()))
        .await?;
    Ok(Json(view.into()))
}

/// New keys for the project (owners and admins); the old ones stop working at once. The secret key is shown this once.
#[utoipa::path(
    post,
    path = "/users/@me/projects/{projectId}/regenerate-keys",
    tag = "Account",
    operation_id = "regenerateKeys",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The project, with its new secret key", body = ProjectView)),
)]
#[post("/users/@me/projects/<_>/regenerate-keys")]
async fn regenerate_keys(
    state: &State<AppState>,
    admin: ProjectAdmin,
) -> Result<Json<ProjectView>, ApiError> {
    let ProjectMember { project, role, .. } = admin.0;
    let project_id = project.id.clone();
    let issued = state.db.write(move |tx| Ok::<_, ApiError>(keys::issue(tx, &project_id)?)).await;
    // The old keys stop working with the next request.
    state.keys.forget_all();
    let issued = issued?;
    Ok(Json(ProjectView::new(&project, Some(&issued.public_key), role, Some(&issued.secret_key))))
}

/// Wipes the project's data (contacts, events, emails, templates, campaigns, segments,
/// workflows) and keeps the project, its members, keys, domains and webhook endpoints. Answers
/// at once; a job deletes the rows in small batches, and the keys are refused until it is done.
#[utoipa::path(
    post,
    path = "/users/@me/projects/{projectId}/reset",
    tag = "Account",
    operation_id = "resetProject",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 202, description = "The project, resetting", body = ProjectView)),
)]
#[post("/users/@me/projects/<_>/reset")]
async fn reset(
    state: &State<AppState>,
    owner: ProjectOwner,
) -> Result<(Status, Json<ProjectView>), ApiError> {
    let ProjectMember { project, role, .. } = owner.0;
    let id = project.id.clone();
    let started = state
        .db
        .write(move |tx| {
            let project = core_projects::reset(tx, &id)?;
            Ok::<_, ApiError>((project, db_keys::public_key(tx, &id)?))
        })
        .await;
    state.keys.forget_all();
    let (project, public_key) = started?;
    Ok((Status::Accepted, Json(ProjectView::new(&project, public_key.as_deref(), role, None))))
}

/// Deletes the project: it is gone for its members and keys at once; a job deletes its rows
/// in small batches.
#[utoipa::path(
    delete,
    path = "/users/@me/projects/{projectId}",
    tag = "Account",
    operation_id = "deleteProject",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 204, description = "Deleted")),
)]
#[delete("/users/@me/projects/<_>")]
async fn remove(state: &State<AppState>, owner: ProjectOwner) -> Result<Status, ApiError> {
    let project = owner.0.project;
    let deleted = state.db.write(move |tx| core_projects::start_wipe(tx, &project.id, Wipe::Delete)).await;
    state.keys.forget_all();
    deleted?;
    Ok(Status::NoContent)
}
