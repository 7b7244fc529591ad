//! A first hour without DNS (issue 33, item 1): while the server captures mail (no relay
//! configured), every project has a sandbox sender domain, verified for sending, so a newcomer
//! without a spare domain can save a template, test-send, send a campaign and run a workflow, all
//! of it kept in the outbox. Once a relay is configured the sandbox is no longer verified: mail
//! from it would leave the machine under a name no one owns.
//!
//! The domain is not a row: it is the project's by its name, `<12 hex of the project id>.sandbox.invalid`
//! (`.invalid` is reserved by RFC 2606 and never resolves), and whether mail is captured is the
//! server's configuration, written to the settings at start (`mail_captured`).

use crate::db::{Tx, settings};

/// The settings key the server writes at start: `1` while mail is captured.
pub const CAPTURED_SETTING: &str = "mail_captured";
/// What every sandbox domain's name ends with.
pub const SUFFIX: &str = ".sandbox.invalid";

/// The sandbox domain of `project`.
pub fn domain_of(project: &str) -> String {
    let alnum: Vec<char> = project.chars().filter(char::is_ascii_alphanumeric).collect();
    let tail: String =
        alnum[alnum.len().saturating_sub(12)..].iter().collect::<String>().to_ascii_lowercase();
    let tail = if tail.is_empty() { "project".to_string() } else { tail };
    format!("{tail}{SUFFIX}")
}

/// Whether the server captures mail (so sandbox domains are verified).
pub fn captured(conn: &Tx) -> crate::db::Result<bool> {
    Ok(settings::get(conn, CAPTURED_SETTING)?.as_deref() == Some("1"))
}

/// Whether `domain` is a sandbox name (any project's), which no one may add as a domain.
pub fn is_sandbox_name(domain: &str) -> bool {
    domain.ends_with(SUFFIX) || domain == &SUFFIX[1..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_has_its_own_sandbox_name() {
        assert_eq!(domain_of("018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f"), "0a1b2c3d4e5f.sandbox.invalid");
        assert_ne!(
            domain_of("018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e5f"),
            domain_of("018f2c1e-7b3a-7c4d-9e8f-0a1b2c3d4e60")
        );
        assert_eq!(domain_of("system"), "system.sandbox.invalid");
        assert_eq!(domain_of("--"), "project.sandbox.invalid");
        assert!(is_sandbox_name("abc.sandbox.invalid") && is_sandbox_name("sandbox.invalid"));
        assert!(!is_sandbox_name("sandbox.example.com"));
    }
}
