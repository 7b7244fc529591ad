//! `[auth]` and `[billing]`: dashboard accounts, single sign-on, and Stripe.

use serde::{Deserialize, Serialize};

/// `[auth]`: dashboard accounts and sessions.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// `true`: no one signs up; `false`: anyone may. Unset (the default): the first person may
    /// (the instance's owner), and after that only the invited (issue 29), so an instance on the
    /// internet is not an open door to its relay.
    pub disable_signups: Option<bool>,
    pub session_hours: u32,
    /// Signs session tokens; generated once and kept in the database when absent.
    pub jwt_secret: Option<String>,
    /// bcrypt work factor for passwords (4 to 31).
    pub bcrypt_cost: u32,
    /// OpenID Connect providers users may sign in with (`[[auth.oidc]]`).
    pub oidc: Vec<OidcProvider>,
    /// Sign-in with GitHub (or GitHub Enterprise Server) through its OAuth app endpoints
    /// (`[auth.github]`); GitHub does not speak OpenID Connect.
    pub github: Option<GithubProvider>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            disable_signups: None,
            session_hours: 168,
            jwt_secret: None,
            bcrypt_cost: 12,
            oidc: Vec::new(),
            github: None,
        }
    }
}

/// One `[[auth.oidc]]` provider (Keycloak, Authentik, Google, ...), found by discovery at its
/// issuer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcProvider {
    /// In addresses: `/auth/oauth/<id>`; lower-case letters, digits and `-`.
    pub id: String,
    /// On the sign-in button.
    pub name: String,
    /// Where `/.well-known/openid-configuration` is found.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    #[serde(default = "default_oidc_scopes")]
    pub scopes: Vec<String>,
}

pub(super) fn default_oidc_scopes() -> Vec<String> {
    vec!["openid".into(), "email".into(), "profile".into()]
}

/// `[auth.github]`: a GitHub OAuth app. Its sign-in is at `/auth/oauth/github`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubProvider {
    pub client_id: String,
    pub client_secret: String,
    /// On the sign-in button.
    #[serde(default = "default_github_name")]
    pub name: String,
    /// Where the OAuth pages are (`/login/oauth/...`): `https://github.com`, or a GitHub
    /// Enterprise Server's own address.
    #[serde(default = "default_github_web")]
    pub web_base: String,
    /// Where its REST API is: `https://api.github.com`, or `https://<server>/api/v3`.
    #[serde(default = "default_github_api")]
    pub api_base: String,
}

/// The id of the GitHub sign-in, in its addresses and in linked identities.
pub const GITHUB_ID: &str = "github";

pub(super) fn default_github_name() -> String {
    "GitHub".into()
}

pub(super) fn default_github_web() -> String {
    "https://github.com".into()
}

pub(super) fn default_github_api() -> String {
    "https://api.github.com".into()
}

/// `[billing]`: Stripe; billing is on only when the secret key and webhook secret are both set.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BillingConfig {
    pub stripe_secret_key: Option<String>,
    pub stripe_webhook_secret: Option<String>,
    /// The prices a checkout may subscribe to; the first is the default.
    pub price_ids: Vec<String>,
    /// Stripe's API (another address only for a test double or a proxy).
    pub stripe_api_base: String,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            stripe_secret_key: None,
            stripe_webhook_secret: None,
            price_ids: Vec::new(),
            stripe_api_base: "https://api.stripe.com".into(),
        }
    }
}

impl BillingConfig {
    /// Whether billing endpoints and limits are active.
    pub fn enabled(&self) -> bool {
        self.stripe_secret_key.is_some() && self.stripe_webhook_secret.is_some()
    }
}
