//! Dashboard accounts: password rules and hashing, and the links mailed to a user (address
//! verification, password reset).
//!
//! bcrypt is deliberately slow; callers on an async executor run these on a blocking thread.
//! A mailed token is 40 random characters kept only as its digest, used once (taking it deletes
//! it) and expiring.

use crate::db::Tx;

use super::email;
use super::keys::{digest, random_token};
use super::system_mail::{self, RESET_HOURS, SystemMail, VERIFY_HOURS};
use crate::config::Config;
use crate::core::error::{Error, FieldError, Result, on_duplicate};
use crate::db::account_tokens::{self, Purpose};
use crate::db::users::{self, User};

const HOUR_MS: i64 = 3_600_000;

/// Shortest accepted password.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// bcrypt reads at most 72 bytes; longer passwords are refused rather than silently cut.
pub const MAX_PASSWORD_BYTES: usize = 72;

/// Why a password is not accepted, if it is not.
pub fn check_password(password: &str) -> Result<(), String> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(format!("must be at least {MIN_PASSWORD_CHARS} characters"));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(format!("must be at most {MAX_PASSWORD_BYTES} bytes"));
    }
    Ok(())
}

/// The bcrypt hash of a password.
pub fn hash_password(password: &str, cost: u32) -> Result<String, String> {
    bcrypt::hash(password, cost).map_err(|e| e.to_string())
}

/// Whether `password` matches `hash`. With no hash (unknown user) a hash of the same cost is
/// computed anyway, so the answer takes as long either way and does not tell who has an account.
pub fn verify_password(password: &str, hash: Option<&str>, cost: u32) -> bool {
    match hash {
        Some(hash) => bcrypt::verify(password, hash).unwrap_or(false),
        None => {
            let _ = hash_password(password, cost);
            false
        }
    }
}

/// Checks sign-up or login input: the normalised email and the password, or 422 naming each
/// problem. Password strength is checked only when `new_password` (sign-up, `user create`).
pub fn credentials(
    email: Option<&str>,
    password: Option<&str>,
    new_password: bool,
) -> Result<(String, String)> {
    let mut errors = Vec::new();
    let email = match email.map(email::normalize) {
        Some(Ok(email)) => Some(email),
        Some(Err(why)) => {
            errors.push(FieldError::new(
                "email",
                "invalid_string",
                format!("Invalid email: the address {why}"),
            ));
            None
        }
        None => {
            errors.push(FieldError::new("email", "required", "email is required"));
            None
        }
    };
    match password {
        None => errors.push(FieldError::new("password", "required", "password is required")),
        Some(password) if new_password => {
            if let Err(why) = check_password(password) {
                errors.push(FieldError::new("password", "too_short", format!("password {why}")));
            }
        }
        Some(_) => {}
    }
    match (email, password) {
        (Some(email), Some(password)) if errors.is_empty() => Ok((email, password.to_string())),
        _ => Err(Error::Invalid(errors)),
    }
}

/// Whether a stranger may sign up now (`[auth] disable_signups`; unset, only while there is no
/// account yet). Asked again in the transaction that makes the account, so two first sign-ups
/// at once make one owner.
pub fn signups_open(conn: &Tx, config: &Config) -> crate::db::Result<bool> {
    match config.auth.disable_signups {
        Some(disabled) => Ok(!disabled),
        None => Ok(!users::any(conn)?),
    }
}

/// Whether `user` may read the mail the server sent itself (sign-up verification, resets,
/// invitations) in the Outbox: the instance's owner (its first account, the only one a
/// default install lets sign up), and only while mail is captured, when that mail reaches no
/// one else. 403 otherwise, saying which.
pub fn may_read_system_mail(conn: &Tx, user: &User) -> Result<()> {
    if users::first_id(conn)?.as_deref() != Some(user.id.as_str()) {
        return Err(Error::forbidden(
            "Only the instance's owner (its first account) reads the server's own mail",
        ));
    }
    if !super::sandbox::captured(conn)? {
        return Err(Error::forbidden(
            "A relay is configured: the server's own mail was sent to its recipients, not kept in the Outbox",
        ));
    }
    Ok(())
}

/// The refusal of a sign-up when they are closed.
pub fn signups_closed() -> Error {
    Error::forbidden("Sign-ups are closed on this server; ask its owner for an invitation")
}

/// Makes the account of `email` with `password_hash` while sign-ups are open (asked again
/// here: a request made at the same time may have closed them), mails its verification link and
/// starts its session; the user and the session's token.
pub fn sign_up(
    tx: &Tx,
    config: &Config,
    (email, password_hash): (&str, &str),
    (secret, hours): (&str, u32),
    now: i64,
) -> Result<(User, String)> {
    if !signups_open(tx, config)? {
        return Err(signups_closed());
    }
    let user = insert_user(tx, email, password_hash)?;
    send_verification(tx, config, &user, now)?;
    let token = super::session::start(tx, &user.id, secret, hours)?;
    Ok((user, token))
}

/// Stores a new user; 409 when the email has an account.
pub fn insert_user(conn: &Tx, email: &str, password_hash: &str) -> Result<User> {
    users::insert(conn, email, password_hash)
        .map_err(|e| on_duplicate(e, "An account with this email already exists"))
}

/// Sets a user's password and ends every session and reset link they have, in the caller's
/// transaction (a stolen cookie must not outlive the password it was signed in with). Returns
/// how many sessions ended.
pub fn change_password(conn: &Tx, user: &str, password_hash: &str) -> crate::db::Result<usize> {
    users::set_password(conn, user, password_hash)?;
    account_tokens::end_all(conn, user, Purpose::ResetPassword)?;
    crate::core::session::end_all(conn, user)
}

/// Mails `user` a link that verifies their address, replacing any earlier one.
pub fn send_verification(conn: &Tx, config: &Config, user: &User, now: i64) -> crate::db::Result<()> {
    mail_token(conn, config, user, Purpose::VerifyEmail, now)
}

/// Mails the account with `email`, if there is one, a link to choose a new password. Says
/// nothing either way: the caller answers the same whether or not the account exists.
pub fn send_password_reset(conn: &Tx, config: &Config, email: &str, now: i64) -> crate::db::Result<()> {
    match users::by_email(conn, email)? {
        Some(user) => mail_token(conn, config, &user, Purpose::ResetPassword, now),
        None => Ok(()),
    }
}

/// Issues a token for `purpose` (ending the user's earlier ones) and queues the mail with its
/// link to the user's address.
fn mail_token(conn: &Tx, config: &Config, user: &User, purpose: Purpose, now: i64) -> crate::db::Result<()> {
    let token = random_token();
    let (hours, mail) = match purpose {
        Purpose::VerifyEmail => (VERIFY_HOURS, SystemMail::VerifyEmail { token: &token }),
        Purpose::ResetPassword => (RESET_HOURS, SystemMail::ResetPassword { token: &token }),
    };
    let expires = now + hours * HOUR_MS;
    account_tokens::issue(conn, &digest(&token), &user.id, purpose, &user.email, now, expires)?;
    system_mail::queue(conn, config, &user.email, &mail, now)?;
    Ok(())
}

/// The error for a token that is unknown, used or expired.
pub fn invalid_token() -> Error {
    Error::StaleToken
}

/// Checks the `token` field of a request: present, and shaped like a token we mail.
pub fn token_field(token: Option<&str>) -> Result<&str> {
    match token {
        None => Err(Error::invalid("token", "required", "token is required")),
        Some(t) if t.is_empty() || t.len() > 100 => Err(invalid_token()),
        Some(t) => Ok(t),
    }
}

/// Uses a verification token: the user's address is verified if the token was mailed to the
/// address the account still has.
pub fn verify_email(conn: &Tx, token: &str, now: i64) -> Result<User> {
    let taken =
        account_tokens::take(conn, &digest(token), Purpose::VerifyEmail, now)?.ok_or_else(invalid_token)?;
    let user = users::by_id(conn, &taken.user_id)?.ok_or_else(invalid_token)?;
    if user.email != taken.email {
        return Err(invalid_token());
    }
    users::set_verified(conn, &user.id)?;
    Ok(User { email_verified: true, ..user })
}

/// Uses a reset token: sets the password (already hashed), ends every session and every other
/// reset link of the user, and counts the address as verified (the link reached it).
pub fn reset_password(conn: &Tx, token: &str, password_hash: &str, now: i64) -> Result<User> {
    let taken =
        account_tokens::take(conn, &digest(token), Purpose::ResetPassword, now)?.ok_or_else(invalid_token)?;
    let user = users::by_id(conn, &taken.user_id)?.ok_or_else(invalid_token)?;
    change_password(conn, &user.id, password_hash)?;
    if user.email == taken.email {
        users::set_verified(conn, &user.id)?;
    }
    users::by_id(conn, &user.id)?.ok_or_else(invalid_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_rules() {
        assert!(check_password("short").is_err());
        assert!(check_password("long enough").is_ok());
        assert!(check_password(&"x".repeat(73)).is_err());
    }

    #[test]
    fn credentials_name_every_problem() {
        let e = credentials(Some("nope"), Some("short"), true).unwrap_err();
        let fields: Vec<_> = e.fields().iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["email", "password"]);
        assert!(credentials(Some("A@Example.com"), Some("short"), false).is_ok());
        let (email, _) = credentials(Some(" A@Example.com"), Some("long enough"), true).unwrap();
        assert_eq!(email, "a@example.com");
        assert_eq!(credentials(None, None, true).unwrap_err().fields().len(), 2);
    }

    #[test]
    fn hashes_verify() {
        let hash = hash_password("correct horse", 4).unwrap();
        assert!(verify_password("correct horse", Some(&hash), 4));
        assert!(!verify_password("wrong horse", Some(&hash), 4));
        assert!(!verify_password("correct horse", None, 4));
    }
}
