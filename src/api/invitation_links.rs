//! The invitation link's side (`/auth/invitation`, `/auth/accept-invitation`): what an
//! invitation offers, and accepting it with a new password or as the signed-in user it names.
//! The token is the only credential; it is used once.

use rocket::http::CookieJar;
use rocket::serde::json::Json;
use rocket::{State, get, post};

use super::auth::{TokenAndPassword, limited, new_password_hash, password_of, set_cookie, user_view};
use super::guards::{ClientIp, SameOrigin, Session};
use super::json::{JsonBody, Small};
use crate::clock;
use crate::core::{accounts, invitations, session};
use crate::db::users;
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::projects::{InvitationOffer, Joined, ProjectRef};

documented_routes!(show, accept);

/// What the invitation offers: the project, the role and the address, and whether that address
/// has an account already (then its owner signs in to accept).
#[utoipa::path(
    get,
    path = "/auth/invitation",
    tag = "Account",
    operation_id = "getInvitation",
    params(("token" = String, Query, description = "The token of the mailed link")),
    security(()),
    responses((status = 200, description = "The invitation", body = InvitationOffer)),
)]
#[get("/auth/invitation?<token>")]
async fn show(state: &State<AppState>, token: Option<&str>) -> Result<Json<InvitationOffer>, ApiError> {
    let token = accounts::token_field(token)?.to_string();
    let view = state
        .db
        .run(move |conn| {
            let (invitation, project) = invitations::open(conn, &token, clock::now_ms())?;
            let has_account = users::by_email(conn, &invitation.email)?.is_some();
            Ok::<_, ApiError>(InvitationOffer {
                email: invitation.email,
                role: invitation.role,
                project: ProjectRef::from(&project),
                expires_at: clock::iso(invitation.expires_at),
                has_account,
            })
        })
        .await?;
    Ok(Json(view))
}

/// Accepts: signed in as the invited address, that account joins; otherwise a password creates
/// the account (its address verified by the link), which joins and is signed in.
#[utoipa::path(
    post,
    path = "/auth/accept-invitation",
    tag = "Account",
    operation_id = "acceptInvitation",
    request_body = TokenAndPassword,
    security((), ("session" = [])),
    responses((status = 200, description = "Joined, and signed in", body = Joined)),
)]
#[post("/auth/accept-invitation", data = "<body>")]
async fn accept(
    state: &State<AppState>,
    cookies: &CookieJar<'_>,
    _origin: SameOrigin,
    client: ClientIp,
    session: Option<Session>,
    body: JsonBody<TokenAndPassword, Small>,
) -> Result<Json<Joined>, ApiError> {
    let token = accounts::token_field(body.0.token.as_deref())?.to_string();
    if let Some(Session { user }) = session {
        let view = user_view(&user);
        let project =
            state.db.write(move |tx| invitations::accept_as(tx, &token, &user, clock::now_ms())).await?;
        return Ok(Json(Joined { user: view, project: ProjectRef::from(&project) }));
    }
    let password = password_of(body.0)?;
    let (user, project, session) = limited(state, None, &client, async {
        let hash = new_password_hash(state, "password", password).await?;
        let (secret, hours) = (state.secrets.jwt.clone(), state.config.auth.session_hours);
        state
            .db
            .write(move |tx| {
                let (user, project) = invitations::accept_new(tx, &token, &hash, clock::now_ms())?;
                let session = session::start(tx, &user.id, &secret, hours)?;
                Ok::<_, ApiError>((user, project, session))
            })
            .await
    })
    .await?;
    set_cookie(cookies, state, session);
    Ok(Json(Joined { user: user_view(&user), project: ProjectRef::from(&project) }))
}
