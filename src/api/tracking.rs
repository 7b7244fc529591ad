//! Opens, clicks, and the public subscription pages (appliance.md section 8). Every link carries
//! a signed token; a forged or altered one gets a 404 page and changes nothing.

use std::io::Cursor;

use rocket::form::Form;
use rocket::http::{ContentType, Header, Status};
use rocket::request::Request;
use rocket::response::{self, Redirect, Responder, Response};
use rocket::{FromForm, State, get, post};

use crate::clock;
use crate::core::contacts as core_contacts;
use crate::core::engagement::{self, Engagement};
use crate::core::links::{self, Link, escape_html};
use crate::db::topics::{self, Topic};
use crate::db::{DbError, contacts, projects};
use crate::error::{ApiError, Envelope};
use crate::state::AppState;

documented_routes!(open, click, unsubscribe_page, unsubscribe, subscribe_page, subscribe);

/// A transparent 1x1 GIF.
const PIXEL: &[u8] = &[
    0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff,
    0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
    0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
];

/// A small HTML page, or a GIF, never cached.
pub enum Page {
    Html(Status, String),
    Gif,
}

impl<'r> Responder<'r, 'static> for Page {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        let mut response = Response::build();
        response.header(Header::new("Cache-Control", "no-store"));
        match self {
            Page::Html(status, body) => {
                response.status(status).header(ContentType::HTML).sized_body(body.len(), Cursor::new(body));
            }
            Page::Gif => {
                response.header(ContentType::GIF).sized_body(PIXEL.len(), Cursor::new(PIXEL));
            }
        }
        response.ok()
    }
}

pub(super) fn page(status: Status, title: &str, body: &str) -> Page {
    Page::Html(
        status,
        format!(
            "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{title}</title><style>body{{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d2430;line-height:1.5}}\
             button{{font:inherit;padding:.5rem 1rem;border-radius:6px;border:1px solid #2f5d8a;background:#2f5d8a;color:#fff;cursor:pointer}}\
             button.secondary{{background:#fff;color:#2f5d8a}}form{{display:inline-block;margin:.25rem .5rem .25rem 0}}</style></head>\
             <body><main><h1>{title}</h1>{body}</main></body></html>",
            title = escape_html(title)
        ),
    )
}

pub(super) fn not_found() -> Page {
    page(
        Status::NotFound,
        "Link not found",
        "<p>This link is not valid. It may have been copied incompletely.</p>",
    )
}

/// The open pixel of a sent email (`.gif` may end the token): records the first open.
#[utoipa::path(
    tag = "Pages",
    operation_id = "trackOpen",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "A transparent 1x1 GIF", content_type = "image/gif", body = Vec<u8>), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/t/o/<token>")]
async fn open(state: &State<AppState>, token: &str) -> Page {
    let token = token.trim_end_matches(".gif");
    let Some(Link::Open { email }) = links::verify(&state.secrets.link, token) else { return not_found() };
    if let Err(e) = record(state, email, Engagement::Open).await {
        tracing::warn!("could not record an open: {e}");
    }
    Page::Gif
}

/// A tracked link of a sent email: records the click and redirects to the link.
#[utoipa::path(
    tag = "Pages",
    operation_id = "trackClick",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 302, description = "To the link", headers(("Location" = String, description = "The link as written in the email"))), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/t/c/<token>")]
async fn click(state: &State<AppState>, token: &str) -> Result<Redirect, Page> {
    let Some(Link::Click { email, url }) = links::verify(&state.secrets.link, token) else {
        return Err(not_found());
    };
    if let Err(e) = record(state, email, Engagement::Click(url.clone())).await {
        tracing::warn!("could not record a click: {e}");
    }
    Ok(Redirect::found(url))
}

/// Records an open or a click (`core::engagement`).
async fn record(state: &AppState, email: String, what: Engagement) -> Result<(), ApiError> {
    Ok(state.db.write(move |tx| engagement::record(tx, &email, what, clock::now_ms())).await?)
}

/// The contact and project name a token of one of the page kinds stands for.
pub(super) async fn contact_of(state: &AppState, token: &str) -> Option<(Link, contacts::Contact, String)> {
    let link = links::verify(&state.secrets.link, token)?;
    let id = match &link {
        Link::Unsubscribe { contact, .. } | Link::Subscribe { contact } | Link::Manage { contact } => {
            contact.clone()
        }
        _ => return None,
    };
    let found = state
        .db
        .run(move |conn| {
            let contact = contacts::by_id_anywhere(conn, &id)?;
            let project = match &contact {
                Some(c) => projects::get(conn, &c.project_id)?.map(|p| p.name),
                None => None,
            };
            Ok::<_, DbError>(contact.zip(project))
        })
        .await
        .ok()??;
    Some((link, found.0, found.1))
}

/// Changes the subscription as a page asks; `credit` is the email an unsubscribe came from.
async fn set(
    state: &AppState,
    contact: contacts::Contact,
    subscribed: bool,
    credit: Option<String>,
) -> Result<(), ApiError> {
    let now = clock::now_ms();
    Ok(state
        .db
        .write(move |tx| core_contacts::set_from_link(tx, contact, subscribed, credit.as_deref(), now))
        .await?)
}

pub(super) fn button_form(action: &str, label: &str, class: &str, value: &str) -> String {
    format!(
        "<form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"action\" value=\"{value}\"><button class=\"{class}\" type=\"submit\">{}</button></form>",
        escape_html(action),
        escape_html(label)
    )
}

/// The unsubscribe page of a marketing email: a button to confirm (mail clients follow links).
#[utoipa::path(
    tag = "Pages",
    operation_id = "unsubscribePage",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/unsubscribe/<token>")]
async fn unsubscribe_page(state: &State<AppState>, token: &str) -> Page {
    let Some((Link::Unsubscribe { email, .. }, contact, project)) = contact_of(state, token).await else {
        return not_found();
    };
    let action = format!("/unsubscribe/{token}");
    // Mail of a campaign to a topic: leaving the topic, or everything.
    if let Some((topic, on)) =
        topic_of(state, email.as_deref(), &contact).await.filter(|_| contact.subscribed)
    {
        let mut body = if on {
            format!(
                "<p>Stop <strong>{}</strong> email from <strong>{}</strong> to <strong>{}</strong>?</p>{}",
                escape_html(&topic.name),
                escape_html(&project),
                escape_html(&contact.email),
                button_form(&action, &format!("Unsubscribe from {}", topic.name), "", "topic")
            )
        } else {
            format!(
                "<p><strong>{}</strong> gets no <strong>{}</strong> email from <strong>{}</strong>.</p>",
                escape_html(&contact.email),
                escape_html(&topic.name),
                escape_html(&project)
            )
        };
        body.push_str(&button_form(&action, "Unsubscribe from everything", "secondary", "unsubscribe"));
        return page(Status::Ok, "Unsubscribe", &body);
    }
    let body = if contact.subscribed {
        format!(
            "<p>Stop email from <strong>{}</strong> to <strong>{}</strong>?</p>{}",
            escape_html(&project),
            escape_html(&contact.email),
            button_form(&action, "Unsubscribe", "", "unsubscribe")
        )
    } else {
        format!(
            "<p><strong>{}</strong> is not subscribed to <strong>{}</strong>.</p>",
            escape_html(&contact.email),
            escape_html(&project)
        )
    };
    page(Status::Ok, "Unsubscribe", &body)
}

/// A form post from the manage page.
#[derive(FromForm, Default)]
pub(super) struct PageForm<'r> {
    pub(super) action: Option<&'r str>,
}

/// The preferences page's form, as the OpenAPI document describes it.
#[derive(utoipa::ToSchema)]
#[schema(as = PreferencesForm)]
#[allow(dead_code)]
pub(super) struct PageFormDoc {
    /// The preferences page: `subscribe`, `unsubscribe`, `snooze:<30|60|90>`, `resume`,
    /// `topic-on:<id>` or `topic-off:<id>` (a public topic); anything else shows the page again.
    /// The unsubscribe page: `unsubscribe` (everything) or `topic` (the mail's topic only).
    action: Option<String>,
}

/// The page's buttons, and RFC 8058's one-click POST (`List-Unsubscribe=One-Click`): the signed
/// token is the permission. Mail of a campaign to a topic leaves the topic (the one-click, and
/// the page's `action=topic`) or everything (`action=unsubscribe`); other mail, everything.
#[utoipa::path(
    tag = "Pages",
    operation_id = "unsubscribe",
    request_body(content = PageFormDoc, content_type = "application/x-www-form-urlencoded"),
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 500, description = "The change could not be saved: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[post("/unsubscribe/<token>", data = "<form>")]
async fn unsubscribe(state: &State<AppState>, token: &str, form: Option<Form<PageForm<'_>>>) -> Page {
    let Some((Link::Unsubscribe { email, .. }, contact, project)) = contact_of(state, token).await else {
        return not_found();
    };
    let everything = form.as_ref().and_then(|f| f.action) == Some("unsubscribe");
    if !everything && let Some((topic, _)) = topic_of(state, email.as_deref(), &contact).await {
        return leave_topic(state, contact, &project, topic, email).await;
    }
    // The email the link came in is credited with the unsubscribe (once): its campaign counts it.
    flip(state, contact, &project, false, email).await
}

/// The topic of the campaign `email` came for, and whether `contact` is subscribed to it now.
async fn topic_of(
    state: &AppState,
    email: Option<&str>,
    contact: &contacts::Contact,
) -> Option<(Topic, bool)> {
    let email = email?.to_string();
    let contact = contact.clone();
    state
        .db
        .run(move |conn| {
            let Some(topic) = topics::of_email(conn, &email)?.filter(|t| t.project_id == contact.project_id)
            else {
                return Ok::<_, DbError>(None);
            };
            let choices = topics::choices(conn, contact.seq)?;
            let on = crate::core::topics::subscribed(&choices, &topic);
            Ok(Some((topic, on)))
        })
        .await
        .ok()?
}

/// Leaves a topic from the unsubscribe page or its one-click POST, and says so.
async fn leave_topic(
    state: &AppState,
    contact: contacts::Contact,
    project: &str,
    topic: Topic,
    credit: Option<String>,
) -> Page {
    let (email, name) = (contact.email.clone(), topic.name.clone());
    let now = clock::now_ms();
    let left = state
        .db
        .write(move |tx| crate::core::topics::leave_from_link(tx, &contact, &topic, credit.as_deref(), now))
        .await;
    if let Err(e) = left {
        tracing::error!("could not leave a topic from a page: {e}");
        return page(
            Status::InternalServerError,
            "Something went wrong",
            "<p>Please try again in a moment.</p>",
        );
    }
    page(
        Status::Ok,
        "Unsubscribed",
        &format!(
            "<p><strong>{}</strong> will get no more <strong>{}</strong> email from <strong>{}</strong>.</p>",
            escape_html(&email),
            escape_html(&name),
            escape_html(project)
        ),
    )
}

/// The page to subscribe again, linked from the unsubscribe page.
#[utoipa::path(
    tag = "Pages",
    operation_id = "subscribePage",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/subscribe/<token>")]
async fn subscribe_page(state: &State<AppState>, token: &str) -> Page {
    let Some((Link::Subscribe { .. }, contact, project)) = contact_of(state, token).await else {
        return not_found();
    };
    let action = format!("/subscribe/{token}");
    let body = format!(
        "<p>Get email from <strong>{}</strong> at <strong>{}</strong>?</p>{}",
        escape_html(&project),
        escape_html(&contact.email),
        button_form(&action, "Subscribe", "", "subscribe")
    );
    page(Status::Ok, "Subscribe", &body)
}

/// Subscribes the contact again.
#[utoipa::path(
    tag = "Pages",
    operation_id = "subscribe",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 500, description = "The change could not be saved: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[post("/subscribe/<token>")]
async fn subscribe(state: &State<AppState>, token: &str) -> Page {
    let Some((Link::Subscribe { .. }, contact, project)) = contact_of(state, token).await else {
        return not_found();
    };
    flip(state, contact, &project, true, None).await
}

/// Subscribes or unsubscribes from a page's button and says what happened.
async fn flip(
    state: &AppState,
    contact: contacts::Contact,
    project: &str,
    subscribed: bool,
    credit: Option<String>,
) -> Page {
    let email = contact.email.clone();
    if let Err(e) = set(state, contact, subscribed, credit).await {
        tracing::error!("could not change a subscription from a page: {e}");
        return page(
            Status::InternalServerError,
            "Something went wrong",
            "<p>Please try again in a moment.</p>",
        );
    }
    let (title, what) = if subscribed {
        ("Subscribed", "is subscribed to")
    } else {
        ("Unsubscribed", "will get no more email from")
    };
    page(
        Status::Ok,
        title,
        &format!(
            "<p><strong>{}</strong> {what} <strong>{}</strong>.</p>",
            escape_html(&email),
            escape_html(project)
        ),
    )
}
