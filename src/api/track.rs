//! `POST /v1/track` (public key) and its dashboard alias `POST /events/track` (secret key or
//! session): record an event for a contact, upserting the contact, in one transaction that
//! commits before the reply.

use rocket::serde::json::Json;
use rocket::{State, post};

use super::guards::{ClientIp, ProjectAccess, PublicKey, UserAgent};
use super::idempotency::IdempotencyKey;
use super::json::{JsonBody, Medium};
use crate::clock;
use crate::core::confirmations::{self, Consenting, Mailer};
use crate::core::contacts::parse_email;
use crate::core::data::DataPatch;
use crate::core::track::{self, Track};
use crate::error::ApiError;
use crate::state::AppState;
use crate::views::Success;
use crate::views::consent::ConsentBody;
use crate::views::track::{TrackBody, Tracked};

documented_routes!(track_public, track_dashboard);

/// Checks the body; everything that needs no database. `seen`: the caller's address and user
/// agent, when the caller is the person (a browser with the public key).
fn check(body: TrackBody, seen: (Option<String>, Option<String>)) -> Result<Track, ApiError> {
    let email =
        body.email.ok_or_else(|| ApiError::invalid_field("email", "required", "email is required"))?;
    let event =
        body.event.ok_or_else(|| ApiError::invalid_field("event", "required", "event is required"))?;
    Ok(Track {
        email: parse_email(&email, "email")?,
        event: track::check_name(&event, "event")?,
        subscribed: body.subscribed,
        data: DataPatch::parse(body.data.as_ref(), "data")?,
        consent: consenting(body.confirm, body.consent, seen)?,
    })
}

/// The consent a producer's body asks for: `confirm` and the proof it gives (`consent`).
pub(super) fn consenting(
    confirm: Option<bool>,
    consent: Option<ConsentBody>,
    seen: (Option<String>, Option<String>),
) -> Result<Consenting, ApiError> {
    let confirm = confirm.unwrap_or(false);
    let proof = if confirm || consent.is_some() {
        Some(confirmations::check_proof("api", consent.map(ConsentBody::parts), seen, "consent")?)
    } else {
        None
    };
    Ok(Consenting { confirm, proof })
}

async fn record(
    state: &AppState,
    project: String,
    idempotency: IdempotencyKey,
    body: TrackBody,
    seen: (Option<String>, Option<String>),
) -> Result<Json<Success<Tracked>>, ApiError> {
    let request = check(body, seen)?;
    let ttl = state.config.limits.idempotency_ttl_hours;
    let (config, secrets) = (state.config.clone(), state.secrets.clone());
    // Repeatable: everything it does is in the database, so it needs no savepoint of its own.
    let tracked = state
        .db
        .write_repeatable(move |tx| {
            idempotency.claim(tx, &project, 200, ttl)?;
            let mailer = Mailer { config: &config, secret: &secrets.link };
            Ok::<_, ApiError>(track::track(tx, &project, &request, &mailer, clock::now_ms())?)
        })
        .await?;
    Ok(Json(Success::new(Tracked {
        contact: tracked.contact_id,
        event: tracked.event_id,
        timestamp: clock::iso(tracked.at),
    })))
}

/// Records an event for a contact, making the contact when the address is new. Browsers may
/// call it with the public key.
#[utoipa::path(
    tag = "Events",
    operation_id = "track",
    request_body = TrackBody,
    params(super::idempotency::Header),
    security(("publicKey" = [])),
    responses((status = 200, description = "Recorded", body = Success<Tracked>)),
)]
#[post("/v1/track", data = "<body>")]
async fn track_public(
    state: &State<AppState>,
    key: PublicKey,
    idempotency: IdempotencyKey,
    client: ClientIp,
    agent: UserAgent,
    body: JsonBody<TrackBody, Medium>,
) -> Result<Json<Success<Tracked>>, ApiError> {
    let seen = (client.0.map(|ip| ip.to_string()), agent.0);
    record(state, key.project.id, idempotency, body.0, seen).await
}

/// `POST /v1/track` with the secret key or the dashboard's session.
#[utoipa::path(
    tag = "Events",
    operation_id = "trackWithSecretKey",
    request_body = TrackBody,
    params(super::idempotency::Header),
    security(("secretKey" = []), ("session" = [], "projectId" = [])),
    responses((status = 200, description = "Recorded", body = Success<Tracked>)),
)]
#[post("/events/track", data = "<body>")]
async fn track_dashboard(
    state: &State<AppState>,
    access: ProjectAccess,
    idempotency: IdempotencyKey,
    body: JsonBody<TrackBody, Medium>,
) -> Result<Json<Success<Tracked>>, ApiError> {
    record(state, access.project.id, idempotency, body.0, (None, None)).await
}
