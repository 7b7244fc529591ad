//! Invitations (issue 15): an owner or admin adds an email with no account to a project; the
//! mailed link creates the account (its address verified by the link) and joins the project
//! with the role given. One pending invitation per project and email; inviting again renews it.

use crate::db::Tx;

use super::accounts::{self, invalid_token};
use super::keys::{digest, random_token};
use super::system_mail::{self, INVITATION_DAYS, SystemMail};
use crate::config::Config;
use crate::core::error::{Error, Result};
use crate::db::invitations::{self, Invitation};
use crate::db::projects::{self, Project, Role};
use crate::db::users::{self, User};

const DAY_MS: i64 = 86_400_000;

/// Records (or renews) the invitation of `email` to `project` and mails its link.
pub fn invite(
    conn: &Tx,
    config: &Config,
    project: &Project,
    inviter: &User,
    email: &str,
    role: Role,
    now: i64,
) -> crate::db::Result<Invitation> {
    let token = random_token();
    let invitation = Invitation {
        id: crate::db::new_id(),
        project_id: project.id.clone(),
        email: email.into(),
        role,
        invited_by: Some(inviter.id.clone()),
        created_at: now,
        expires_at: now + INVITATION_DAYS * DAY_MS,
    };
    let invitation = invitations::upsert(conn, &invitation, &digest(&token))?;
    let mail =
        SystemMail::Invitation { token: &token, project: &project.name, inviter: &inviter.email, role };
    system_mail::queue(conn, config, email, &mail, now)?;
    Ok(invitation)
}

/// The pending invitation a token names, and its project.
pub fn open(conn: &Tx, token: &str, now: i64) -> Result<(Invitation, Project)> {
    let invitation = invitations::by_digest(conn, &digest(token), now)?.ok_or_else(invalid_token)?;
    let project = projects::get(conn, &invitation.project_id)?.ok_or_else(invalid_token)?;
    Ok((invitation, project))
}

/// Accepts an invitation for someone without an account: creates it with `password_hash`, its
/// address verified, and joins the project. 409 when the address has an account by now (its
/// owner signs in and accepts with [`accept_as`]).
pub fn accept_new(conn: &Tx, token: &str, password_hash: &str, now: i64) -> Result<(User, Project)> {
    let (invitation, project) = open(conn, token, now)?;
    if users::by_email(conn, &invitation.email)?.is_some() {
        return Err(Error::conflict(
            "An account uses this address now: sign in with it, then open the invitation link again",
        ));
    }
    let user = accounts::insert_user(conn, &invitation.email, password_hash)?;
    users::set_verified(conn, &user.id)?;
    join(conn, &invitation, &user.id)?;
    Ok((User { email_verified: true, ..user }, project))
}

/// Accepts an invitation as the signed-in `user`, whose address must be the one invited.
pub fn accept_as(conn: &Tx, token: &str, user: &User, now: i64) -> Result<Project> {
    let (invitation, project) = open(conn, token, now)?;
    if invitation.email != user.email {
        return Err(Error::forbidden(format!(
            "This invitation is for another address; sign in as {} to accept it",
            invitation.email
        )));
    }
    users::set_verified(conn, &user.id)?;
    join(conn, &invitation, &user.id)?;
    Ok(project)
}

/// Adds the member (keeping a role they already have) and ends the invitation.
fn join(conn: &Tx, invitation: &Invitation, user: &str) -> crate::db::Result<()> {
    if projects::member(conn, &invitation.project_id, user)?.is_none() {
        projects::add_member(conn, &invitation.project_id, user, invitation.role)?;
    }
    invitations::delete(conn, &invitation.project_id, &invitation.id)?;
    Ok(())
}
