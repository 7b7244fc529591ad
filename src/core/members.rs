//! A project's members and its invitations to addresses with no account.
//!
//! Owners and admins add, change and remove members, with two limits: an admin cannot touch an
//! owner or make anyone an owner, and a project always keeps at least one owner. Any member may
//! remove themselves (leave), unless they are the last owner.

use super::error::{Error, Result, on_duplicate};
use super::ids::{InvitationId, UserId};
use super::invitations;
use crate::config::Config;
use crate::db::Tx;
use crate::db::invitations::{self as rows, Invitation};
use crate::db::projects::{self, Member, Project, Role};
use crate::db::users::{self, User};

/// What adding an address answers: the member, or the invitation mailed instead.
#[derive(Debug)]
pub enum Added {
    Member(Member),
    Invited(Invitation),
}

/// Whether a caller with `actor` role may set a member to `target` (or act on a member who is).
pub fn may_touch(actor: Role, target: Role) -> Result<()> {
    if target == Role::Owner && actor != Role::Owner {
        return Err(Error::forbidden("Only an owner can make, change or remove an owner"));
    }
    Ok(())
}

/// Member `user` of `project`.
pub fn find(conn: &Tx, project: &str, user: &UserId) -> Result<Member> {
    projects::member(conn, project, user)?.ok_or_else(|| UserId::missing(user))
}

/// Adds the user with the (normalised) `address` as `role`, or, when no account has it, invites
/// the address (`inviter` acting with role `actor`).
pub fn add(
    tx: &Tx,
    config: &Config,
    (project, inviter, actor): (&Project, &User, Role),
    address: &str,
    role: Role,
    now: i64,
) -> Result<Added> {
    may_touch(actor, role)?;
    let Some(user) = users::by_email(tx, address)? else {
        return Ok(Added::Invited(invitations::invite(tx, config, project, inviter, address, role, now)?));
    };
    projects::add_member(tx, &project.id, &user.id, role)
        .map_err(|e| on_duplicate(e, "This user is already a member of the project"))?;
    Ok(Added::Member(find(tx, &project.id, &UserId::from_row(user.id))?))
}

/// Revokes the pending invitation `id` of `project`: its link stops working.
pub fn revoke(tx: &Tx, project: &str, actor: Role, id: &InvitationId, now: i64) -> Result<()> {
    let invitation = rows::get(tx, project, id, now)?.ok_or_else(|| InvitationId::missing(id))?;
    may_touch(actor, invitation.role)?;
    rows::delete(tx, project, id)?;
    Ok(())
}

/// Refuses a change that would leave `project` without an owner.
fn keeps_an_owner(tx: &Tx, project: &str, current: &Member, role: Option<Role>) -> Result<()> {
    if current.role == Role::Owner && role != Some(Role::Owner) && projects::owner_count(tx, project)? <= 1 {
        return Err(Error::conflict("A project needs at least one owner; make someone else owner first"));
    }
    Ok(())
}

/// Makes member `user` of `project` a `role`.
pub fn change_role(tx: &Tx, project: &str, actor: Role, user: &UserId, role: Role) -> Result<Member> {
    may_touch(actor, role)?;
    let current = find(tx, project, user)?;
    may_touch(actor, current.role)?;
    keeps_an_owner(tx, project, &current, Some(role))?;
    projects::set_role(tx, project, user, role)?;
    find(tx, project, user)
}

/// Removes member `user` of `project`, or, when `leaving`, the caller themselves.
pub fn remove(tx: &Tx, project: &str, actor: Role, user: &UserId, leaving: bool) -> Result<()> {
    let current = find(tx, project, user)?;
    if !leaving {
        may_touch(actor, current.role)?;
    }
    keeps_an_owner(tx, project, &current, None)?;
    projects::remove_member(tx, project, user)?;
    Ok(())
}
