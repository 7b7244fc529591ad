//! Dashboard accounts: the user, and the bodies of signing up and in, verification and
//! passwords.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::clock::iso;
use crate::db::users::User as Row;

/// A dashboard user.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub id: String,
    #[schema(format = Email)]
    pub email: String,
    /// Whether the address has been confirmed (by its mailed link, or a sign-in provider).
    pub email_verified: bool,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&Row> for User {
    fn from(u: &Row) -> Self {
        User {
            id: u.id.clone(),
            email: u.email.clone(),
            email_verified: u.email_verified,
            created_at: iso(u.created_at),
            updated_at: iso(u.updated_at),
        }
    }
}

/// An address and a password (sign-up: at least 8 characters).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
    #[schema(required, format = Password, value_type = String)]
    pub password: Option<String>,
}

/// A mailed link's token.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenBody {
    #[schema(required, value_type = String)]
    pub token: Option<String>,
}

/// The address whose password is to be reset.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ResetRequest {
    #[schema(required, format = Email, value_type = String)]
    pub email: Option<String>,
}

/// A mailed link's token with the password to set: a reset, or an invitation's new account.
#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenAndPassword {
    #[schema(required, value_type = String)]
    pub token: Option<String>,
    /// At least 8 characters (for a new account or a reset).
    #[schema(format = Password)]
    pub password: Option<String>,
    /// `password`, as Plunk's clients name it.
    #[serde(rename = "newPassword")]
    #[schema(format = Password)]
    pub new_password: Option<String>,
}

/// The signed-in user's current password and the new one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordChange {
    #[schema(required, format = Password, value_type = String)]
    pub current_password: Option<String>,
    /// At least 8 characters.
    #[schema(required, format = Password, value_type = String)]
    pub new_password: Option<String>,
}

/// Done, with what happens next when there is something to say.
#[derive(Debug, Serialize, ToSchema)]
pub struct Done {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Done {
    pub fn new(message: Option<String>) -> Self {
        Done { success: true, message }
    }
}
