//! The signed-in user's projects: the project, its members and invitations, the onboarding
//! checklist, the sending reputation, and the bodies that change them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::core::reputation;
use crate::db::invitations::Invitation as InvitationRow;
use crate::db::projects::{Member as MemberRow, Project as Row, Role, Wipe};
use crate::views::accounts::User;

/// A project, with the signed-in user's role in it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub name: String,
    /// For `/v1/track` from browsers and apps.
    pub public_key: Option<String>,
    /// Only right after the keys were made (a new project, or new keys); never shown again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    /// Its keys are refused (by an owner or admin, or a suspension).
    pub disabled: bool,
    /// A reset is under way: the keys are refused until it is done.
    pub resetting: bool,
    #[schema(value_type = RoleName)]
    pub role: Role,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl Project {
    /// The view; `secret_key` only right after it was made.
    pub fn new(project: &Row, public_key: Option<&str>, role: Role, secret_key: Option<&str>) -> Self {
        Project {
            id: project.id.clone(),
            name: project.name.clone(),
            public_key: public_key.map(str::to_string),
            secret_key: secret_key.map(str::to_string),
            disabled: project.disabled,
            resetting: project.wiping == Some(Wipe::Reset),
            role,
            created_at: iso(project.created_at),
            updated_at: iso(project.updated_at),
        }
    }
}

/// A role in a project.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum RoleName {
    #[schema(rename = "OWNER")]
    Owner,
    #[schema(rename = "ADMIN")]
    Admin,
    #[schema(rename = "MEMBER")]
    Member,
}

/// A project's id and name.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectRef {
    pub id: String,
    pub name: String,
}

impl From<&Row> for ProjectRef {
    fn from(p: &Row) -> Self {
        ProjectRef { id: p.id.clone(), name: p.name.clone() }
    }
}

/// A member of a project.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub user_id: String,
    #[schema(format = Email)]
    pub email: String,
    #[schema(value_type = RoleName)]
    pub role: Role,
    /// When they joined.
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<&MemberRow> for Member {
    fn from(m: &MemberRow) -> Self {
        Member {
            user_id: m.user_id.clone(),
            email: m.email.clone(),
            role: m.role,
            created_at: iso(m.created_at),
        }
    }
}

/// A pending invitation: a mailed link that creates the account and joins.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invitation {
    pub id: String,
    #[schema(format = Email)]
    pub email: String,
    #[schema(value_type = RoleName)]
    pub role: Role,
    /// The inviting user's id (`null` once that account is gone).
    pub invited_by: Option<String>,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
}

impl From<&InvitationRow> for Invitation {
    fn from(i: &InvitationRow) -> Self {
        Invitation {
            id: i.id.clone(),
            email: i.email.clone(),
            role: i.role,
            invited_by: i.invited_by.clone(),
            created_at: iso(i.created_at),
            expires_at: iso(i.expires_at),
        }
    }
}

/// `POST /projects/{projectId}/members` for an address with no account: 202 with the invitation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Invited {
    pub invitation: Invitation,
}

/// `GET /auth/invitation`: what an invitation offers.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationOffer {
    #[schema(format = Email)]
    pub email: String,
    #[schema(value_type = RoleName)]
    pub role: Role,
    pub project: ProjectRef,
    #[schema(format = DateTime)]
    pub expires_at: String,
    /// The address has an account: its owner signs in to accept.
    pub has_account: bool,
}

/// `POST /auth/accept-invitation`: the user, signed in, and the project they joined.
#[derive(Debug, Serialize, ToSchema)]
pub struct Joined {
    pub user: User,
    pub project: ProjectRef,
}

/// `GET /projects/{projectId}/setup-state`: the onboarding checklist.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetupState {
    pub domain_verified: bool,
    pub first_contact: bool,
    /// An event of the app's own (not one the server records about mail or contacts).
    pub first_event: bool,
    /// Mail that reached a relay or the capture outbox.
    pub first_send: bool,
    pub first_campaign: bool,
    /// Steps done.
    pub completed: usize,
    /// Steps in all.
    pub total: usize,
}

impl From<crate::core::projects::SetupState> for SetupState {
    fn from(s: crate::core::projects::SetupState) -> Self {
        let steps = s.steps();
        SetupState {
            domain_verified: s.domain_verified,
            first_contact: s.first_contact,
            first_event: s.first_event,
            first_send: s.first_send,
            first_campaign: s.first_campaign,
            completed: steps.iter().filter(|done| **done).count(),
            total: steps.len(),
        }
    }
}

/// The project's sending reputation over the window, the thresholds, and its suspensions.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Security {
    pub project_id: String,
    /// `ok`, `warning` (a rate above half its threshold) or `suspended`.
    pub status: &'static str,
    pub disabled: bool,
    /// The open suspension, while suspended.
    pub suspension: Option<Suspension>,
    pub window: Window,
    /// Mail sent in the window.
    pub sent: i64,
    pub hard_bounces: i64,
    pub complaints: i64,
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    pub thresholds: Thresholds,
    /// The latest 20, newest first.
    pub suspensions: Vec<Suspension>,
}

/// A suspension: sending stopped because a rate passed its threshold.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    pub id: String,
    pub reason: String,
    pub sent: i64,
    pub hard_bounces: i64,
    pub complaints: i64,
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When the project was enabled again.
    #[schema(format = DateTime)]
    pub lifted_at: Option<String>,
}

/// The rolling window the rates are counted over.
#[derive(Debug, Serialize, ToSchema)]
pub struct Window {
    pub days: u32,
    #[schema(format = DateTime)]
    pub from: String,
    #[schema(format = DateTime)]
    pub to: String,
}

/// `[reputation]` as configured.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thresholds {
    pub bounce_rate: f64,
    pub complaint_rate: f64,
    /// Mail in the window before the rates count.
    pub min_sent: u32,
    /// Whether a breach suspends the project (otherwise it is only reported).
    pub suspend: bool,
}

impl From<&crate::db::reputation::Suspension> for Suspension {
    fn from(s: &crate::db::reputation::Suspension) -> Self {
        Suspension {
            id: s.id.clone(),
            reason: s.reason.clone(),
            sent: s.sent,
            hard_bounces: s.hard_bounces,
            complaints: s.complaints,
            created_at: iso(s.created_at),
            lifted_at: s.lifted_at.map(iso),
        }
    }
}

impl From<reputation::Security> for Security {
    fn from(s: reputation::Security) -> Self {
        let (days, from, to) = s.window;
        let (r, t) = (s.rates, s.thresholds);
        Security {
            project_id: s.project_id,
            status: s.status.as_str(),
            disabled: s.disabled,
            suspension: s.open.as_ref().map(Suspension::from),
            window: Window { days, from: iso(from), to: iso(to) },
            sent: r.sent,
            hard_bounces: r.hard_bounces,
            complaints: r.complaints,
            bounce_rate: r.bounce_rate(),
            complaint_rate: r.complaint_rate(),
            thresholds: Thresholds {
                bounce_rate: t.bounce_rate,
                complaint_rate: t.complaint_rate,
                min_sent: t.min_sent,
                suspend: t.suspend,
            },
            suspensions: s.suspensions.iter().map(Suspension::from).collect(),
        }
    }
}

/// `POST /users/@me/projects`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct NewProject {
    /// 1 to 100 characters, on one line.
    #[schema(required, value_type = String, min_length = 1, max_length = 100)]
    pub name: Option<String>,
}

/// `PATCH /users/@me/projects/{projectId}`: only what is given changes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProjectChanges {
    pub name: Option<String>,
    /// `true` refuses the keys; `false` enables the project again and ends a suspension.
    pub disabled: Option<bool>,
    /// The default language of the public pages (`en`, `de`, `fr`, `es`, `pt` or `nl`; null
    /// for none), as `PATCH /branding` sets it: what Plunk's clients send.
    #[serde(default, deserialize_with = "super::present")]
    #[schema(value_type = Option<String>)]
    pub language: Option<Option<String>>,
}

/// `POST /projects/{projectId}/members`.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(example = json!({ "email": "grace@example.com", "role": "ADMIN" }))]
pub struct NewMember {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
    /// `OWNER`, `ADMIN` or `MEMBER` (the default); only an owner makes an owner.
    #[schema(value_type = Option<RoleName>)]
    pub role: Option<String>,
}

/// `PATCH /projects/{projectId}/members/{user_id}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct RoleChange {
    /// `OWNER`, `ADMIN` or `MEMBER`.
    #[schema(required, value_type = RoleName)]
    pub role: Option<String>,
}
