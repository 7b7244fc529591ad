//! Dashboard sign-up, sign-in and sign-out, address verification, password reset and change,
//! and the OAuth provider list.

use rocket::http::{Cookie, CookieJar, SameSite};
use rocket::serde::json::Json;
use rocket::{State, get, post};

use super::guards::{ClientIp, SameOrigin, Session};
use super::json::{JsonBody, Small};
use crate::core::blocking::blocking;
use crate::core::{accounts, session};
use crate::db::users::{self, User};
use crate::error::ApiError;
use crate::state::AppState;
pub(super) use crate::views::accounts::TokenAndPassword;
use crate::views::accounts::{Credentials, Done, PasswordChange, ResetRequest, TokenBody, User as UserView};

documented_routes!(
    signup,
    login,
    logout,
    verify_email,
    request_verification,
    request_password_reset,
    reset_password,
    change_password
);

/// The user as the API shows it.
pub fn user_view(user: &User) -> UserView {
    UserView::from(user)
}

/// Sets the cookie for a session started with [`session::start`].
pub(super) fn set_cookie(cookies: &CookieJar<'_>, state: &AppState, token: String) {
    let hours = state.config.auth.session_hours;
    let cookie = Cookie::build((session::COOKIE, token))
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(state.config.secure_cookies())
        .max_age(rocket::time::Duration::hours(hours.into()));
    cookies.add(cookie);
}

/// Runs a sign-in or sign-up under the attempt limits, in the account's and the address's turn:
/// refused at once while either is locked, and counted when it fails for the client's reasons
/// (not for ours: a 5xx) before the next attempt for either is checked.
pub(super) async fn limited<T>(
    state: &AppState,
    account: Option<String>,
    client: &ClientIp,
    attempt: impl Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let _turn = state.attempts.turn(account.as_deref(), client.0).await;
    state.attempts.check(account.as_deref(), client.0)?;
    let result = attempt.await;
    if let Err(e) = &result
        && e.status < 500
    {
        state.attempts.failed(account.as_deref(), client.0);
    }
    result
}

/// Makes an account and signs it in (the session cookie); its address gets a verification link.
#[utoipa::path(
    tag = "Account",
    operation_id = "signUp",
    request_body = Credentials,
    security(()),
    responses((status = 200, description = "Signed up and in", body = UserView)),
)]
#[post("/auth/signup", data = "<body>")]
async fn signup(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<UserView>, ApiError> {
    let account = body.0.email.clone();
    let (user, token) = limited(state, account, &client, create_account(state, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(user_view(&user)))
}

async fn create_account(state: &AppState, body: Credentials) -> Result<(User, String), ApiError> {
    // Refused before bcrypt when closed; asked again as the account is made.
    let config = state.config.clone();
    if !state.db.run(move |conn| accounts::signups_open(conn, &config)).await? {
        return Err(accounts::signups_closed().into());
    }
    let (email, password) = accounts::credentials(body.email.as_deref(), body.password.as_deref(), true)?;
    let cost = state.config.auth.bcrypt_cost;
    let hash =
        blocking(move || accounts::hash_password(&password, cost)).await?.map_err(ApiError::internal)?;
    let (secret, hours) = (state.secrets.jwt.clone(), state.config.auth.session_hours);
    let config = state.config.clone();
    Ok(state
        .db
        .write(move |tx| {
            accounts::sign_up(tx, &config, (&email, &hash), (&secret, hours), crate::clock::now_ms())
        })
        .await?)
}

/// Signs in (the session cookie); repeated failures are refused for a while with 429.
#[utoipa::path(
    tag = "Account",
    operation_id = "signIn",
    request_body = Credentials,
    security(()),
    responses((status = 200, description = "Signed in", body = UserView)),
)]
#[post("/auth/login", data = "<body>")]
async fn login(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<Credentials, Small>,
) -> Result<Json<UserView>, ApiError> {
    let account = body.0.email.clone();
    let (user, token) = limited(state, account, &client, sign_in(state, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(user_view(&user)))
}

async fn sign_in(state: &AppState, body: Credentials) -> Result<(User, String), ApiError> {
    let (email, password) = accounts::credentials(body.email.as_deref(), body.password.as_deref(), false)?;
    let user = state.db.run(move |conn| users::by_email(conn, &email)).await?;
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
#[utoipa::path(
    tag = "Account",
    operation_id = "signOut",
    security(()),
    responses((status = 200, description = "Signed out", body = Done)),
)]
#[get("/auth/logout")]
async fn logout(state: &State<AppState>, cookies: &CookieJar<'_>) -> Result<Json<Done>, ApiError> {
    if let Some(named) =
        cookies.get(session::COOKIE).and_then(|c| session::verify(c.value(), &state.secrets.jwt))
    {
        state.db.write(move |tx| session::end(tx, &named)).await?;
    }
    cookies.remove(Cookie::build(session::COOKIE).path("/"));
    Ok(Json(Done::new(None)))
}

/// Opens a verification link: the address the link was mailed to is verified.
#[utoipa::path(
    tag = "Account",
    operation_id = "verifyAddress",
    request_body = TokenBody,
    security(()),
    responses((status = 200, description = "The user, verified", body = UserView)),
)]
#[post("/auth/verify-email", data = "<body>")]
async fn verify_email(
    state: &State<AppState>,
    _origin: SameOrigin,
    body: JsonBody<TokenBody, Small>,
) -> Result<Json<UserView>, ApiError> {
    let token = accounts::token_field(body.0.token.as_deref())?.to_string();
    let user = state.db.write(move |tx| accounts::verify_email(tx, &token, crate::clock::now_ms())).await?;
    Ok(Json(user_view(&user)))
}

/// Mails the signed-in user a new verification link (limited like reset requests).
#[utoipa::path(
    tag = "Account",
    operation_id = "requestVerification",
    security(("session" = [])),
    responses((status = 200, description = "On its way", body = Done)),
)]
#[post("/auth/request-verification")]
async fn request_verification(
    state: &State<AppState>,
    session: Session,
    client: ClientIp,
) -> Result<Json<Done>, ApiError> {
    let user = session.user;
    if user.email_verified {
        return Err(ApiError::conflict("This email address is already verified"));
    }
    state.mail_requests.take(Some(&user.email), client.0)?;
    let config = state.config.clone();
    let email = user.email.clone();
    state
        .db
        .write(move |tx| {
            Ok::<_, ApiError>(accounts::send_verification(tx, &config, &user, crate::clock::now_ms())?)
        })
        .await?;
    Ok(Json(Done::new(Some(format!("A new link is on its way to {email}")))))
}

/// Mails a password reset link to the account with this address, if there is one. The answer
/// is the same either way, and requests are limited per address asked for and per client
/// whether or not the account exists, so neither tells who has an account.
#[utoipa::path(
    tag = "Account",
    operation_id = "requestPasswordReset",
    request_body = ResetRequest,
    security(()),
    responses((status = 200, description = "The same answer whether or not the account exists", body = Done)),
)]
#[post("/auth/request-password-reset", data = "<body>")]
async fn request_password_reset(
    state: &State<AppState>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<ResetRequest, Small>,
) -> Result<Json<Done>, ApiError> {
    let email =
        body.0.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let email = crate::core::email::normalize(&email).map_err(|why| {
        ApiError::invalid_field("email", "invalid_string", format!("Invalid email: the address {why}"))
    })?;
    state.mail_requests.take(Some(&email), client.0)?;
    let config = state.config.clone();
    state
        .db
        .write(move |tx| {
            Ok::<_, ApiError>(accounts::send_password_reset(tx, &config, &email, crate::clock::now_ms())?)
        })
        .await?;
    Ok(Json(Done::new(Some(
        "If an account uses this address, a link to reset its password is on its way".into(),
    ))))
}

/// Sets a new password with a reset link's token; every session of the user ends, and this
/// browser is signed in afresh.
#[utoipa::path(
    tag = "Account",
    operation_id = "resetPassword",
    request_body = TokenAndPassword,
    security(()),
    responses((status = 200, description = "The password is set and this browser signed in", body = UserView)),
)]
#[post("/auth/reset-password", data = "<body>")]
async fn reset_password(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    body: JsonBody<TokenAndPassword, Small>,
) -> Result<Json<UserView>, ApiError> {
    let (user, token) = limited(state, None, &client, reset_with_token(state, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(user_view(&user)))
}

async fn reset_with_token(state: &AppState, body: TokenAndPassword) -> Result<(User, String), ApiError> {
    let token = accounts::token_field(body.token.as_deref())?.to_string();
    let hash = new_password_hash(state, "password", password_of(body)?).await?;
    let (secret, hours) = (state.secrets.jwt.clone(), state.config.auth.session_hours);
    state
        .db
        .write(move |tx| {
            let user = accounts::reset_password(tx, &token, &hash, crate::clock::now_ms())?;
            let session = session::start(tx, &user.id, &secret, hours)?;
            Ok((user, session))
        })
        .await
}

/// The password of a token-and-password body, under either of its names.
pub(super) fn password_of(body: TokenAndPassword) -> Result<Option<String>, ApiError> {
    super::aliases::field(("password", body.password), ("newPassword", body.new_password))
}

/// Checks a new password against the rules (422 naming `field`) and hashes it off the executor.
pub(super) async fn new_password_hash(
    state: &AppState,
    field: &str,
    password: Option<String>,
) -> Result<String, ApiError> {
    let password =
        password.ok_or_else(|| ApiError::invalid_field(field, "required", format!("{field} is required")))?;
    accounts::check_password(&password)
        .map_err(|why| ApiError::invalid_field(field, "too_short", format!("{field} {why}")))?;
    let cost = state.config.auth.bcrypt_cost;
    blocking(move || accounts::hash_password(&password, cost)).await?.map_err(ApiError::internal)
}

/// Changes the signed-in user's password, given the current one (a wrong one counts as a
/// failed sign-in); every other session ends and this one is started afresh.
#[utoipa::path(
    tag = "Account",
    operation_id = "changePassword",
    request_body = PasswordChange,
    security(("session" = [])),
    responses((status = 200, description = "Changed; other sessions ended", body = Done)),
)]
#[post("/users/@me/password", data = "<body>")]
async fn change_password(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    session: Session,
    client: ClientIp,
    body: JsonBody<PasswordChange, Small>,
) -> Result<Json<Done>, ApiError> {
    let account = Some(session.user.email.clone());
    let token = limited(state, account, &client, change_with_current(state, session.user, body.0)).await?;
    set_cookie(cookies, state, token);
    Ok(Json(Done::new(None)))
}

async fn change_with_current(state: &AppState, user: User, body: PasswordChange) -> Result<String, ApiError> {
    let current = body.current_password.ok_or_else(|| {
        ApiError::invalid_field("currentPassword", "required", "currentPassword is required")
    })?;
    let hash = new_password_hash(state, "newPassword", body.new_password).await?;
    let (cost, stored) = (state.config.auth.bcrypt_cost, user.password_hash.clone());
    if !blocking(move || accounts::verify_password(&current, Some(&stored), cost)).await? {
        return Err(ApiError::new(401, "INVALID_CREDENTIALS", "The current password is incorrect"));
    }
    let (secret, hours) = (state.secrets.jwt.clone(), state.config.auth.session_hours);
    state
        .db
        .write(move |tx| {
            accounts::change_password(tx, &user.id, &hash)?;
            Ok::<_, ApiError>(session::start(tx, &user.id, &secret, hours)?)
        })
        .await
}
