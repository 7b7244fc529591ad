//! Dashboard accounts: password rules and hashing.
//!
//! bcrypt is deliberately slow; callers on an async executor run these on a blocking thread.

use rusqlite::Connection;

use super::email;
use crate::db::users::{self, User};
use crate::error::{ApiError, FieldError, conflict_on_unique};

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
) -> Result<(String, String), ApiError> {
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
        _ => Err(ApiError::validation(errors)),
    }
}

/// Stores a new user; 409 when the email has an account.
pub fn insert_user(conn: &Connection, email: &str, password_hash: &str) -> Result<User, ApiError> {
    users::insert(conn, email, password_hash)
        .map_err(|e| conflict_on_unique(e, "An account with this email already exists"))
}

/// Sets a user's password and ends every session they have, in the caller's transaction (a
/// stolen cookie must not outlive the password it was signed in with). Returns how many
/// sessions ended.
pub fn change_password(conn: &Connection, user: &str, password_hash: &str) -> rusqlite::Result<usize> {
    users::set_password(conn, user, password_hash)?;
    crate::core::session::end_all(conn, user)
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
        let fields: Vec<_> = e.errors.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(fields, ["email", "password"]);
        assert!(credentials(Some("A@Example.com"), Some("short"), false).is_ok());
        let (email, _) = credentials(Some(" A@Example.com"), Some("long enough"), true).unwrap();
        assert_eq!(email, "a@example.com");
        assert_eq!(credentials(None, None, true).unwrap_err().errors.len(), 2);
    }

    #[test]
    fn hashes_verify() {
        let hash = hash_password("correct horse", 4).unwrap();
        assert!(verify_password("correct horse", Some(&hash), 4));
        assert!(!verify_password("wrong horse", Some(&hash), 4));
        assert!(!verify_password("correct horse", None, 4));
    }
}
