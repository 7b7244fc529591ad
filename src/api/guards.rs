//! Request guards: who is calling.
//!
//! - [`SecretKey`] and [`PublicKey`]: `Authorization: Bearer <key>` resolved to a project; the
//!   wrong kind of key is refused, a disabled project is refused, and the project's rate limit is
//!   taken here, so every keyed endpoint is limited.
//! - [`Session`]: the dashboard's `tidings_session` cookie resolved to a live session and its
//!   user; unsafe requests must be JSON from this server's origin (CSRF), and each user has the
//!   per-minute request limit.
//!
//! Resolutions are cached in the request, so stacked guards query the database once.

use std::net::IpAddr;
use std::time::Duration;

use rocket::http::Method;
use rocket::request::{FromRequest, Outcome, Request};

use crate::core::{keys, session};
use crate::db::keys::KeyKind;
use crate::db::projects::{Project, Wipe};
use crate::db::users::User;
use crate::db::{self};
use crate::error::{ApiError, stash};
use crate::state::AppState;

/// A request made with the project's secret key.
pub struct SecretKey {
    pub project: Project,
}

/// A request made with the project's public key (only `/v1/track` takes one).
pub struct PublicKey {
    pub project: Project,
}

/// A signed-in dashboard user.
pub struct Session {
    pub user: User,
}

/// The outcome of reading the Authorization header, cached per request.
enum KeyLookup {
    Missing,
    Malformed,
    Unknown,
    Found(Project, KeyKind),
    Failed(ApiError),
}

/// The result of taking one request from the project's allowance, cached per request and read
/// by the response fairing to set the `X-RateLimit-*` headers.
pub struct RateState(pub Option<RateCheck>);

pub struct RateCheck {
    pub limit: u32,
    pub outcome: Result<u32, Duration>,
}

fn app<'r>(req: &'r Request<'_>) -> &'r AppState {
    req.rocket().state::<AppState>().expect("AppState is always managed")
}

async fn lookup<'r>(req: &'r Request<'_>) -> &'r KeyLookup {
    req.local_cache_async(async {
        let Some(header) = req.headers().get_one("Authorization") else { return KeyLookup::Missing };
        let token = match header.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => return KeyLookup::Malformed,
        };
        let Some(kind) = keys::kind_of(token) else { return KeyLookup::Unknown };
        let digest = keys::digest(token);
        let cache = &app(req).keys;
        let found = match cache.get(&digest) {
            Some(known) => Ok(Some(known)),
            None => {
                let generation = cache.generation();
                let key = digest.clone();
                let found = app(req).db.run(move |conn| db::keys::find(conn, &key)).await;
                if let Ok(Some((project, stored))) = &found {
                    cache.put(generation, digest, project.clone(), *stored);
                }
                found
            }
        };
        match found {
            Ok(Some((project, stored))) if stored == kind => KeyLookup::Found(project, kind),
            Ok(_) => KeyLookup::Unknown,
            Err(e) => KeyLookup::Failed(e.into()),
        }
    })
    .await
}

fn wrong_key_message(wanted: KeyKind) -> &'static str {
    match wanted {
        KeyKind::Secret => "Invalid API key: this endpoint requires a secret key (sk_*), not a public key",
        KeyKind::Public => "Invalid API key: this endpoint requires a public key (pk_*), not a secret key",
    }
}

/// Resolves the key, checks its kind and the project, and takes one request from the allowance.
async fn project_for(req: &Request<'_>, wanted: KeyKind) -> Result<Project, ApiError> {
    let project = match lookup(req).await {
        KeyLookup::Missing => {
            return Err(ApiError::missing_auth(
                "Missing Authorization header; send `Authorization: Bearer <API key>`",
            ));
        }
        KeyLookup::Malformed => {
            return Err(ApiError::invalid_api_key(format!(
                "The Authorization header must be `Bearer <API key>`. {}",
                wrong_key_message(wanted)
            )));
        }
        KeyLookup::Unknown => return Err(ApiError::invalid_api_key(wrong_key_message(wanted))),
        KeyLookup::Failed(e) => return Err(e.clone()),
        KeyLookup::Found(_, kind) if *kind != wanted => {
            return Err(ApiError::invalid_api_key(wrong_key_message(wanted)));
        }
        KeyLookup::Found(project, _) => project.clone(),
    };
    let rate = req.local_cache(|| {
        let limiter = &app(req).limiter;
        RateState(Some(match wanted {
            KeyKind::Secret => RateCheck { limit: limiter.per_minute(), outcome: limiter.check(&project.id) },
            KeyKind::Public => {
                RateCheck { limit: limiter.public_per_minute(), outcome: limiter.check_public(&project.id) }
            }
        }))
    });
    if let Some(RateCheck { limit, outcome: Err(wait) }) = &rate.0 {
        return Err(too_many(*limit, *wait));
    }
    match project.wiping {
        Some(Wipe::Reset) => {
            return Err(ApiError::conflict(
                "This project is being reset; its keys work again once the reset has finished",
            ));
        }
        // Its keys are deleted with the request; this is a lookup from just before.
        Some(Wipe::Delete) => return Err(ApiError::conflict("This project is being deleted")),
        None => {}
    }
    if project.disabled {
        return Err(ApiError::new(
            403,
            "PROJECT_DISABLED",
            "This project is disabled; an owner or admin can enable it again in the dashboard",
        ));
    }
    no_repeated_parameter(req)?;
    Ok(project)
}

/// 400 for a query that names a parameter twice (`?subscribed=true&subscribed=false`): the
/// routes' optional parameters would read it as absent, and a filter would silently fall away.
/// Checked once the caller is known, by the key and session guards every API route takes.
fn no_repeated_parameter(req: &Request<'_>) -> Result<(), ApiError> {
    let Some(query) = req.uri().query() else { return Ok(()) };
    let mut seen = std::collections::HashSet::new();
    match query.segments().map(|(name, _)| name).find(|name| !seen.insert(*name)) {
        Some(name) => Err(ApiError::bad_request(format!(
            "The query names {name:?} more than once; give each parameter once"
        ))),
        None => Ok(()),
    }
}

fn outcome<T>(req: &Request<'_>, result: Result<T, ApiError>) -> Outcome<T, ApiError> {
    match result {
        Ok(value) => Outcome::Success(value),
        Err(e) => Outcome::Error(stash(req, e)),
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for SecretKey {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        let result = project_for(req, KeyKind::Secret).await.map(|project| SecretKey { project });
        outcome(req, result)
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for PublicKey {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        let result = project_for(req, KeyKind::Public).await.map(|project| PublicKey { project });
        outcome(req, result)
    }
}

struct CachedSession(Result<User, ApiError>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Session {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        let cached = req
            .local_cache_async(async {
                let Some(cookie) = req.cookies().get(session::COOKIE) else {
                    return CachedSession(Err(ApiError::missing_auth(
                        "Sign in first: this endpoint needs a session",
                    )));
                };
                let expired =
                    || ApiError::missing_auth("Your session has expired or is invalid; sign in again");
                let state = app(req);
                let Some(named) = session::verify(cookie.value(), &state.secrets.jwt) else {
                    return CachedSession(Err(expired()));
                };
                let user = state.db.run(move |conn| session::user(conn, &named)).await;
                CachedSession(match user {
                    Ok(Some(user)) => Ok(user),
                    Ok(None) => Err(expired()),
                    Err(e) => Err(e.into()),
                })
            })
            .await;
        let result = cached.0.clone().and_then(|user| {
            cookie_request_rules(req)?;
            let rate = req.local_cache(|| {
                let limiter = &app(req).limiter;
                let key = format!("user:{}", user.id);
                RateState(Some(RateCheck { limit: limiter.per_minute(), outcome: limiter.check(&key) }))
            });
            if let Some(RateCheck { limit, outcome: Err(wait) }) = &rate.0 {
                return Err(too_many(*limit, *wait));
            }
            no_repeated_parameter(req)?;
            Ok(Session { user })
        });
        outcome(req, result)
    }
}

fn too_many(limit: u32, wait: Duration) -> ApiError {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    ApiError::too_many_requests(limit, seconds)
}

/// CSRF rules for requests a browser authenticates with the session cookie: an unsafe method
/// must send `application/json` (a cross-site form cannot, and a cross-site `fetch` that does
/// needs a CORS preflight this server never grants), or `multipart/form-data` (uploads) with an
/// `Origin` header; and an `Origin` header, when present, must be this server's.
fn cookie_request_rules(req: &Request<'_>) -> Result<(), ApiError> {
    if !matches!(req.method(), Method::Post | Method::Put | Method::Patch | Method::Delete) {
        return Ok(());
    }
    check_origin(req)?;
    let content_type = req.content_type();
    if content_type.is_some_and(|t| t.is_json()) {
        return Ok(());
    }
    if content_type.is_some_and(|t| t.is_form_data()) && req.headers().contains("Origin") {
        return Ok(());
    }
    Err(ApiError::new(
        415,
        "UNSUPPORTED_MEDIA_TYPE",
        "Requests signed in with the session cookie must send Content-Type: application/json",
    ))
}

/// An `Origin` header, when a request carries one, must name this server: the origin of
/// `[server] public_url`, or the host the request was sent to (so the dashboard works by
/// whichever name the operator reaches it). 403 otherwise.
fn check_origin(req: &Request<'_>) -> Result<(), ApiError> {
    let Some(origin) = req.headers().get_one("Origin") else { return Ok(()) };
    let public_url = app(req).config.public_url();
    let authority = |url: &str| -> Option<String> {
        let (scheme, rest) = url.split_once("://")?;
        let host = rest.split('/').next()?.to_ascii_lowercase();
        let default_port = if scheme.eq_ignore_ascii_case("https") { ":443" } else { ":80" };
        Some(host.strip_suffix(default_port).unwrap_or(&host).to_string())
    };
    let Some(from) = authority(origin) else {
        return Err(ApiError::forbidden("The request's Origin header is not this server"));
    };
    let host = req.headers().get_one("Host").map(str::to_ascii_lowercase);
    let matches_host = host.is_some_and(|h| {
        let scheme = origin.split("://").next().unwrap_or("http");
        authority(&format!("{scheme}://{h}")).is_some_and(|h| h == from)
    });
    let matches_public = origin.split("://").next() == public_url.split("://").next()
        && authority(&public_url).is_some_and(|p| p == from);
    if matches_host || matches_public {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "Requests from {origin} are not accepted; use this server's own pages"
        )))
    }
}

/// A request from this server's own pages (or no browser at all): sign-in and sign-up, which
/// carry no cookie yet but must not be forged from another site either (login CSRF).
pub struct SameOrigin;

#[rocket::async_trait]
impl<'r> FromRequest<'r> for SameOrigin {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        outcome(req, check_origin(req).map(|()| SameOrigin))
    }
}

/// The client's address: the peer, or, when the peer is a trusted proxy, the last address in
/// `X-Forwarded-For` that is not itself a trusted proxy.
pub struct ClientIp(pub Option<IpAddr>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ClientIp {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        let trusted = &app(req).config.server.trusted_proxies;
        let peer = req.remote().map(|a| a.ip());
        let Some(peer) = peer.filter(|p| trusted.contains(p)) else {
            return Outcome::Success(ClientIp(peer));
        };
        let forwarded = req
            .headers()
            .get("X-Forwarded-For")
            .flat_map(|h| h.split(','))
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .collect::<Vec<_>>();
        let client = forwarded.into_iter().rev().find(|a| !trusted.contains(a)).unwrap_or(peer);
        Outcome::Success(ClientIp(Some(client)))
    }
}

/// The request's `User-Agent`, if any: at most its first 512 bytes (a header may be far longer
/// than anything kept or compared).
pub struct UserAgent(pub Option<String>);

/// The most of a `User-Agent` read.
const MAX_USER_AGENT_BYTES: usize = 512;

#[rocket::async_trait]
impl<'r> FromRequest<'r> for UserAgent {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        let agent = req.headers().get_one("User-Agent").map(|a| {
            let end =
                (0..=a.len().min(MAX_USER_AGENT_BYTES)).rev().find(|&i| a.is_char_boundary(i)).unwrap_or(0);
            a[..end].to_string()
        });
        Outcome::Success(UserAgent(agent))
    }
}

/// Sets the `X-RateLimit-*` headers of a keyed response.
pub fn rate_headers(req: &Request<'_>) -> Option<(u32, u32)> {
    let state = req.local_cache(|| RateState(None));
    state.0.as_ref().map(|check| (check.limit, *check.outcome.as_ref().unwrap_or(&0)))
}

/// The project a request acts on, for endpoints both API users (secret key) and the dashboard
/// (session cookie plus the `X-Project-Id` header naming one of the user's projects) call.
pub struct ProjectAccess {
    pub project: Project,
}

/// The header the dashboard names its project in.
pub const PROJECT_HEADER: &str = "X-Project-Id";

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ProjectAccess {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        if req.headers().contains("Authorization") || req.cookies().get(session::COOKIE).is_none() {
            let result = project_for(req, KeyKind::Secret).await.map(|project| ProjectAccess { project });
            return outcome(req, result);
        }
        let session = match Session::from_request(req).await {
            Outcome::Success(session) => session,
            Outcome::Error(e) => return Outcome::Error(e),
            Outcome::Forward(status) => return Outcome::Forward(status),
        };
        let Some(project_id) = req.headers().get_one(PROJECT_HEADER) else {
            let e = ApiError::bad_request(format!("Name the project in the {PROJECT_HEADER} header"));
            return Outcome::Error(stash(req, e));
        };
        let result = crate::core::projects::membership(&app(req).db, &session.user.id, project_id)
            .await
            .map(|(project, _)| ProjectAccess { project })
            .map_err(ApiError::from);
        outcome(req, result)
    }
}
