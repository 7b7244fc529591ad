//! Authorization in types: who the signed-in user is in the project a route names.
//!
//! Routes under `/users/@me/projects/<id>` and `/projects/<id>/...` take one of these guards
//! instead of checking roles in the handler (vaultwarden's `OrgHeaders` → `AdminHeaders`):
//! - [`ProjectMember`]: any member, with their role;
//! - [`ProjectAdmin`]: an OWNER or ADMIN (403 otherwise);
//! - [`ProjectOwner`]: an OWNER (403 otherwise).
//!
//! The project id is the route's ignored segment `<_>` (`/users/@me/projects/<_>`,
//! `/projects/<_>/members`): the guard reads it, so handlers never see an unchecked id. The membership is resolved once per request and
//! cached, so stacked guards query once. A project the user is not a member of answers 404,
//! exactly like one that does not exist, so ids of other tenants reveal nothing.

use rocket::request::{FromRequest, Outcome, Request};

use super::guards::Session;
use crate::db::projects::{Project, Role};
use crate::db::users::User;
use crate::error::{ApiError, stash};
use crate::state::AppState;

/// A signed-in member of the project the route names, and their role in it.
#[derive(Clone)]
pub struct ProjectMember {
    pub user: User,
    pub project: Project,
    pub role: Role,
}

/// An owner or admin of the project the route names.
pub struct ProjectAdmin(pub ProjectMember);

/// An owner of the project the route names.
pub struct ProjectOwner(pub ProjectMember);

impl ProjectMember {
    /// The member, when their role is at least `needed`; 403 otherwise.
    pub fn at_least(self, needed: Role) -> Result<ProjectMember, ApiError> {
        if self.role >= needed {
            return Ok(self);
        }
        Err(ApiError::forbidden(match needed {
            Role::Owner => "Only an owner of the project can do this",
            _ => "Only owners and admins of the project can do this",
        }))
    }
}

/// The route's `<_>` segment: the project's id.
fn project_id<'r>(req: &'r Request<'_>) -> Option<&'r str> {
    let route = req.route()?;
    let index = route.uri.path().split('/').filter(|s| !s.is_empty()).position(|s| s == "<_>")?;
    req.routed_segment(index)
}

struct Resolved(Result<ProjectMember, ApiError>);

async fn resolve<'r>(req: &'r Request<'_>) -> &'r Resolved {
    req.local_cache_async(async {
        let session = match Session::from_request(req).await {
            Outcome::Success(session) => session,
            Outcome::Error((_, e)) => return Resolved(Err(e)),
            Outcome::Forward(_) => return Resolved(Err(ApiError::missing_auth("Sign in first"))),
        };
        let Some(id) = project_id(req) else {
            return Resolved(Err(ApiError::internal("a project guard is used on a route without <_>")));
        };
        let state = req.rocket().state::<AppState>().expect("AppState is always managed");
        let found = crate::core::projects::membership(&state.db, &session.user.id, id).await;
        Resolved(found.map_err(ApiError::from).map(|(project, role)| ProjectMember {
            user: session.user,
            project,
            role,
        }))
    })
    .await
}

async fn member_with(req: &Request<'_>, needed: Role) -> Outcome<ProjectMember, ApiError> {
    match resolve(req).await.0.clone().and_then(|member| member.at_least(needed)) {
        Ok(member) => Outcome::Success(member),
        Err(e) => Outcome::Error(stash(req, e)),
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ProjectMember {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        member_with(req, Role::Member).await
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ProjectAdmin {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        member_with(req, Role::Admin).await.map(ProjectAdmin)
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ProjectOwner {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        member_with(req, Role::Owner).await.map(ProjectOwner)
    }
}
