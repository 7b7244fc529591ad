//! Dashboard sign-up, sign-in and sign-out, and the OAuth provider list.

use rocket::http::{Cookie, CookieJar, SameSite};
use rocket::serde::json::Json;
use rocket::{Route, State, get, post, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use super::blocking;
use super::guards::{ClientIp, SameOrigin};
use super::json::{JsonBody, Small};
use crate::core::{accounts, session};
use crate::db::users::{self, User};
use crate::db::{DbError, sessions};
use crate::error::ApiError;
use crate::state::AppState;

pub fn routes() -> Vec<Route> {
    routes![signup, login, logout, oauth_config]
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Credentials {
    email: Option<String>,
    password: Option<String>,
}

/// The user as the API shows it.
pub fn user_view(user: &User) -> Value {
    json!({
        "id": user.id,
        "email": user.email,
        "emailVerified": user.email_verified,
        "createdAt": crate::clock::iso(user.created_at),
        "updatedAt": crate::clock::iso(user.updated_at),
    })
}

/// Sets the cookie for a session started with [`session::start`].
fn set_cookie(cookies: &CookieJar<'_>, state: &AppState, token: String) {
    let hours = state.config.auth.session_hours;
    let cookie = Cookie::build((session::COOKIE, token))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.config.secure_cookies())
        .max_age(rocket::time::Duration::hours(hours.into()));
    cookies.add(cookie);
}

/// Runs a sign-in or sign-up under the attempt limits: refused at once while the account or the
/// address is locked, and counted when it fails for the client's reasons (not for ours: a 5xx).
async fn limited<T>(
    state: &AppState,
    account: Option<String>,
    client: &ClientIp,
    attempt: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    state.attempts.check(account.as_deref(), client.0)?;
    let result = attempt.await;
    if let Err(e) = &result
        && e.status < 500
    {
        state.attempts.failed(account.as_deref(), client.0);
    }
    result
}

#[post("/auth/signup", data = "<body>")]
async fn signup(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<Value>, ApiError> {
    let account = body.0.email.clone();
    let (user, token) = limited(state, account, &client, create_account(state, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(user_view(&user)))
}

async fn create_account(state: &AppState, body: Credentials) -> Result<(User, String), ApiError> {
    if state.config.auth.disable_signups {
        return Err(ApiError::forbidden(
            "Sign-ups are disabled on this server; ask an administrator for an account",
        ));
    }
    let (email, password) = accounts::credentials(body.email.as_deref(), body.password.as_deref(), true)?;
    let cost = state.config.auth.bcrypt_cost;
    let hash =
        blocking(move || accounts::hash_password(&password, cost)).await?.map_err(ApiError::internal)?;
    let (secret, hours) = (state.secrets.jwt.clone(), state.config.auth.session_hours);
    state
        .db
        .write(move |tx| {
            let user = accounts::insert_user(tx, &email, &hash)?;
            let token = session::start(tx, &user.id, &secret, hours)?;
            Ok((user, token))
        })
        .await
}

#[post("/auth/login", data = "<body>")]
async fn login(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<Value>, ApiError> {
    let account = body.0.email.clone();
    let (user, token) = limited(state, account, &client, sign_in(state, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(user_view(&user)))
}

async fn sign_in(state: &AppState, body: Credentials) -> Result<(User, String), ApiError> {
    let (email, password) = accounts::credentials(body.email.as_deref(), body.password.as_deref(), false)?;
    let user = state.db.run(move |conn| Ok::<_, DbError>(users::by_email(conn, &email)?)).await?;
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let cost = state.config.auth.bcrypt_cost;
    let matches = blocking(move || accounts::verify_password(&password, hash.as_deref(), cost)).await?;
    let user = match user {
        Some(user) if matches => user,
        _ => return Err(ApiError::new(401, "INVALID_CREDENTIALS", "The email or password is incorrect")),
    };
    let (secret, hours, id) = (state.secrets.jwt.clone(), state.config.auth.session_hours, user.id.clone());
    let token = state.db.write(move |tx| Ok::<_, ApiError>(session::start(tx, &id, &secret, hours)?)).await?;
    Ok((user, token))
}

/// Ends the session on the server (a copy of the cookie stops working too) and clears the cookie.
#[get("/auth/logout")]
async fn logout(state: &State<AppState>, cookies: &CookieJar<'_>) -> Result<Json<Value>, ApiError> {
    if let Some(named) =
        cookies.get(session::COOKIE).and_then(|c| session::verify(c.value(), &state.secrets.jwt))
    {
        state.db.write(move |tx| Ok::<_, ApiError>(sessions::delete(tx, &named.session)?)).await?;
    }
    cookies.remove(Cookie::build(session::COOKIE).path("/"));
    Ok(Json(json!({ "success": true })))
}

/// Configured OAuth providers: this build signs in with email and password only.
#[get("/auth/oauth-config")]
fn oauth_config() -> Json<Value> {
    Json(json!({ "providers": [] }))
}
