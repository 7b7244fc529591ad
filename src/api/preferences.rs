//! The contact's preference centre (`/manage/:token`, issue 32): marketing mail, the public
//! topics, a pause of 30, 60 or 90 days. A GET shows the page; only its buttons change anything,
//! each change an event, and a grant made here is kept as proof of consent.

use rocket::form::Form;
use rocket::http::Status;
use rocket::{State, get, post};

use super::guards::{ClientIp, UserAgent};
use super::public_page::{Page, Reader, Shell, button_form};
use super::tracking::{PageForm, PageFormDoc, Visit, visit};
use crate::clock;
use crate::core::confirmations;
use crate::core::contacts as core_contacts;
use crate::core::links::{Link, escape_html};
use crate::db::consent::Proof;
use crate::db::topics::{self, Topic};
use crate::db::{DbError, contacts};
use crate::error::Envelope;
use crate::state::AppState;

documented_routes!(manage_page, manage);

/// The contact's email preferences page.
#[utoipa::path(
    tag = "Pages",
    operation_id = "preferencesPage",
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 500, description = "The page could not be read: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[get("/manage/<token>")]
async fn manage_page(state: &State<AppState>, token: &str, reader: Reader) -> Page {
    let (contact, shell) = match manage_visit(state, token, &reader).await {
        Ok(found) => found,
        Err(page) => return page,
    };
    match public_topics(state, &contact, &shell).await {
        Ok(topics) => manage_view(token, &contact, &shell, &topics, None),
        Err(page) => page,
    }
}

/// The contact a manage link names, with its page's dress; else the page saying the link is
/// not valid.
async fn manage_visit(
    state: &AppState,
    token: &str,
    reader: &Reader,
) -> Result<(contacts::Contact, Shell), Page> {
    match visit(state, token, reader).await? {
        Visit { link: Link::Manage { .. }, contact, shell } => Ok((contact, shell)),
        other => Err(other.shell.not_found()),
    }
}

/// The project's public topics with whether `contact` is subscribed to each; else the page
/// saying something went wrong.
async fn public_topics(
    state: &AppState,
    contact: &contacts::Contact,
    shell: &Shell,
) -> Result<Vec<(Topic, bool)>, Page> {
    let contact = contact.clone();
    state
        .db
        .run(move |conn| {
            let choices = topics::choices(conn, contact.seq)?;
            Ok::<_, DbError>(
                topics::list(conn, &contact.project_id)?
                    .into_iter()
                    .filter(|t| t.public)
                    .map(|t| {
                        let on = crate::core::topics::subscribed(&choices, &t);
                        (t, on)
                    })
                    .collect(),
            )
        })
        .await
        .map_err(|e| {
            tracing::error!("could not read a contact's topics: {e}");
            shell.failed()
        })
}

/// Days a contact may pause marketing mail for from the page.
const PAUSES: [i64; 3] = [30, 60, 90];

pub(super) fn manage_view(
    token: &str,
    contact: &contacts::Contact,
    shell: &Shell,
    topics: &[(Topic, bool)],
    done: Option<&str>,
) -> Page {
    let action = format!("/manage/{token}");
    let t = &shell.texts;
    let vars = [("email", contact.email.as_str()), ("project", shell.look.name.as_str())];
    let mut body = String::new();
    if let Some(done) = done {
        body.push_str(&format!("<p role=\"status\">{}</p>", shell.t(done, &[])));
    }
    body.push_str(
        &shell.p(if contact.subscribed { "manage.subscribed" } else { "manage.not_subscribed" }, &vars),
    );
    let paused = contact.snoozed_until.filter(|until| *until > clock::now_ms());
    if contact.subscribed {
        if !topics.is_empty() {
            body.push_str(&format!("<h2>{}</h2><ul class=\"topics\">", shell.t("manage.topics", &[])));
            for (topic, on) in topics {
                let name = [("topic", topic.name.as_str())];
                let (label, value) = if *on {
                    (t.fill("manage.topic_leave", &name), format!("topic-off:{}", topic.id))
                } else {
                    (t.fill("manage.topic_join", &name), format!("topic-on:{}", topic.id))
                };
                body.push_str(&format!(
                    "<li><strong>{}</strong> <span>({})</span>{}<br>{}</li>",
                    escape_html(&topic.name),
                    shell.t(if *on { "manage.topic_on" } else { "manage.topic_off" }, &[]),
                    topic
                        .description
                        .as_deref()
                        .map(|d| format!("<br><small>{}</small>", escape_html(d)))
                        .unwrap_or_default(),
                    button_form(&action, &label, "secondary", &value)
                ));
            }
            body.push_str("</ul>");
        }
        body.push_str(&format!("<h2>{}</h2>", shell.t("manage.pause_heading", &[])));
        match paused {
            Some(until) => {
                let date = clock::iso(until);
                body.push_str(&shell.p("manage.paused", &[("date", &date[..10])]));
                body.push_str(&button_form(&action, &t.get("manage.resume"), "secondary", "resume"));
            }
            None => {
                for days in PAUSES {
                    let label = t.fill("manage.pause", &[("days", &days.to_string())]);
                    body.push_str(&button_form(&action, &label, "secondary", &format!("snooze:{days}")));
                }
            }
        }
        body.push_str(&format!("<h2>{}</h2>", shell.t("manage.all_heading", &[])));
    }
    body.push_str(&if contact.subscribed {
        button_form(&action, &t.get("manage.unsubscribe_all"), "secondary", "unsubscribe")
    } else {
        button_form(&action, &t.get("manage.subscribe"), "", "subscribe")
    });
    shell.page(Status::Ok, "manage.title", &body)
}

/// Saves the contact's preference from the page's form.
#[utoipa::path(
    tag = "Pages",
    operation_id = "savePreferences",
    request_body(content = PageFormDoc, content_type = "application/x-www-form-urlencoded"),
    params(("token" = String, Path, description = "The signed token of the mailed link")),
    security(()),
    responses((status = 200, description = "The page", content_type = "text/html", body = String), (status = 500, description = "The change could not be saved: a page saying so", content_type = "text/html", body = String), (status = 404, description = "A forged, altered or expired link: a page saying so (or the error envelope when the path itself cannot be read)", content((String = "text/html"), (Envelope = "application/json")))),
)]
#[post("/manage/<token>", data = "<form>")]
async fn manage(
    state: &State<AppState>,
    token: &str,
    client: ClientIp,
    agent: UserAgent,
    reader: Reader,
    form: Option<Form<PageForm<'_>>>,
) -> Page {
    let (contact, shell) = match manage_visit(state, token, &reader).await {
        Ok(found) => found,
        Err(page) => return page,
    };
    let action = form.as_ref().and_then(|f| f.action).unwrap_or_default().to_string();
    let topics = match public_topics(state, &contact, &shell).await {
        Ok(topics) => topics,
        Err(page) => return page,
    };
    let now = clock::now_ms();
    let change = match action.as_str() {
        "subscribe" => Choice::Subscribed(true),
        "unsubscribe" => Choice::Subscribed(false),
        "resume" => Choice::Snooze(None),
        other => match other.split_once(':') {
            Some(("snooze", days)) => match days.parse::<i64>().ok().filter(|d| PAUSES.contains(d)) {
                Some(days) => Choice::Snooze(Some(now + days * 86_400_000)),
                None => Choice::Nothing,
            },
            Some((on @ ("topic-on" | "topic-off"), id)) => match topics.iter().find(|(t, _)| t.id == id) {
                Some((topic, _)) => Choice::Topic(topic.clone(), on == "topic-on"),
                None => Choice::Nothing,
            },
            _ => Choice::Nothing,
        },
    };
    if matches!(change, Choice::Nothing) {
        return manage_view(token, &contact, &shell, &topics, Some("manage.choose"));
    }
    // A grant made here is kept as proof of consent, with who made it.
    let proof = Proof {
        method: "preference_centre".into(),
        ip: client.0.map(|ip| ip.to_string()),
        user_agent: agent.0.map(confirmations::cut_agent),
        ..Proof::default()
    };
    let saved = state
        .db
        .write(move |tx| {
            let contact = match change {
                Choice::Subscribed(subscribed) => {
                    let was = contact.subscribed;
                    core_contacts::set_from_link(tx, contact.clone(), subscribed, None, now)?;
                    if subscribed && !was {
                        confirmations::keep_proof(tx, &contact, None, proof, now)?;
                    }
                    contacts::by_id_anywhere(tx, &contact.id)?.unwrap_or(contact)
                }
                Choice::Snooze(until) => core_contacts::snooze(tx, contact, until, "link", now)?,
                Choice::Topic(topic, on) => {
                    if crate::core::topics::choose(tx, &contact, &[(topic.clone(), on)], "link", now)? && on {
                        confirmations::keep_proof(tx, &contact, Some(&topic), proof, now)?;
                    }
                    contact
                }
                Choice::Nothing => contact,
            };
            Ok::<_, crate::core::Error>(contact)
        })
        .await;
    match saved {
        Ok(contact) => match public_topics(state, &contact, &shell).await {
            Ok(topics) => manage_view(token, &contact, &shell, &topics, Some("manage.saved")),
            Err(page) => page,
        },
        Err(e) => {
            tracing::error!("could not change a preference: {e}");
            shell.failed()
        }
    }
}

/// What a button of the preferences page asks for.
enum Choice {
    Subscribed(bool),
    Snooze(Option<i64>),
    Topic(Topic, bool),
    Nothing,
}
