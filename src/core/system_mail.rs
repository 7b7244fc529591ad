//! The mail the server sends itself (appliance.md §4): address verification, password reset and
//! invitations. Each is an email row of the [`SYSTEM`] project, so it takes the same queue,
//! retries, relays and capture outbox as all mail; it comes from `[server] system_from`, carries
//! no tracking, and its link opens a dashboard page that hands the token to the API.
//!
//! The texts are Liquid like any body; what varies (the link, a project's name) is passed as
//! variables, so it is escaped in the HTML and cannot add template code.

use crate::core::outbound::{self, Draft};
use crate::core::vocabulary::EmailKind;
use crate::core::vocabulary::EmailSource;
use crate::db::Tx;
use serde_json::{Map, Value, json};

use crate::config::Config;
use crate::db::projects::{Role, SYSTEM};

/// How long a verification link works.
pub const VERIFY_HOURS: i64 = 48;
/// How long a password reset link works.
pub const RESET_HOURS: i64 = 1;
/// How long an invitation link works.
pub const INVITATION_DAYS: i64 = 7;

/// One message the server sends itself.
pub enum SystemMail<'a> {
    VerifyEmail {
        token: &'a str,
    },
    ResetPassword {
        token: &'a str,
    },
    Invitation {
        token: &'a str,
        project: &'a str,
        inviter: &'a str,
        role: Role,
    },
    /// A sign-in with `provider` took over an account made with this address that had never
    /// proved it ([`crate::core::sso::SignIn::Reclaimed`]).
    AccountReclaimed {
        provider: &'a str,
    },
}

impl SystemMail<'_> {
    /// The dashboard page that takes the token, with the token.
    fn link(&self, config: &Config) -> String {
        let (page, token) = match self {
            SystemMail::VerifyEmail { token } => ("verify-email", token),
            SystemMail::ResetPassword { token } => ("reset-password", token),
            SystemMail::Invitation { token, .. } => ("invitation", token),
            SystemMail::AccountReclaimed { .. } => return format!("{}/app/projects", config.public_url()),
        };
        format!("{}/{page}?token={token}", config.public_url())
    }

    /// Subject, HTML body (Liquid) and the variables they use.
    fn content(&self, link: String) -> (&'static str, &'static str, Map<String, Value>) {
        let mut vars = Map::new();
        vars.insert("link".into(), json!(link));
        match self {
            SystemMail::VerifyEmail { .. } => (
                "Confirm your email address",
                "<p>Confirm that this address is yours by opening the link below. It works once, \
                 for 48 hours.</p><p><a href=\"{{ link }}\">Confirm my email address</a></p>\
                 <p>{{ link }}</p><p>If you did not create an account, ignore this message.</p>",
                vars,
            ),
            SystemMail::ResetPassword { .. } => (
                "Reset your password",
                "<p>Someone (we hope you) asked to reset the password of the account with this \
                 address. Open the link below to choose a new one. It works once, for one hour, and \
                 signs you out everywhere.</p><p><a href=\"{{ link }}\">Choose a new password</a></p>\
                 <p>{{ link }}</p><p>If you did not ask, ignore this message: your password stays \
                 as it is.</p>",
                vars,
            ),
            SystemMail::AccountReclaimed { provider } => {
                vars.insert("provider".into(), json!(provider));
                (
                    "Your account was secured",
                    "<p>You signed in with {{ provider }}, which vouches for this address. An \
                     account with this address already existed here, made by someone who never \
                     confirmed the address: possibly not you. It is yours now. Its password was \
                     replaced and everyone signed in to it was signed out.</p><p>Anything in it \
                     was made before you took it over: check its projects and their members, and \
                     make new API keys for any project you keep.</p><p><a href=\"{{ link }}\">\
                     Open your projects</a></p>",
                    vars,
                )
            }
            SystemMail::Invitation { project, inviter, role, .. } => {
                vars.insert("project".into(), json!(project));
                vars.insert("inviter".into(), json!(inviter));
                vars.insert("role".into(), json!(role.as_str().to_lowercase()));
                (
                    "You are invited to {{ project }}",
                    "<p>{{ inviter }} invited you to the project {{ project }} as {{ role }}. Open \
                     the link below to choose a password and join. It works once, for 7 days.</p>\
                     <p><a href=\"{{ link }}\">Join {{ project }}</a></p><p>{{ link }}</p>\
                     <p>If you did not expect this, ignore this message.</p>",
                    vars,
                )
            }
        }
    }
}

/// Queues `mail` to `to` in the caller's transaction; returns the email's id.
pub fn queue(
    conn: &Tx,
    config: &Config,
    to: &str,
    mail: &SystemMail<'_>,
    now: i64,
) -> crate::db::Result<String> {
    let sender = config.system_sender();
    let from = sender.email.to_string();
    let (subject, body, variables) = mail.content(mail.link(config));
    let draft = Draft {
        project_id: SYSTEM.into(),
        to: (to.into(), None),
        from: (from, sender.name.clone()),
        subject: subject.into(),
        body: body.into(),
        variables: Some(Value::Object(variables).to_string()),
        kind: EmailKind::Transactional.into(),
        ..Draft::default()
    };
    Ok(outbound::queue(conn, EmailSource::System, draft, now)?.id)
}

/// The `source_type` of system mail.
pub const SOURCE: &str = "SYSTEM";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_open_the_dashboard_page_for_the_token() {
        let mut config = Config::defaults();
        config.server.public_url = Some("https://mail.example.com/".into());
        let mail = SystemMail::ResetPassword { token: "abc" };
        assert_eq!(mail.link(&config), "https://mail.example.com/reset-password?token=abc");
        let invite =
            SystemMail::Invitation { token: "t", project: "Acme", inviter: "a@b.c", role: Role::Admin };
        let (_, _, vars) = invite.content(invite.link(&config));
        assert_eq!(vars["role"], json!("admin"));
        assert_eq!(vars["link"], json!("https://mail.example.com/invitation?token=t"));
    }
}
