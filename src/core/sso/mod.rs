//! Single sign-on: OpenID Connect providers (`[[auth.oidc]]`, [`oidc`]) and GitHub
//! (`[auth.github]`, [`github`]), both by the authorization code flow with PKCE.
//!
//! A sign-in starts at `/auth/oauth/<id>`: the browser is sent to the provider's authorization
//! endpoint with a random state and PKCE challenge (and, for OpenID Connect, a nonce), kept in
//! `oauth_states` (single-use, 10 minutes). The provider sends it back to
//! `/auth/oauth/<id>/callback` with a code, which is exchanged with the PKCE verifier; each
//! kind of provider then says who signed in ([`Identity`]). The account is then the user linked
//! to the provider's subject, or the user with the identity's email when the provider says
//! that address is verified (and it is linked), or a new user when sign-ups are open.

pub mod flow;
pub mod github;
pub mod oidc;

pub use flow::{Failure, HttpFailure, Identity, Providers};

use crate::db::{Tx, sso};

use crate::clock;
use crate::config::{Config, GITHUB_ID, GithubProvider, OidcProvider};

/// How long a sign-in may take at the provider.
pub const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// Most sign-ins under way at once: starting one needs no account, so this bounds what
/// anonymous requests can store.
pub const MAX_PENDING: i64 = 10_000;

/// A provider users may sign in with, as configured.
#[derive(Debug, Clone)]
pub enum Provider {
    Oidc(OidcProvider),
    Github(GithubProvider),
}

impl Provider {
    /// Every provider `config` names, in the order of the sign-in page's buttons.
    pub fn all(config: &Config) -> Vec<Provider> {
        let oidc = config.auth.oidc.iter().cloned().map(Provider::Oidc);
        oidc.chain(config.auth.github.clone().map(Provider::Github)).collect()
    }

    /// The provider with `id`.
    pub fn find(config: &Config, id: &str) -> Option<Provider> {
        Self::all(config).into_iter().find(|p| p.id() == id)
    }

    /// In its addresses and in linked identities.
    pub fn id(&self) -> &str {
        match self {
            Provider::Oidc(p) => &p.id,
            Provider::Github(_) => GITHUB_ID,
        }
    }

    /// On its button.
    pub fn name(&self) -> &str {
        match self {
            Provider::Oidc(p) => &p.name,
            Provider::Github(p) => &p.name,
        }
    }
}

/// Where to send the browser to sign in at `provider`, and the sign-in to keep ([`keep`]).
pub async fn start(
    providers: &Providers,
    provider: &Provider,
    redirect: String,
) -> Result<(String, Pending), Failure> {
    match provider {
        Provider::Oidc(p) => oidc::start(providers, p, redirect).await,
        Provider::Github(p) => github::start(p, redirect),
    }
}

/// Exchanges the code (with the PKCE verifier) and learns who signed in.
pub async fn finish(
    providers: &Providers,
    provider: &Provider,
    redirect: String,
    pending: Pending,
    code: String,
) -> Result<Identity, Failure> {
    match provider {
        Provider::Oidc(p) => oidc::finish(providers, p, redirect, pending, code).await,
        Provider::Github(p) => github::finish(providers, p, redirect, pending, code).await,
    }
}

pub use crate::db::sso::Pending;

/// Keeps a sign-in under way; `false` (nothing kept) when [`MAX_PENDING`] are already.
pub fn keep(conn: &Tx, pending: &Pending, now: i64) -> crate::db::Result<bool> {
    sso::forget_states_before(conn, now - STATE_TTL_MS)?;
    if sso::states_under_way(conn)? >= MAX_PENDING {
        return Ok(false);
    }
    sso::keep_state(conn, pending, now)?;
    Ok(true)
}

/// Takes the sign-in named by `state` (once: it is deleted), when it is `provider`'s and fresh.
pub fn take(conn: &Tx, provider: &str, state: &str, now: i64) -> crate::db::Result<Option<Pending>> {
    let taken = sso::take_state(conn, state)?;
    Ok(taken.filter(|(p, at)| p.provider == provider && now - at <= STATE_TTL_MS).map(|(p, _)| p))
}

/// Whom a verified identity signs in as.
#[derive(Debug)]
pub enum SignIn {
    As(crate::db::users::User),
    /// The account with the identity's address had never proved it (anyone may sign up with
    /// any address, before its owner does): it is the owner's now, and whoever made it lost its
    /// password and sessions. The owner is told, by mail and on arrival.
    Reclaimed(crate::db::users::User),
    /// A new user is to be made, and no password hash was given for it: hash one (off the
    /// writer) and ask again.
    NeedsHash,
    /// No account is linked, and the provider vouches for no address to find or make one by.
    Unverified,
    /// No account, and none may be made.
    Refused,
}

/// The user a verified identity signs in as: the one linked to it, else the one with its
/// verified email (then linked), else a new one when `signups` allows. An account with that
/// email whose address was never verified is not the provider's user's as it stands (issue 29:
/// an attacker could have signed up with it first, to be let into the owner's sign-ins): it
/// gets a new password hash and loses its sessions before it is linked ([`SignIn::Reclaimed`]).
/// `new_hash` is the password hash a new or reclaimed account gets (of a random password: they
/// sign in with the provider, or set one through a reset); it is only needed then, so callers
/// pass `None` first.
pub fn user_for(
    conn: &Tx,
    config: &Config,
    provider: &str,
    identity: &Identity,
    signups: bool,
    new_hash: Option<&str>,
) -> Result<SignIn, crate::core::error::Error> {
    use crate::db::users;
    let linked = sso::linked_user(conn, provider, &identity.subject)?;
    if let Some(user) = linked {
        return Ok(users::by_id(conn, &user)?.map_or(SignIn::Refused, SignIn::As));
    }
    let Some(email) = identity.email.as_deref().filter(|_| identity.email_verified) else {
        return Ok(SignIn::Unverified);
    };
    let now = clock::now_ms();
    let (user, reclaimed) = match (users::by_email(conn, email)?, new_hash) {
        (Some(user), _) if user.email_verified => (user, false),
        (Some(_), None) => return Ok(SignIn::NeedsHash),
        (Some(user), Some(hash)) => {
            crate::core::accounts::change_password(conn, &user.id, hash)?;
            let mail = crate::core::system_mail::SystemMail::AccountReclaimed { provider };
            crate::core::system_mail::queue(conn, config, &user.email, &mail, now)?;
            (user, true)
        }
        (None, _) if !signups => return Ok(SignIn::Refused),
        (None, None) => return Ok(SignIn::NeedsHash),
        (None, Some(hash)) => (crate::core::accounts::insert_user(conn, email, hash)?, false),
    };
    // The provider vouches for the address.
    users::set_verified(conn, &user.id)?;
    sso::link(conn, provider, &identity.subject, &user.id, now)?;
    let Some(user) = users::by_id(conn, &user.id)? else { return Ok(SignIn::Refused) };
    Ok(if reclaimed { SignIn::Reclaimed(user) } else { SignIn::As(user) })
}
