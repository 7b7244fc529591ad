//! The server's own endpoints: health, the optional features, the metrics token scheme.

use serde::Serialize;
use utoipa::ToSchema;

/// `GET /health`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `degraded` when the database does not answer (then the status is 503).
    pub status: String,
    pub version: String,
    /// `ok` or `unavailable`.
    pub database: String,
    /// `running` or `stopped`.
    pub scheduler: String,
}

/// Which optional features this server has on.
#[derive(Debug, Serialize, ToSchema)]
pub struct Features {
    /// Stripe is configured.
    pub billing: bool,
    /// Single sign-on providers are configured.
    pub oauth: bool,
    /// Anyone may sign up now (with `[auth] disable_signups` unset, until the first account
    /// exists).
    pub signups: bool,
    /// Opens or clicks are tracked.
    pub tracking: bool,
    /// No relay is configured: mail is kept in the Outbox, not sent (and the projects' sandbox
    /// sender domains are verified).
    pub captured: bool,
}

/// What is tracked.
#[derive(Debug, Serialize, ToSchema)]
pub struct Tracking {
    pub opens: bool,
    pub clicks: bool,
}

/// A single sign-on provider of the sign-in page.
#[derive(Debug, Serialize, ToSchema)]
pub struct OauthProvider {
    pub id: String,
    /// On its button.
    pub name: String,
    /// Where a sign-in starts (`/auth/oauth/{id}`).
    pub url: String,
}

/// Where apps send mail over SMTP (`[submission]`), when the listener is on.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Submission {
    /// The name apps connect to.
    pub host: String,
    /// The port that upgrades with STARTTLS (usually 587).
    pub starttls_port: Option<u16>,
    /// The port that is TLS from the start (usually 465).
    pub tls_port: Option<u16>,
}

/// Where mail for the inbound domains arrives (`[inbound]`), when the listener is on.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    /// The host inbound domains' MX records name.
    pub mx: String,
    pub port: u16,
}

/// `GET /config`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfig {
    pub version: String,
    pub features: Features,
    pub tracking: Tracking,
    pub oauth_providers: Vec<OauthProvider>,
    /// The SMTP submission listener; absent when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission: Option<Submission>,
    /// The inbound listener; absent when it is off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbound: Option<Inbound>,
}
