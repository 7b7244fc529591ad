//! Dashboard sign-up, sign-in and sign-out, and the OAuth provider list.

use rocket::http::{Cookie, CookieJar, SameSite};
use rocket::serde::json::Json;
use rocket::{Route, State, get, post, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use super::blocking;
use super::json::{JsonBody, Small};
use crate::core::{accounts, session};
use crate::db::DbError;
use crate::db::users::{self, User};
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

fn set_session(cookies: &CookieJar<'_>, state: &AppState, user: &User) {
    let hours = state.config.auth.session_hours;
    let token = session::issue(&user.id, &state.secrets.jwt, hours);
    let cookie = Cookie::build((session::COOKIE, token))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.config.secure_cookies())
        .max_age(rocket::time::Duration::hours(hours.into()));
    cookies.add(cookie);
}

#[post("/auth/signup", data = "<body>")]
async fn signup(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<Value>, ApiError> {
    if state.config.auth.disable_signups {
        return Err(ApiError::forbidden(
            "Sign-ups are disabled on this server; ask an administrator for an account",
        ));
    }
    let (email, password) = accounts::credentials(body.0.email.as_deref(), body.0.password.as_deref(), true)?;
    let cost = state.config.auth.bcrypt_cost;
    let hash =
        blocking(move || accounts::hash_password(&password, cost)).await?.map_err(ApiError::internal)?;
    let user = state.db.write(move |tx| accounts::insert_user(tx, &email, &hash)).await?;
    set_session(cookies, state, &user);
    Ok(Json(user_view(&user)))
}

#[post("/auth/login", data = "<body>")]
async fn login(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<Value>, ApiError> {
    let (email, password) =
        accounts::credentials(body.0.email.as_deref(), body.0.password.as_deref(), false)?;
    let user = state.db.run(move |conn| Ok::<_, DbError>(users::by_email(conn, &email)?)).await?;
    let hash = user.as_ref().map(|u| u.password_hash.clone());
    let cost = state.config.auth.bcrypt_cost;
    let matches = blocking(move || accounts::verify_password(&password, hash.as_deref(), cost)).await?;
    match user {
        Some(user) if matches => {
            set_session(cookies, state, &user);
            Ok(Json(user_view(&user)))
        }
        _ => Err(ApiError::new(401, "INVALID_CREDENTIALS", "The email or password is incorrect")),
    }
}

#[get("/auth/logout")]
fn logout(cookies: &CookieJar<'_>) -> Json<Value> {
    cookies.remove(Cookie::build(session::COOKIE).path("/"));
    Json(json!({ "success": true }))
}

/// Configured OAuth providers: this build signs in with email and password only.
#[get("/auth/oauth-config")]
fn oauth_config() -> Json<Value> {
    Json(json!({ "providers": [] }))
}
