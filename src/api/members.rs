//! Project members: `/projects/<id>/members`, and invitations for emails with no account
//! (`/projects/<id>/invitations`).
//!
//! Any member may list members. Owners and admins add, change and remove them, with two limits:
//! an admin cannot touch an owner or make anyone an owner, and a project always keeps at least
//! one owner. Any member may remove themselves (leave), unless they are the last owner.

use rocket::http::Status;
use rocket::serde::json::Json;
use rocket::{Route, State, delete, get, patch, post, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use super::json::{JsonBody, Small};
use super::roles::{ProjectAdmin, ProjectMember};
use crate::clock;
use crate::core::{email, invitations};
use crate::db::invitations::{self as db_invitations, Invitation};
use crate::db::projects::{self, Member, Role};
use crate::db::{DbError, users};
use crate::error::{ApiError, FieldError, conflict_on_unique};
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![list, add, change_role, remove, invitations_list, revoke]
}

fn member_view(member: &Member) -> Value {
    json!({
        "userId": member.user_id,
        "email": member.email,
        "role": member.role,
        "createdAt": clock::iso(member.created_at),
    })
}

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

/// Whether a caller with `actor` role may set a member to `target` (or act on a member who is).
fn may_touch(actor: Role, target: Role) -> Result<(), ApiError> {
    if target == Role::Owner && actor != Role::Owner {
        return Err(ApiError::forbidden("Only an owner can make, change or remove an owner"));
    }
    Ok(())
}

#[get("/projects/<_>/members")]
async fn list(state: &State<AppState>, member: ProjectMember) -> Result<Json<Value>, ApiError> {
    let project = member.project;
    let members = state.db.run(move |conn| Ok::<_, DbError>(projects::members(conn, &project.id)?)).await?;
    Ok(Json(Value::Array(members.iter().map(member_view).collect())))
}

#[derive(Deserialize)]
struct NewMember {
    email: Option<String>,
    role: Option<String>,
}

/// Adds the user with this email; an email with no account is invited instead (202 with the
/// invitation: a link is mailed that creates the account and joins).
#[post("/projects/<_>/members", data = "<body>")]
async fn add(
    state: &State<AppState>,
    admin: ProjectAdmin,
    body: JsonBody<NewMember, Small>,
) -> Result<(Status, Json<Value>), ApiError> {
    let ProjectMember { project, role: actor, user: inviter } = admin.0;
    let address =
        body.0.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let address = email::normalize(&address).map_err(|why| {
        ApiError::invalid_field("email", "invalid_string", format!("Invalid email: the address {why}"))
    })?;
    let role = parse_role(body.0.role.as_deref(), Some(Role::Member))?;
    may_touch(actor, role)?;
    let config = state.config.clone();
    state
        .db
        .write(move |tx| {
            let Some(user) = users::by_email(tx, &address)? else {
                let invited =
                    invitations::invite(tx, &config, &project, &inviter, &address, role, clock::now_ms())?;
                return Ok((Status::Accepted, Json(json!({ "invitation": invitation_view(&invited) }))));
            };
            projects::add_member(tx, &project.id, &user.id, role)
                .map_err(|e| conflict_on_unique(e, "This user is already a member of the project"))?;
            let member = projects::member(tx, &project.id, &user.id)?
                .ok_or_else(|| ApiError::internal("member vanished"))?;
            Ok((Status::Ok, Json(member_view(&member))))
        })
        .await
}

/// An invitation as the API shows it.
pub fn invitation_view(invitation: &Invitation) -> Value {
    json!({
        "id": invitation.id,
        "email": invitation.email,
        "role": invitation.role,
        "invitedBy": invitation.invited_by,
        "createdAt": clock::iso(invitation.created_at),
        "expiresAt": clock::iso(invitation.expires_at),
    })
}

/// The project's pending invitations, newest first.
#[get("/projects/<_>/invitations")]
async fn invitations_list(state: &State<AppState>, member: ProjectMember) -> Result<Json<Value>, ApiError> {
    let project = member.project.id;
    let pending = state
        .db
        .run(move |conn| Ok::<_, DbError>(db_invitations::for_project(conn, &project, clock::now_ms())?))
        .await?;
    Ok(Json(Value::Array(pending.iter().map(invitation_view).collect())))
}

/// Revokes a pending invitation: its link stops working.
#[delete("/projects/<_>/invitations/<id>")]
async fn revoke(state: &State<AppState>, admin: ProjectAdmin, id: &str) -> Result<Status, ApiError> {
    let ProjectMember { project, role: actor, .. } = admin.0;
    let id = id.to_string();
    state
        .db
        .write(move |tx| {
            let invitation = db_invitations::get(tx, &project.id, &id, clock::now_ms())?
                .ok_or_else(|| ApiError::not_found("No pending invitation with this id in the project"))?;
            may_touch(actor, invitation.role)?;
            db_invitations::delete(tx, &project.id, &id)?;
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(Status::NoContent)
}

#[derive(Deserialize)]
struct RoleChange {
    role: Option<String>,
}

#[patch("/projects/<_>/members/<user_id>", data = "<body>")]
async fn change_role(
    state: &State<AppState>,
    admin: ProjectAdmin,
    user_id: &str,
    body: JsonBody<RoleChange, Small>,
) -> Result<Json<Value>, ApiError> {
    let ProjectMember { project, role: actor, .. } = admin.0;
    let role = parse_role(body.0.role.as_deref(), None)?;
    may_touch(actor, role)?;
    let user_id = user_id.to_string();
    let member = state
        .db
        .write(move |tx| {
            let current = projects::member(tx, &project.id, &user_id)?
                .ok_or_else(|| ApiError::not_found("This user is not a member of the project"))?;
            may_touch(actor, current.role)?;
            if current.role == Role::Owner
                && role != Role::Owner
                && projects::owner_count(tx, &project.id)? <= 1
            {
                return Err(ApiError::conflict(
                    "A project needs at least one owner; make someone else owner first",
                ));
            }
            projects::set_role(tx, &project.id, &user_id, role)?;
            projects::member(tx, &project.id, &user_id)?.ok_or_else(|| ApiError::internal("member vanished"))
        })
        .await?;
    Ok(Json(member_view(&member)))
}

#[delete("/projects/<_>/members/<user_id>")]
async fn remove(state: &State<AppState>, member: ProjectMember, user_id: &str) -> Result<Status, ApiError> {
    let leaving = user_id == member.user.id;
    let member = if leaving { member } else { member.at_least(Role::Admin)? };
    let ProjectMember { project, role: actor, .. } = member;
    let user_id = user_id.to_string();
    state
        .db
        .write(move |tx| {
            let current = projects::member(tx, &project.id, &user_id)?
                .ok_or_else(|| ApiError::not_found("This user is not a member of the project"))?;
            if !leaving {
                may_touch(actor, current.role)?;
            }
            if current.role == Role::Owner && projects::owner_count(tx, &project.id)? <= 1 {
                return Err(ApiError::conflict(
                    "A project needs at least one owner; make someone else owner first",
                ));
            }
            projects::remove_member(tx, &project.id, &user_id)?;
            Ok::<_, ApiError>(())
        })
        .await?;
    Ok(Status::NoContent)
}
