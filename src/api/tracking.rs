//! Opens, clicks, and the public subscription pages (appliance.md section 8). Every link carries
//! a signed token; a forged or altered one gets a 404 page and changes nothing.

use rocket::form::Form;
use rocket::http::Status;
use rocket::response::Redirect;
use rocket::{FromForm, State, get, post};

use super::guards::{ClientIp, UserAgent};
use super::public_page::{Page, Reader, Shell, button_form};

use crate::clock;
use crate::core::contacts as core_contacts;
use crate::core::engagement::{self, Engagement};
use crate::core::i18n::locale_of;
use crate::core::links::{self, Link};
use crate::db::topics::{self, Topic};
use crate::db::{DbError, contacts};
use crate::error::{ApiError, Envelope};
use crate::state::AppState;

documented_routes!(open, click, unsubscribe_page, unsubscribe, subscribe_page, subscribe);

/// The open pixel of a sent email (`.gif` may end the token): records the first open.
#[utoipa::path(
    tag = "Pages",
    operation_id = "trackOpen",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "A transparent 1x1 GIF", content_type = "image/gif", body = Vec<u8>), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/t/o/<token>")]
async fn open(state: &State<AppState>, token: &str, reader: Reader, agent: UserAgent, ip: ClientIp) -> Page {
    opened(state, token, reader, (agent, ip, false)).await
}

/// The routes that answer `HEAD` on the tracking links. Rocket would answer a `HEAD` with the
/// `GET` route, but as a `GET`: a link checker's `HEAD` would count as a person's visit. Under
/// their own routes they are recorded as a machine's (HTTP has every `GET` answer `HEAD`, so the
/// API document does not list them apart).
pub fn head_routes() -> Vec<rocket::Route> {
    rocket::routes![open_head, click_head]
}

#[rocket::head("/t/o/<token>")]
async fn open_head(
    state: &State<AppState>,
    token: &str,
    reader: Reader,
    agent: UserAgent,
    ip: ClientIp,
) -> Page {
    opened(state, token, reader, (agent, ip, true)).await
}

#[rocket::head("/t/c/<token>")]
async fn click_head(
    state: &State<AppState>,
    token: &str,
    reader: Reader,
    agent: UserAgent,
    ip: ClientIp,
) -> Result<Redirect, Page> {
    clicked(state, token, reader, (agent, ip, true)).await
}

/// Who asked: its `User-Agent`, its address, and whether it asked with `HEAD` (the headers only).
type Asker = (UserAgent, ClientIp, bool);

async fn opened(state: &AppState, token: &str, reader: Reader, agent: Asker) -> Page {
    let token = token.trim_end_matches(".gif");
    let Some(Link::Open { email }) = links::verify(&state.secrets.link, token) else {
        return Shell::plain(&reader).not_found();
    };
    if let Err(e) = record(state, email, Engagement::Open, agent).await {
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
async fn click(
    state: &State<AppState>,
    token: &str,
    reader: Reader,
    agent: UserAgent,
    ip: ClientIp,
) -> Result<Redirect, Page> {
    clicked(state, token, reader, (agent, ip, false)).await
}

async fn clicked(state: &AppState, token: &str, reader: Reader, agent: Asker) -> Result<Redirect, Page> {
    let Some(Link::Click { email, url }) = links::verify(&state.secrets.link, token) else {
        return Err(Shell::plain(&reader).not_found());
    };
    if let Err(e) = record(state, email, Engagement::Click(url.clone()), agent).await {
        tracing::warn!("could not record a click: {e}");
    }
    Ok(Redirect::found(url))
}

/// Records an open or a click (`core::engagement`).
async fn record(state: &AppState, email: String, what: Engagement, agent: Asker) -> Result<(), ApiError> {
    let (UserAgent(agent), ClientIp(ip), head) = agent;
    // The shared configuration, not a copy of its list, on every pixel fetch and click.
    let config = state.config.clone();
    Ok(state
        .db
        .write(move |tx| {
            let client = engagement::Client {
                user_agent: agent.as_deref(),
                head,
                ip,
                scanner_networks: &config.tracking.scanner_networks,
            };
            engagement::record(tx, &email, what, client, clock::now_ms())
        })
        .await?)
}

/// A contact's page: what its link says, the contact, and the page's dress in the contact's
/// language (its `locale`, else the reader's).
pub(super) struct Visit {
    pub link: Link,
    pub contact: contacts::Contact,
    pub shell: Shell,
}

/// The visit a token of one of the page kinds stands for, or the page saying the link is not
/// valid.
pub(super) async fn visit(state: &AppState, token: &str, reader: &Reader) -> Result<Visit, Page> {
    let Some(link) = links::verify(&state.secrets.link, token) else {
        return Err(Shell::plain(reader).not_found());
    };
    let id = match &link {
        Link::Unsubscribe { contact, .. } | Link::Subscribe { contact } | Link::Manage { contact } => {
            contact.clone()
        }
        _ => return Err(Shell::plain(reader).not_found()),
    };
    let found = state
        .db
        .run(move |conn| {
            let Some(contact) = contacts::by_id_anywhere(conn, &id)? else { return Ok(None) };
            let look = crate::core::branding::look(conn, &contact.project_id)?;
            Ok::<_, crate::core::Error>(Some((contact, look)))
        })
        .await;
    match found {
        Ok(Some((contact, look))) => {
            let shell = Shell::new(look, reader.wishes(locale_of(&contact.data)));
            Ok(Visit { link, contact, shell })
        }
        _ => Err(Shell::plain(reader).not_found()),
    }
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

/// The unsubscribe page of a marketing email: a button to confirm (mail clients follow links).
#[utoipa::path(
    tag = "Pages",
    operation_id = "unsubscribePage",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/unsubscribe/<token>")]
async fn unsubscribe_page(state: &State<AppState>, token: &str, reader: Reader) -> Page {
    let visit = match visit(state, token, &reader).await {
        Ok(visit) => visit,
        Err(page) => return page,
    };
    let Visit { link: Link::Unsubscribe { email, .. }, contact, shell } = visit else {
        return visit.shell.not_found();
    };
    let action = format!("/unsubscribe/{token}");
    // Mail of a campaign to a topic: leaving the topic, or everything.
    let topic = match contact.subscribed {
        true => topic_of(state, email.as_deref(), &contact).await,
        false => None,
    };
    unsubscribe_view(&shell, &action, &contact, topic.as_ref().map(|(t, on)| (t, *on)))
}

/// The unsubscribe page of `contact` (also the dashboard's preview): the mail's topic to leave,
/// or everything.
pub(super) fn unsubscribe_view(
    shell: &Shell,
    action: &str,
    contact: &contacts::Contact,
    topic: Option<(&Topic, bool)>,
) -> Page {
    let (project, address) = (shell.look.name.as_str(), contact.email.as_str());
    if let Some((topic, on)) = topic {
        let vars = [("topic", topic.name.as_str()), ("project", project), ("email", address)];
        let mut body = if on {
            let leave = shell.texts.fill("unsubscribe.topic_button", &vars);
            shell.p("unsubscribe.topic_ask", &vars) + &button_form(action, &leave, "", "topic")
        } else {
            shell.p("unsubscribe.topic_off", &vars)
        };
        let everything = shell.texts.get("unsubscribe.everything_button");
        body.push_str(&button_form(action, &everything, "secondary", "unsubscribe"));
        return shell.page(Status::Ok, "unsubscribe.title", &body);
    }
    let vars = [("project", project), ("email", address)];
    let body = if contact.subscribed {
        let label = shell.texts.get("unsubscribe.button");
        shell.p("unsubscribe.ask", &vars) + &button_form(action, &label, "", "unsubscribe")
    } else {
        shell.p("unsubscribe.not_subscribed", &vars)
    };
    shell.page(Status::Ok, "unsubscribe.title", &body)
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
async fn unsubscribe(
    state: &State<AppState>,
    token: &str,
    reader: Reader,
    form: Option<Form<PageForm<'_>>>,
) -> Page {
    let visit = match visit(state, token, &reader).await {
        Ok(visit) => visit,
        Err(page) => return page,
    };
    let Visit { link: Link::Unsubscribe { email, .. }, contact, shell } = visit else {
        return visit.shell.not_found();
    };
    let everything = form.as_ref().and_then(|f| f.action) == Some("unsubscribe");
    if !everything && let Some((topic, _)) = topic_of(state, email.as_deref(), &contact).await {
        return leave_topic(state, contact, &shell, topic, email).await;
    }
    // The email the link came in is credited with the unsubscribe (once): its campaign counts it.
    flip(state, contact, &shell, false, email).await
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
    shell: &Shell,
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
        return shell.failed();
    }
    let vars = [("email", email.as_str()), ("topic", name.as_str()), ("project", shell.look.name.as_str())];
    shell.page(Status::Ok, "unsubscribe.done_title", &shell.p("unsubscribe.topic_done", &vars))
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
async fn subscribe_page(state: &State<AppState>, token: &str, reader: Reader) -> Page {
    let visit = match visit(state, token, &reader).await {
        Ok(visit) => visit,
        Err(page) => return page,
    };
    let Visit { link: Link::Subscribe { .. }, contact, shell } = visit else {
        return visit.shell.not_found();
    };
    let action = format!("/subscribe/{token}");
    let vars = [("project", shell.look.name.as_str()), ("email", contact.email.as_str())];
    let label = shell.texts.get("subscribe.button");
    let body = shell.p("subscribe.ask", &vars) + &button_form(&action, &label, "", "subscribe");
    shell.page(Status::Ok, "subscribe.title", &body)
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
async fn subscribe(state: &State<AppState>, token: &str, reader: Reader) -> Page {
    let visit = match visit(state, token, &reader).await {
        Ok(visit) => visit,
        Err(page) => return page,
    };
    let Visit { link: Link::Subscribe { .. }, contact, shell } = visit else {
        return visit.shell.not_found();
    };
    flip(state, contact, &shell, true, None).await
}

/// Subscribes or unsubscribes from a page's button and says what happened.
async fn flip(
    state: &AppState,
    contact: contacts::Contact,
    shell: &Shell,
    subscribed: bool,
    credit: Option<String>,
) -> Page {
    let email = contact.email.clone();
    if let Err(e) = set(state, contact, subscribed, credit).await {
        tracing::error!("could not change a subscription from a page: {e}");
        return shell.failed();
    }
    let vars = [("email", email.as_str()), ("project", shell.look.name.as_str())];
    if subscribed {
        shell.page(Status::Ok, "subscribe.done_title", &shell.p("subscribe.done", &vars))
    } else {
        shell.page(Status::Ok, "unsubscribe.done_title", &shell.p("unsubscribe.done", &vars))
    }
}
