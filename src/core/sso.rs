//! Single sign-on with OpenID Connect providers (`[[auth.oidc]]`): the authorization code flow
//! with PKCE, through the `openidconnect` crate.
//!
//! A sign-in starts at `/auth/oauth/<id>`: the provider's metadata is discovered at its issuer,
//! and the browser is sent to its authorization endpoint with a random state, nonce and PKCE
//! challenge, kept in `oauth_states` (single-use, 10 minutes). The provider sends it back to
//! `/auth/oauth/<id>/callback` with a code, which is exchanged (with the PKCE verifier) for an
//! ID token; its signature (the provider's JWKS), issuer, audience, expiry and nonce are checked
//! by the crate. The account is then the user linked to the provider's subject, or the user with
//! the token's email when the provider says that address is verified (and it is linked), or a
//! new user when sign-ups are open.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope,
};
use rusqlite::{Connection, OptionalExtension, params};

use crate::clock;
use crate::config::OidcProvider;

/// How long a sign-in may take at the provider.
pub const STATE_TTL_MS: i64 = 10 * 60 * 1000;
/// Most sign-ins under way at once: starting one needs no account, so this bounds what
/// anonymous requests can store.
pub const MAX_PENDING: i64 = 10_000;

/// Why a sign-in failed, as the sign-in page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(pub String);

/// An HTTP failure, as the crate wants its client's errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailure(String);

/// How long a provider's discovered metadata (its endpoints and signing keys) is used before
/// it is fetched again.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(300);

/// The providers' metadata as discovered, kept for [`DISCOVERY_TTL`] so that sign-ins (which
/// anyone may start) do not each call the provider, and the HTTP client the crate calls: our
/// reqwest, without redirects (a redirect from a provider's endpoint is an answer, not
/// something to follow).
pub struct Discovery {
    http: reqwest::Client,
    found: Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>,
}

impl Default for Discovery {
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Discovery { http, found: Mutex::default() }
    }
}

impl Discovery {
    async fn metadata(&self, provider: &OidcProvider) -> Result<CoreProviderMetadata, Failure> {
        let kept = self.found.lock().unwrap_or_else(|e| e.into_inner()).get(&provider.issuer).cloned();
        if let Some((_, metadata)) = kept.filter(|(at, _)| at.elapsed() < DISCOVERY_TTL) {
            return Ok(metadata);
        }
        let issuer = IssuerUrl::new(provider.issuer.clone()).map_err(|e| Failure(format!("issuer: {e}")))?;
        let caller = |request| call(self.http.clone(), request);
        let metadata = CoreProviderMetadata::discover_async(issuer, &caller)
            .await
            .map_err(|e| Failure(format!("{} could not be discovered: {e}", provider.name)))?;
        self.found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(provider.issuer.clone(), (Instant::now(), metadata.clone()));
        Ok(metadata)
    }
}

async fn call(
    client: reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, HttpFailure> {
    let failed = |e: &dyn std::fmt::Display| HttpFailure(e.to_string());
    let request = reqwest::Request::try_from(request).map_err(|e| failed(&e))?;
    let response = client.execute(request).await.map_err(|e| failed(&e.without_url()))?;
    let mut answer = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        answer = answer.header(name, value);
    }
    let body = response.bytes().await.map_err(|e| failed(&e))?;
    answer.body(body.to_vec()).map_err(|e| failed(&e))
}

async fn client_for(
    discovery: &Discovery,
    provider: &OidcProvider,
    redirect: String,
) -> Result<
    CoreClient<
        openidconnect::EndpointSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointNotSet,
        openidconnect::EndpointMaybeSet,
        openidconnect::EndpointMaybeSet,
    >,
    Failure,
> {
    let metadata = discovery.metadata(provider).await?;
    let redirect = RedirectUrl::new(redirect).map_err(|e| Failure(format!("redirect: {e}")))?;
    Ok(CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(provider.client_id.clone()),
        provider.client_secret.clone().map(ClientSecret::new),
    )
    .set_redirect_uri(redirect))
}

/// Where to send the browser to sign in at `provider`; the sign-in's state is kept.
pub async fn start(
    discovery: &Discovery,
    provider: &OidcProvider,
    redirect: String,
) -> Result<(String, Pending), Failure> {
    let client = client_for(discovery, provider, redirect).await?;
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client.authorize_url(
        CoreAuthenticationFlow::AuthorizationCode,
        CsrfToken::new_random,
        Nonce::new_random,
    );
    for scope in &provider.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
    let pending = Pending {
        state: state.secret().clone(),
        provider: provider.id.clone(),
        nonce: nonce.secret().clone(),
        verifier: verifier.secret().clone(),
    };
    Ok((url.to_string(), pending))
}

/// A sign-in under way.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub state: String,
    pub provider: String,
    pub nonce: String,
    pub verifier: String,
}

/// Keeps a sign-in under way; `false` (nothing kept) when [`MAX_PENDING`] are already.
pub fn keep(conn: &Connection, pending: &Pending, now: i64) -> rusqlite::Result<bool> {
    conn.execute("DELETE FROM oauth_states WHERE created_at < ?1", [now - STATE_TTL_MS])?;
    let under_way: i64 = conn.query_row("SELECT count(*) FROM oauth_states", [], |r| r.get(0))?;
    if under_way >= MAX_PENDING {
        return Ok(false);
    }
    conn.execute(
        "INSERT INTO oauth_states (state, provider, nonce, verifier, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![pending.state, pending.provider, pending.nonce, pending.verifier, now],
    )?;
    Ok(true)
}

/// Takes the sign-in named by `state` (once: it is deleted), when it is `provider`'s and fresh.
pub fn take(conn: &Connection, provider: &str, state: &str, now: i64) -> rusqlite::Result<Option<Pending>> {
    let taken = conn
        .query_row(
            "DELETE FROM oauth_states WHERE state = ?1 RETURNING provider, nonce, verifier, created_at",
            [state],
            |r| {
                Ok((
                    Pending {
                        state: state.to_string(),
                        provider: r.get(0)?,
                        nonce: r.get(1)?,
                        verifier: r.get(2)?,
                    },
                    r.get::<_, i64>(3)?,
                ))
            },
        )
        .optional()?;
    Ok(taken.filter(|(p, at)| p.provider == provider && now - at <= STATE_TTL_MS).map(|(p, _)| p))
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
}

/// Exchanges the code (with the PKCE verifier) and checks the ID token.
pub async fn finish(
    discovery: &Discovery,
    provider: &OidcProvider,
    redirect: String,
    pending: Pending,
    code: String,
) -> Result<Identity, Failure> {
    let client = client_for(discovery, provider, redirect).await?;
    let caller = |request| call(discovery.http.clone(), request);
    let tokens = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| Failure(format!("{} has no token endpoint: {e}", provider.name)))?
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(&caller)
        .await
        .map_err(|e| Failure(format!("{} refused the code: {e}", provider.name)))?;
    let id_token = openidconnect::TokenResponse::id_token(&tokens)
        .ok_or_else(|| Failure(format!("{} sent no ID token", provider.name)))?;
    let claims = id_token
        .claims(&client.id_token_verifier(), &Nonce::new(pending.nonce))
        .map_err(|e| Failure(format!("the ID token from {} does not check out: {e}", provider.name)))?;
    Ok(Identity {
        subject: claims.subject().to_string(),
        email: claims.email().map(|e| e.to_string().to_ascii_lowercase()),
        email_verified: claims.email_verified().unwrap_or(false),
    })
}

/// Whom a verified identity signs in as.
#[derive(Debug)]
pub enum SignIn {
    As(crate::db::users::User),
    /// A new user is to be made, and no password hash was given for it: hash one (off the
    /// writer) and ask again.
    NeedsHash,
    /// No account, and none may be made.
    Refused,
}

/// The user a verified identity signs in as: the one linked to it, else the one with its
/// verified email (then linked), else a new one when `signups` allows. `new_hash` is the
/// password hash a new user gets (of a random password: they sign in with the provider, or set
/// one through a reset); it is only needed for a new user, so callers pass `None` first.
pub fn user_for(
    conn: &Connection,
    provider: &str,
    identity: &Identity,
    signups: bool,
    new_hash: Option<&str>,
) -> Result<SignIn, crate::error::ApiError> {
    use crate::db::users;
    let linked: Option<String> = conn
        .query_row(
            "SELECT user_id FROM user_identities WHERE provider = ?1 AND subject = ?2",
            params![provider, identity.subject],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(user) = linked {
        return Ok(users::by_id(conn, &user)?.map_or(SignIn::Refused, SignIn::As));
    }
    let Some(email) = identity.email.as_deref().filter(|_| identity.email_verified) else {
        return Ok(SignIn::Refused);
    };
    let user = match (users::by_email(conn, email)?, new_hash) {
        (Some(user), _) => user,
        (None, _) if !signups => return Ok(SignIn::Refused),
        (None, None) => return Ok(SignIn::NeedsHash),
        (None, Some(hash)) => crate::core::accounts::insert_user(conn, email, hash)?,
    };
    // The provider vouches for the address.
    users::set_verified(conn, &user.id)?;
    conn.execute(
        "INSERT INTO user_identities (provider, subject, user_id, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![provider, identity.subject, user.id, clock::now_ms()],
    )?;
    Ok(users::by_id(conn, &user.id)?.map_or(SignIn::Refused, SignIn::As))
}
