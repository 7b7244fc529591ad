//! OpenID Connect providers (`[[auth.oidc]]`), through the `openidconnect` crate: the
//! provider's metadata is discovered at its issuer, and the ID token's signature (the
//! provider's JWKS), issuer, audience, expiry and nonce are checked by the crate.

use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope,
};

use super::flow::{Failure, Identity, Providers, call};
use crate::config::OidcProvider;
use crate::db::sso::Pending;

/// How long a provider's discovered metadata (its endpoints and signing keys) is used before
/// it is fetched again.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(300);

async fn metadata(providers: &Providers, provider: &OidcProvider) -> Result<CoreProviderMetadata, Failure> {
    let found = &providers.discovered.0;
    let kept = found.lock().unwrap_or_else(|e| e.into_inner()).get(&provider.issuer).cloned();
    if let Some((_, metadata)) = kept.filter(|(at, _)| at.elapsed() < DISCOVERY_TTL) {
        return Ok(metadata);
    }
    let issuer = IssuerUrl::new(provider.issuer.clone()).map_err(|e| Failure(format!("issuer: {e}")))?;
    let caller = |request| call(providers.http.clone(), request);
    let metadata = CoreProviderMetadata::discover_async(issuer, &caller)
        .await
        .map_err(|e| Failure(format!("{} could not be discovered: {e}", provider.name)))?;
    found
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(provider.issuer.clone(), (Instant::now(), metadata.clone()));
    Ok(metadata)
}

async fn client_for(
    providers: &Providers,
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
    let metadata = metadata(providers, provider).await?;
    let redirect = RedirectUrl::new(redirect).map_err(|e| Failure(format!("redirect: {e}")))?;
    Ok(CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(provider.client_id.clone()),
        provider.client_secret.clone().map(ClientSecret::new),
    )
    .set_redirect_uri(redirect))
}

/// Where to send the browser to sign in at `provider`, and the sign-in under way.
pub async fn start(
    providers: &Providers,
    provider: &OidcProvider,
    redirect: String,
) -> Result<(String, Pending), Failure> {
    let client = client_for(providers, provider, redirect).await?;
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

/// Exchanges the code (with the PKCE verifier) and checks the ID token.
pub async fn finish(
    providers: &Providers,
    provider: &OidcProvider,
    redirect: String,
    pending: Pending,
    code: String,
) -> Result<Identity, Failure> {
    let client = client_for(providers, provider, redirect).await?;
    let caller = |request| call(providers.http.clone(), request);
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
