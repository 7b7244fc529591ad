//! Project members: `/projects/<id>/members`, and invitations for emails with no account
//! (`/projects/<id>/invitations`).
//!
//! Any member may list members. Owners and admins add, change and remove them, with two limits:
//! an admin cannot touch an owner or make anyone an owner, and a project always keeps at least
//! one owner. Any member may remove themselves (leave), unless they are the last owner.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{State, delete, get, patch, post};
use serde_json::json;

use super::ids::Param;
use super::json::{JsonBody, Small};
use super::roles::{ProjectAdmin, ProjectMember};
use crate::clock;
use crate::core::email;
use crate::core::ids::{InvitationId, UserId};
use crate::core::members;
use crate::db::invitations as db_invitations;
use crate::db::projects::{self, Role};
use crate::error::{ApiError, FieldError};
use crate::state::AppState;
use crate::views::projects::{
    Invitation as InvitationView, Invited, Member as MemberView, NewMember, RoleChange,
};

documented_routes!(list, add, change_role, remove, invitations_list, revoke);

fn parse_role(role: Option<&str>, default: Option<Role>) -> Result<Role, ApiError> {
    match role {
        Some(text) => Role::parse(text).ok_or_else(|| {
            ApiError::validation(vec![
                FieldError::new("role", "invalid_enum_value", "role must be OWNER, ADMIN or MEMBER")
                    .received(json!(text)),
            ])
        }),
        None => default.ok_or_else(|| {
            ApiError::validation(vec![FieldError::new("role", "required", "role is required")])
        }),
    }
}

/// What adding a member answers: the member, or (202) the invitation sent instead.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Added {
    Member(MemberView),
    Invited(Invited),
}

/// The project's members; any member may list them.
#[utoipa::path(
    get,
    path = "/projects/{projectId}/members",
    tag = "Account",
    operation_id = "listMembers",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The members", body = Vec<MemberView>)),
)]
#[get("/projects/<_>/members")]
async fn list(state: &State<AppState>, member: ProjectMember) -> Result<Json<Vec<MemberView>>, ApiError> {
    let project = member.project;
    let members = state.db.run(move |conn| projects::members(conn, &project.id)).await?;
    Ok(Json(members.iter().map(MemberView::from).collect()))
}

/// Adds the user with this email; an email with no account is invited instead (202 with the
/// invitation: a link is mailed that creates the account and joins).
#[utoipa::path(
    post,
    path = "/projects/{projectId}/members",
    tag = "Account",
    operation_id = "addMember",
    request_body = NewMember,
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The new member", body = MemberView), (status = 202, description = "No account has this address: it is invited", body = Invited)),
)]
#[post("/projects/<_>/members", data = "<body>")]
async fn add(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: JsonBody<NewMember, Small>,
) -> Result<(Status, Json<Added>), ApiError> {
    let ProjectMember { project, role: actor, user: inviter } = admin.0;
    let address =
        body.0.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let address = email::normalize(&address).map_err(|why| {
        ApiError::invalid_field("email", "invalid_string", format!("Invalid email: the address {why}"))
    })?;
    let role = parse_role(body.0.role.as_deref(), Some(Role::Member))?;
    let config = state.config.clone();
    let added = state
        .db
        .write(move |tx| {
            members::add(tx, &config, (&project, &inviter, actor), &address, role, clock::now_ms())
        })
        .await?;
    Ok(match added {
        members::Added::Invited(invited) => {
            (Status::Accepted, Json(Added::Invited(Invited { invitation: InvitationView::from(&invited) })))
        }
        members::Added::Member(member) => (Status::Ok, Json(Added::Member(MemberView::from(&member)))),
    })
}

/// The project's pending invitations, newest first.
#[utoipa::path(
    get,
    path = "/projects/{projectId}/invitations",
    tag = "Account",
    operation_id = "listInvitations",
    params(("projectId" = String, Path, description = "The project's id")),
    security(("session" = [])),
    responses((status = 200, description = "The pending invitations", body = Vec<InvitationView>)),
)]
#[get("/projects/<_>/invitations")]
async fn invitations_list(
    state: &State<AppState>,
    member: ProjectMember,
) -> Result<Json<Vec<InvitationView>>, ApiError> {
    let project = member.project.id;
    let pending =
        state.db.run(move |conn| db_invitations::for_project(conn, &project, clock::now_ms())).await?;
    Ok(Json(pending.iter().map(InvitationView::from).collect()))
}

/// Revokes a pending invitation: its link stops working.
#[utoipa::path(
    delete,
    path = "/projects/{projectId}/invitations/{id}",
    tag = "Account",
    operation_id = "revokeInvitation",
    params(("projectId" = String, Path, description = "The project's id"), ("id" = String, Path)),
    security(("session" = [])),
    responses((status = 204, description = "Revoked")),
)]
#[delete("/projects/<_>/invitations/<id>")]
async fn revoke(
    state: &State<AppState>,
    admin: ProjectAdmin,
    id: Param<InvitationId>,
) -> Result<Status, ApiError> {
    let id = id?;
    let ProjectMember { project, role: actor, .. } = admin.0;
    state.db.write(move |tx| members::revoke(tx, &project.id, actor, &id, clock::now_ms())).await?;
    Ok(Status::NoContent)
}

/// Changes a member's role (owners and admins; only an owner touches an owner; a project keeps one owner).
#[utoipa::path(
    patch,
    path = "/projects/{projectId}/members/{user_id}",
    tag = "Account",
    operation_id = "changeMemberRole",
    request_body = RoleChange,
    params(("projectId" = String, Path, description = "The project's id"), ("user_id" = String, Path)),
    security(("session" = [])),
    responses((status = 200, description = "The member", body = MemberView)),
)]
#[patch("/projects/<_>/members/<user_id>", data = "<body>")]
async fn change_role(
    state: &State<AppState>,
    admin: ProjectAdmin,
    user_id: Param<UserId>,
    body: JsonBody<RoleChange, Small>,
) -> Result<Json<MemberView>, ApiError> {
    let user_id = user_id?;
    let ProjectMember { project, role: actor, .. } = admin.0;
    let role = parse_role(body.0.role.as_deref(), None)?;
    let member =
        state.db.write(move |tx| members::change_role(tx, &project.id, actor, &user_id, role)).await?;
    Ok(Json(MemberView::from(&member)))
}

/// Removes a member (owners and admins), or leaves the project (any member, their own id); the last owner stays.
#[utoipa::path(
    delete,
    path = "/projects/{projectId}/members/{user_id}",
    tag = "Account",
    operation_id = "removeMember",
    params(("projectId" = String, Path, description = "The project's id"), ("user_id" = String, Path)),
    security(("session" = [])),
    responses((status = 204, description = "Removed")),
)]
#[delete("/projects/<_>/members/<user_id>")]
async fn remove(
    state: &State<AppState>,
    member: ProjectMember,
    user_id: Param<UserId>,
) -> Result<Status, ApiError> {
    let user_id = user_id?;
    let leaving = user_id == member.user.id;
    let member = if leaving { member } else { member.at_least(Role::Admin)? };
    let ProjectMember { project, role: actor, .. } = member;
    state.db.write(move |tx| members::remove(tx, &project.id, actor, &user_id, leaving)).await?;
    Ok(Status::NoContent)
}
