//! The confirmation page of double opt-in (issue 32, item 3): the mailed link opens a page with
//! a button, and only pressing it confirms, so a link scanner's GET changes nothing.

use rocket::http::Status;
use rocket::{State, get, post};

use super::guards::{ClientIp, UserAgent};
use super::public_page::{Page, Reader, Shell, button_form};
use crate::clock;
use crate::core::confirmations::{self, Confirmed};
use crate::core::i18n::locale_of;
use crate::core::links::{self, Link};
use crate::db::contacts;
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

fn expired(shell: &Shell) -> Page {
    shell.page(Status::Gone, "confirm.expired_title", &shell.p("confirm.expired", &[]))
}

fn already(shell: &Shell) -> Page {
    shell.page(Status::Ok, "confirm.already_title", &shell.p("confirm.already", &[]))
}

/// The page's dress: the project's look in the contact's language (the reader's when the
/// request or its contact is gone).
async fn shell_of(state: &AppState, contact: Option<&contacts::Contact>, reader: &Reader) -> Shell {
    match contact {
        Some(c) => Shell::of_project(state, &c.project_id, reader.wishes(locale_of(&c.data))).await,
        None => Shell::plain(reader),
    }
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
async fn confirm_page(state: &State<AppState>, token: &str, reader: Reader) -> Page {
    let Some(id) = request_of(state, token) else { return Shell::plain(&reader).not_found() };
    let peeked = state.db.run(move |conn| confirmations::peek(conn, &id, clock::now_ms())).await;
    let (outcome, contact) = match peeked {
        Ok(found) => found,
        Err(e) => return failed(Shell::plain(&reader), e),
    };
    let shell = shell_of(state, contact.as_ref(), &reader).await;
    match (outcome, contact) {
        (Confirmed::Done(_), Some(contact)) => {
            confirm_view(&shell, &format!("/confirm/{token}"), &contact.email)
        }
        (Confirmed::Already, _) => already(&shell),
        (Confirmed::Expired, _) => expired(&shell),
        _ => shell.not_found(),
    }
}

/// The page that asks `email` to press the button (also the dashboard's preview).
pub(super) fn confirm_view(shell: &Shell, action: &str, email: &str) -> Page {
    let vars = [("email", email), ("project", shell.look.name.as_str())];
    let label = shell.texts.get("confirm.button");
    let body = shell.p("confirm.ask", &vars) + &button_form(action, &label, "", "confirm");
    shell.page(Status::Ok, "confirm.title", &body)
}

fn failed(shell: Shell, e: crate::core::Error) -> Page {
    tracing::error!("a confirmation page failed: {e}");
    shell.failed()
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
async fn confirm(
    state: &State<AppState>,
    token: &str,
    client: ClientIp,
    agent: UserAgent,
    reader: Reader,
) -> Page {
    let Some(id) = request_of(state, token) else { return Shell::plain(&reader).not_found() };
    let who = (client.0.map(|ip| ip.to_string()), agent.0);
    let done = state.db.write(move |tx| confirmations::confirm(tx, &id, who, clock::now_ms())).await;
    let (outcome, contact) = match done {
        Ok(found) => found,
        Err(e) => return failed(Shell::plain(&reader), e),
    };
    let shell = shell_of(state, contact.as_ref(), &reader).await;
    match outcome {
        Confirmed::Done(contact) => shell.page(
            Status::Ok,
            "confirm.done_title",
            &shell.p("confirm.done", &[("email", &contact.email)]),
        ),
        Confirmed::Already => already(&shell),
        Confirmed::Expired => expired(&shell),
        Confirmed::Gone => shell.not_found(),
    }
}
