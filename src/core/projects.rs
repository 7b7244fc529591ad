//! Creating projects (the row, the owner's membership and the first pair of keys, together),
//! and starting their reset or deletion.

use crate::db::Tx;

use super::keys::{self, IssuedKeys};
use super::track;
use crate::core::error::{Error, Result};
use crate::core::ids::ProjectId;
use crate::db::projects::{self, Project, Role, Wipe};
use crate::db::{jobs, wipe};

/// Longest project name.
pub const MAX_NAME_CHARS: usize = 100;

/// The trimmed name if it is acceptable.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("must be at most {MAX_NAME_CHARS} characters"));
    }
    if name.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(name.to_string())
}

/// A new project with the only copy of its secret key.
#[derive(Debug, Clone)]
pub struct CreatedProject {
    pub project: Project,
    pub keys: IssuedKeys,
}

/// Creates a project owned by `owner` with a fresh pair of keys. Run inside a transaction.
pub fn create(conn: &Tx, name: &str, owner: &str) -> crate::db::Result<CreatedProject> {
    let project = projects::insert(conn, name, owner)?;
    let keys = keys::issue(conn, &project.id)?;
    Ok(CreatedProject { project, keys })
}

/// Starts resetting or deleting the project: from this commit its keys are refused, its
/// workers stop and a durable job deletes its rows in small batches. A deletion may follow a
/// reset under way (the job then finishes with the deletion); a second reset may not.
pub fn start_wipe(conn: &Tx, id: &str, wipe: Wipe) -> Result<()> {
    let project = projects::get(conn, id)?.ok_or_else(|| Error::not_found("Project not found"))?;
    match (project.wiping, wipe) {
        (Some(Wipe::Delete), _) => return Err(Error::not_found("Project not found")),
        (Some(Wipe::Reset), Wipe::Reset) => {
            return Err(Error::conflict("This project is being reset already"));
        }
        _ => {}
    }
    wipe::begin(conn, id, wipe)?;
    jobs::enqueue(conn, &super::jobs::project_wipe(id))?;
    Ok(())
}

/// The onboarding checklist of `GET /projects/:id/setup-state`: each first step taken or not.
#[derive(Debug, Clone, Copy)]
pub struct SetupState {
    pub domain_verified: bool,
    pub first_contact: bool,
    /// An event of the app's own, not one the service records about its mail or contacts.
    pub first_event: bool,
    pub first_send: bool,
    pub first_campaign: bool,
}

impl SetupState {
    /// Each step, in the order the dashboard lists them.
    pub fn steps(&self) -> [bool; 5] {
        [self.domain_verified, self.first_contact, self.first_event, self.first_send, self.first_campaign]
    }
}

/// Where project `id` stands on its first steps.
pub fn setup_state(conn: &Tx, id: &str) -> crate::db::Result<SetupState> {
    let facts = projects::first_steps(conn, id)?;
    Ok(SetupState {
        domain_verified: facts.domain_verified,
        first_contact: facts.has_contact,
        first_event: facts.event_names.iter().any(|name| !track::is_reserved(name)),
        first_send: facts.has_sent,
        first_campaign: facts.has_campaign,
    })
}

/// Renames project `id` or disables it (or enables it again, which ends a suspension); the
/// project as it is now.
pub fn update(tx: &Tx, id: &str, name: Option<&str>, disabled: Option<bool>, now: i64) -> Result<Project> {
    let updated = projects::update(tx, id, name, disabled)?.ok_or_else(|| ProjectId::missing(id))?;
    if disabled == Some(false) {
        super::reputation::lift(tx, id, now)?;
    }
    Ok(updated)
}

/// Starts emptying project `id` of its contacts, events, campaigns and the rest (a job deletes
/// them in small batches); the project as it is now, resetting.
pub fn reset(tx: &Tx, id: &str) -> Result<Project> {
    start_wipe(tx, id, Wipe::Reset)?;
    projects::get(tx, id)?.ok_or_else(|| ProjectId::missing(id))
}

/// The project and `user`'s role in it; 404 when the user is not a member (whether or not the
/// project exists).
pub async fn membership(db: &crate::db::Db, user: &str, project: &str) -> Result<(Project, Role)> {
    let (user, project_id) = (user.to_string(), project.to_string());
    let found = db
        .run(move |conn| {
            let Some(role) = projects::role_of(conn, &project_id, &user)? else { return Ok(None) };
            Ok::<_, crate::db::DbError>(projects::get(conn, &project_id)?.map(|p| (p, role)))
        })
        .await?;
    found.ok_or_else(|| ProjectId::missing(project))
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Shop  ").unwrap(), "Shop");
        assert!(check_name("   ").is_err());
        assert!(check_name(&"x".repeat(101)).is_err());
        assert!(check_name("a\nb").is_err());
    }
}
