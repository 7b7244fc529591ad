//! Single sign-on ([`crate::core::sso`]): the providers, the start of a sign-in, and the
//! provider's return. The browser goes through these by links and redirects, so failures come
//! back as a redirect to the sign-in page with a reason code, not as JSON.

use rocket::http::{Cookie, CookieJar, SameSite};
use rocket::response::Redirect;
use rocket::serde::json::Json;
use rocket::{State, get};

use super::auth::set_cookie;
use crate::clock;
use crate::config::Config;
use crate::core::blocking::blocking;
use crate::core::sso::{self, Provider};
use crate::core::{accounts, keys, session};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::server::OauthProvider;

documented_routes!(oauth_config, start, callback);

/// The configured providers, each with the address that starts a sign-in.
pub fn providers(config: &Config) -> Vec<OauthProvider> {
    Provider::all(config)
        .iter()
        .map(|p| OauthProvider {
            id: p.id().into(),
            name: p.name().into(),
            url: format!("/auth/oauth/{}", p.id()),
        })
        .collect()
}

/// `GET /auth/oauth-config`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct OauthConfig {
    pub providers: Vec<OauthProvider>,
}

/// The single sign-on providers the sign-in page offers.
#[utoipa::path(
    tag = "Account",
    operation_id = "oauthConfig",
    security(()),
    responses((status = 200, description = "The providers", body = OauthConfig)),
)]
#[get("/auth/oauth-config")]
fn oauth_config(state: &State<AppState>) -> Json<OauthConfig> {
    Json(OauthConfig { providers: providers(&state.config) })
}

fn provider(state: &AppState, id: &str) -> Result<Provider, ApiError> {
    Provider::find(&state.config, id).ok_or_else(|| ApiError::not_found("No such sign-in provider"))
}

fn redirect_uri(state: &AppState, id: &str) -> String {
    format!("{}/auth/oauth/{id}/callback", state.config.public_url())
}

/// Back to the sign-in page with why, as one of a few codes the page words itself (a message in
/// the address would let any link put words on the sign-in page): `unreachable`, `refused`,
/// `incomplete`, `expired`, `failed`, `unverified`, `closed`, `busy`, `browser`.
fn failed(code: &'static str) -> Redirect {
    Redirect::to(format!("/login?error={code}"))
}

/// Sends the browser to the provider.
#[utoipa::path(
    tag = "Account",
    operation_id = "startSignIn",
    security(()),
    responses((
        status = 303,
        description = "To the provider's sign-in page, or back to `/login?error=<code>`",
        headers(("Location" = String, description = "Where the browser goes")),
    )),
)]
#[get("/auth/oauth/<id>")]
async fn start(state: &State<AppState>, cookies: &CookieJar<'_>, id: &str) -> Result<Redirect, ApiError> {
    let provider = provider(state, id)?;
    let (url, pending) = match sso::start(&state.sso, &provider, redirect_uri(state, id)).await {
        Ok(started) => started,
        Err(sso::Failure(why)) => {
            tracing::warn!(provider = provider.id(), "could not start a sign-in: {why}");
            return Ok(failed("unreachable"));
        }
    };
    let started_state = pending.state.clone();
    let kept = state.db.write(move |tx| Ok::<_, ApiError>(sso::keep(tx, &pending, clock::now_ms())?)).await?;
    if !kept {
        return Ok(failed("busy"));
    }
    cookies.add(binding_cookie(state, started_state));
    Ok(Redirect::to(url))
}

/// The cookie that binds a sign-in to the browser that started it (issue 29): it holds the
/// sign-in's state, and the provider's return is taken only with it, so a return started by
/// someone else (their code, their state) cannot sign this browser in to their account. Lax, as
/// the return is a top-level navigation from the provider's site.
const BINDING: &str = "tidings_oauth";

fn binding_cookie(state: &AppState, value: String) -> Cookie<'static> {
    Cookie::build((BINDING, value))
        .path("/auth/oauth")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.config.secure_cookies())
        .max_age(rocket::time::Duration::milliseconds(sso::STATE_TTL_MS))
        .build()
}

/// The provider's return: signs the browser in and opens the dashboard.
#[utoipa::path(
    tag = "Account",
    operation_id = "finishSignIn",
    security(()),
    responses((
        status = 303,
        description = "Signed in (the session cookie set) to `/app` (to `/app/projects?notice=reclaimed` when an account made with the address by someone who never confirmed it was taken over), or back to `/login?error=<code>`: `unreachable`, `refused`, `incomplete`, `expired`, `failed`, `unverified`, `closed`, `busy` or `browser` (the sign-in was started in another browser, or its cookie is gone)",
        headers(("Location" = String, description = "Where the browser goes")),
    )),
)]
#[get("/auth/oauth/<id>/callback?<code>&<state>&<error>")]
async fn callback(
    app: &State<AppState>,
    cookies: &CookieJar<'_>,
    id: &str,
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
) -> Result<Redirect, ApiError> {
    let provider = provider(app, id)?;
    if let Some(error) = error {
        tracing::info!(
            provider = provider.id(),
            "the provider did not sign a user in: {}",
            error.chars().take(100).collect::<String>()
        );
        return Ok(failed("refused"));
    }
    let (Some(code), Some(state)) = (code, state) else {
        return Ok(failed("incomplete"));
    };
    let bound = cookies.get(BINDING).is_some_and(|c| keys::same(c.value(), &state));
    cookies.remove(Cookie::build(BINDING).path("/auth/oauth"));
    if !bound {
        tracing::info!(provider = provider.id(), "a sign-in came back to a browser that did not start it");
        return Ok(failed("browser"));
    }
    let (name, now) = (provider.id().to_string(), clock::now_ms());
    let pending = app.db.write(move |tx| Ok::<_, ApiError>(sso::take(tx, &name, &state, now)?)).await?;
    let Some(pending) = pending else {
        return Ok(failed("expired"));
    };
    let identity = match sso::finish(&app.sso, &provider, redirect_uri(app, id), pending, code).await {
        Ok(identity) => identity,
        Err(sso::Failure(why)) => {
            tracing::warn!(provider = provider.id(), "a sign-in failed: {why}");
            return Ok(failed("failed"));
        }
    };
    // Most sign-ins are of known users: a password hash (a quarter second of bcrypt) is made
    // only when a new or reclaimed account needs one, and then asked again with it.
    let mut outcome = sign_in(app, provider.id(), &identity, None).await?;
    if let Outcome::NeedsHash = outcome {
        let cost = app.config.auth.bcrypt_cost;
        let hash = blocking(move || accounts::hash_password(&keys::random_token(), cost)).await?;
        outcome = sign_in(app, provider.id(), &identity, Some(hash.map_err(ApiError::internal)?)).await?;
    }
    match outcome {
        Outcome::Session(token) => {
            set_cookie(cookies, app, token);
            Ok(Redirect::to("/app"))
        }
        Outcome::Reclaimed(token) => {
            set_cookie(cookies, app, token);
            Ok(Redirect::to("/app/projects?notice=reclaimed"))
        }
        Outcome::Unverified => Ok(failed("unverified")),
        Outcome::Refused | Outcome::NeedsHash => Ok(failed("closed")),
    }
}

enum Outcome {
    Session(String),
    /// Signed in to an account taken over from whoever made it without proving the address.
    Reclaimed(String),
    Unverified,
    Refused,
    NeedsHash,
}

/// Signs `identity` in ([`sso::user_for`]): a new session's token, when it may.
async fn sign_in(
    app: &AppState,
    provider: &str,
    identity: &sso::Identity,
    new_hash: Option<String>,
) -> Result<Outcome, ApiError> {
    let (provider, identity) = (provider.to_string(), identity.clone());
    let (secret, hours) = (app.secrets.jwt.clone(), app.config.auth.session_hours);
    let config = app.config.clone();
    app.db
        .write(move |tx| {
            let signups = accounts::signups_open(tx, &config)?;
            Ok(match sso::user_for(tx, &config, &provider, &identity, signups, new_hash.as_deref())? {
                sso::SignIn::As(user) => Outcome::Session(session::start(tx, &user.id, &secret, hours)?),
                sso::SignIn::Reclaimed(user) => {
                    Outcome::Reclaimed(session::start(tx, &user.id, &secret, hours)?)
                }
                sso::SignIn::Unverified => Outcome::Unverified,
                sso::SignIn::Refused => Outcome::Refused,
                sso::SignIn::NeedsHash => Outcome::NeedsHash,
            })
        })
        .await
}
