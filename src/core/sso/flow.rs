//! What every provider's flow shares: the HTTP client the crates call through, the cache of
//! what OpenID Connect discovery found, the identity a flow yields and how it fails.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::core::CoreProviderMetadata;

/// Why a sign-in failed, as the log says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure(pub String);

/// An HTTP failure, as the crates want their clients' errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpFailure(String);

/// What calling the providers needs: one HTTP client, without redirects (a redirect from a
/// provider's endpoint is an answer, not something to follow), and what OpenID Connect
/// discovery found, kept for a while so that sign-ins (which anyone may start) do not each
/// call the provider.
pub struct Providers {
    pub(super) http: reqwest::Client,
    pub(super) discovered: Discovered,
}

impl Default for Providers {
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Providers { http, discovered: Discovered::default() }
    }
}

/// The providers' metadata as discovered, by issuer, with when.
#[derive(Default)]
pub struct Discovered(pub(super) Mutex<HashMap<String, (Instant, CoreProviderMetadata)>>);

/// The crates' HTTP requests, made with our client.
pub(super) async fn call(
    client: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, HttpFailure> {
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

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
}
