//! Sign-in with GitHub (`[auth.github]`), which has OAuth apps but no OpenID Connect: the
//! authorization code flow with PKCE at its `/login/oauth` endpoints (the `oauth2` crate), then
//! its REST API says who signed in: `/user` for the account's id (the subject, stable across
//! renames) and `/user/emails` for its primary address and whether GitHub has verified it.

use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse, TokenUrl,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::flow::{Failure, Identity, Providers, call};
use crate::config::{GITHUB_ID, GithubProvider};
use crate::db::sso::Pending;

/// What the sign-in asks GitHub for: the account's addresses (its profile needs no scope).
pub const SCOPE: &str = "user:email";

fn base(url: &str) -> &str {
    url.trim_end_matches('/')
}

fn client(
    provider: &GithubProvider,
    redirect: String,
) -> Result<
    BasicClient<
        oauth2::EndpointSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointNotSet,
        oauth2::EndpointSet,
    >,
    Failure,
> {
    let web = base(&provider.web_base);
    let invalid = |what: &str, e: &dyn std::fmt::Display| Failure(format!("GitHub's {what}: {e}"));
    let authorize =
        AuthUrl::new(format!("{web}/login/oauth/authorize")).map_err(|e| invalid("authorization URL", &e))?;
    let token =
        TokenUrl::new(format!("{web}/login/oauth/access_token")).map_err(|e| invalid("token URL", &e))?;
    let redirect = RedirectUrl::new(redirect).map_err(|e| invalid("redirect URL", &e))?;
    Ok(BasicClient::new(ClientId::new(provider.client_id.clone()))
        .set_client_secret(ClientSecret::new(provider.client_secret.clone()))
        .set_auth_uri(authorize)
        .set_token_uri(token)
        .set_redirect_uri(redirect)
        // GitHub documents the client's credentials as form fields.
        .set_auth_type(AuthType::RequestBody))
}

/// Where to send the browser to sign in with GitHub, and the sign-in under way (no nonce:
/// there is no ID token to carry one).
pub fn start(provider: &GithubProvider, redirect: String) -> Result<(String, Pending), Failure> {
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = client(provider, redirect)?
        .authorize_url(CsrfToken::new_random)
        .add_scope(Scope::new(SCOPE.into()))
        .set_pkce_challenge(challenge)
        .url();
    let pending = Pending {
        state: state.secret().clone(),
        provider: GITHUB_ID.into(),
        nonce: String::new(),
        verifier: verifier.secret().clone(),
    };
    Ok((url.to_string(), pending))
}

#[derive(Deserialize)]
struct User {
    id: u64,
}

#[derive(Deserialize)]
struct Email {
    email: String,
    primary: bool,
    verified: bool,
}

/// Exchanges the code (with the PKCE verifier) for an access token, and asks the API whose it
/// is and what their verified primary address is.
pub async fn finish(
    providers: &Providers,
    provider: &GithubProvider,
    redirect: String,
    pending: Pending,
    code: String,
) -> Result<Identity, Failure> {
    let caller = |request| call(providers.http.clone(), request);
    // GitHub answers a refused code with 200 and an `error` field; the crate then finds no
    // token in the answer, which fails here all the same.
    let token = client(provider, redirect)?
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(PkceCodeVerifier::new(pending.verifier))
        .request_async(&caller)
        .await
        .map_err(|e| Failure(format!("GitHub refused the code: {e}")))?;
    let token = token.access_token().secret();
    let user: User = api(providers, provider, "/user", token).await?;
    let emails: Vec<Email> = api(providers, provider, "/user/emails?per_page=100", token).await?;
    let primary = emails.into_iter().find(|e| e.primary && e.verified);
    Ok(Identity {
        subject: user.id.to_string(),
        email_verified: primary.is_some(),
        email: primary.map(|e| e.email.to_ascii_lowercase()),
    })
}

/// A GET of GitHub's REST API with the user's token.
async fn api<T: DeserializeOwned>(
    providers: &Providers,
    provider: &GithubProvider,
    path: &str,
    token: &str,
) -> Result<T, Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure(format!("GitHub's {path}: {e}"));
    let response = providers
        .http
        .get(format!("{}{path}", base(&provider.api_base)))
        .bearer_auth(token)
        .header("Accept", "application/vnd.github+json")
        .header("X-GitHub-Api-Version", "2022-11-28")
        // GitHub refuses API requests without one.
        .header("User-Agent", concat!("tidings/", env!("CARGO_PKG_VERSION")))
        .send()
        .await
        .map_err(|e| failed(&e.without_url()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(&format!("answered {status}")));
    }
    let body = response.bytes().await.map_err(|e| failed(&e.without_url()))?;
    serde_json::from_slice(&body).map_err(|e| failed(&e))
}
