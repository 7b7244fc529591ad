//! The confirmation page of double opt-in (issue 32, item 3): the mailed link opens a page with
//! a button, and only pressing it confirms, so a link scanner's GET changes nothing.

use rocket::http::Status;
use rocket::{State, get, post};

use super::guards::{ClientIp, UserAgent};
use super::tracking::{Page, button_form, not_found, page};
use crate::clock;
use crate::core::confirmations::{self, Confirmed};
use crate::core::links::{self, Link, escape_html};
use crate::error::Envelope;
use crate::state::AppState;

documented_routes!(confirm_page, confirm);

/// The request a token names, if its signature holds.
fn request_of(state: &AppState, token: &str) -> Option<String> {
    match links::verify(&state.secrets.link, token)? {
        Link::Confirm { confirmation } => Some(confirmation),
        _ => None,
    }
}

fn expired() -> Page {
    page(
        Status::Gone,
        "This link has expired",
        "<p>Confirmation links work for 7 days. Sign up again to get a new one.</p>",
    )
}

fn already() -> Page {
    page(Status::Ok, "Already confirmed", "<p>This subscription was confirmed before. Nothing changed.</p>")
}

/// The confirmation page: says what will be confirmed, with the button that confirms it.
#[utoipa::path(
    tag = "Pages",
    operation_id = "confirmPage",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 410, description = "The link has expired: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged or altered link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/confirm/<token>")]
async fn confirm_page(state: &State<AppState>, token: &str) -> Page {
    let Some(id) = request_of(state, token) else { return not_found() };
    let peeked = state.db.run(move |conn| confirmations::peek(conn, &id, clock::now_ms())).await;
    match peeked {
        Ok((Confirmed::Done(contact), project)) => {
            let action = format!("/confirm/{token}");
            let body = format!(
                "<p>Confirm that <strong>{}</strong> wants to get email from <strong>{}</strong>.</p>{}",
                escape_html(&contact.email),
                escape_html(&project.unwrap_or_default()),
                button_form(&action, "Confirm my subscription", "", "confirm")
            );
            page(Status::Ok, "Confirm your subscription", &body)
        }
        Ok((Confirmed::Already, _)) => already(),
        Ok((Confirmed::Expired, _)) => expired(),
        Ok((Confirmed::Gone, _)) => not_found(),
        Err(e) => failed(e),
    }
}

fn failed(e: crate::core::Error) -> Page {
    tracing::error!("a confirmation page failed: {e}");
    page(Status::InternalServerError, "Something went wrong", "<p>Please try again in a moment.</p>")
}

/// Confirms the subscription (the page's button).
#[utoipa::path(
    tag = "Pages",
    operation_id = "confirm",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 410, description = "The link has expired: a page saying so", content_type = "text/html", body = String), (status = 500, description = "The change could not be saved: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged or altered link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[post("/confirm/<token>")]
async fn confirm(state: &State<AppState>, token: &str, client: ClientIp, agent: UserAgent) -> Page {
    let Some(id) = request_of(state, token) else { return not_found() };
    let who = (client.0.map(|ip| ip.to_string()), agent.0);
    let done = state.db.write(move |tx| confirmations::confirm(tx, &id, who, clock::now_ms())).await;
    match done {
        Ok(Confirmed::Done(contact)) => page(
            Status::Ok,
            "Subscription confirmed",
            &format!("<p>Thank you. <strong>{}</strong> is subscribed.</p>", escape_html(&contact.email)),
        ),
        Ok(Confirmed::Already) => already(),
        Ok(Confirmed::Expired) => expired(),
        Ok(Confirmed::Gone) => not_found(),
        Err(e) => failed(e),
    }
}
