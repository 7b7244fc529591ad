//! Subscription topics (issue 32): what a project's marketing mail is about, each subscribed to
//! or not by each contact. A contact that made no choice for a topic has the topic's
//! `defaultOptIn`. Marketing mail of a campaign that targets a topic goes only to contacts
//! subscribed to the topic and to marketing (`subscribed`): leaving marketing leaves every
//! topic, and leaving a topic leaves only it.
//!
//! A choice that changes a contact's state emits `contact.topic_subscribed` or
//! `contact.topic_unsubscribed` with `{topicId, topic, source}`, so webhooks and workflows hear
//! of it like of a subscription change.

use std::collections::BTreeMap;

use serde_json::json;

use super::error::{Error, FieldError, Result, on_duplicate};
use super::events;
use super::ids::TopicId;
use super::workflows::{check_name, check_text};
use crate::db::Tx;
use crate::db::contacts::Contact;
use crate::db::refs;
use crate::db::topics::{self as rows, Topic};

/// Most topics of one project.
pub const MAX_TOPICS: u64 = 50;
/// `contact.topic_subscribed`.
pub const TOPIC_SUBSCRIBED: &str = "contact.topic_subscribed";
/// `contact.topic_unsubscribed`.
pub const TOPIC_UNSUBSCRIBED: &str = "contact.topic_unsubscribed";

/// A topic's settings as a request gives them; `None` keeps a value (or takes the default).
#[derive(Debug, Default, Clone)]
pub struct Settings {
    pub name: Option<String>,
    /// Empty clears it.
    pub description: Option<String>,
    pub default_opt_in: Option<bool>,
    pub public: Option<bool>,
}

/// Topic `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &str) -> Result<Topic> {
    rows::get(conn, project, id)?.ok_or_else(|| TopicId::missing(id))
}

/// Adds a topic to `project` (at most [`MAX_TOPICS`]; 409 for a name it already has).
pub fn create(tx: &Tx, project: &str, settings: Settings, now: i64) -> Result<Topic> {
    let Some(name) = settings.name.as_deref() else {
        return Err(Error::invalid("name", "required", "name is required"));
    };
    if rows::count(tx, project)? >= MAX_TOPICS {
        return Err(Error::malformed(format!("a project has at most {MAX_TOPICS} topics")));
    }
    let topic = Topic {
        id: TopicId::fresh().into(),
        project_id: project.to_string(),
        name: check_name(name, "name")?,
        description: check_text(settings.description, "description")?,
        default_opt_in: settings.default_opt_in.unwrap_or(false),
        public: settings.public.unwrap_or(true),
        created_at: now,
        updated_at: now,
    };
    rows::insert(tx, &topic).map_err(taken)?;
    Ok(topic)
}

/// Changes topic `id` of `project`.
pub fn update(tx: &Tx, project: &str, id: &str, settings: Settings, now: i64) -> Result<Topic> {
    let mut topic = find(tx, project, id)?;
    if let Some(name) = settings.name.as_deref() {
        topic.name = check_name(name, "name")?;
    }
    if settings.description.is_some() {
        topic.description = check_text(settings.description, "description")?;
    }
    if let Some(default_opt_in) = settings.default_opt_in {
        topic.default_opt_in = default_opt_in;
    }
    if let Some(public) = settings.public {
        topic.public = public;
    }
    topic.updated_at = now;
    rows::update(tx, &topic).map_err(taken)?;
    Ok(topic)
}

/// Deletes topic `id` of `project` with its contacts' choices; campaigns that targeted it
/// target no topic from then on. 409 while a segment's or a workflow's condition names it, or
/// a SCHEDULED or SENDING campaign targets it or names it, or a form offers it.
pub fn remove(tx: &Tx, project: &str, id: &str) -> Result<()> {
    let topic = find(tx, project, id)?;
    let in_use = |what: &str, users: Vec<(String, String)>| {
        let (_, name) = users.first().cloned().unwrap_or_default();
        let listed: Vec<_> = users.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect();
        Error::Conflict {
            message: format!("The {what} {name:?} uses this topic; change it first"),
            details: Some(json!({ format!("{what}s"): listed })),
        }
    };
    if let Some(campaign) = refs::active_campaign(tx, project, "topic", &topic.id)? {
        return Err(in_use("campaign", vec![campaign]));
    }
    let segments = refs::segments(tx, project, "topic", &topic.id)?;
    if !segments.is_empty() {
        return Err(in_use("segment", segments));
    }
    let workflows = refs::workflows(tx, project, "topic", &topic.id)?;
    if !workflows.is_empty() {
        return Err(in_use("workflow", workflows.into_iter().map(|(id, name, _)| (id, name)).collect()));
    }
    let forms: Vec<(String, String)> = crate::db::forms::list(tx, project)?
        .into_iter()
        .filter(|f| f.topics.contains(&topic.id))
        .map(|f| (f.id, f.name))
        .collect();
    if !forms.is_empty() {
        return Err(in_use("form", forms));
    }
    rows::delete(tx, &topic.id)?;
    Ok(())
}

fn taken(e: crate::db::DbError) -> Error {
    on_duplicate(e, "This project already has a topic of that name")
}

/// Whether `contact` is subscribed to `topic`: its own choice, else the topic's default.
pub fn subscribed(choices: &[(String, bool)], topic: &Topic) -> bool {
    choices.iter().find(|(id, _)| *id == topic.id).map_or(topic.default_opt_in, |(_, s)| *s)
}

/// Every topic of the contact's project with whether the contact is subscribed to it, by id.
pub fn states(conn: &Tx, contact: &Contact) -> Result<BTreeMap<String, bool>> {
    let choices = rows::choices(conn, contact.seq)?;
    Ok(rows::list(conn, &contact.project_id)?
        .iter()
        .map(|t| (t.id.clone(), subscribed(&choices, t)))
        .collect())
}

/// Checks a request's `topics` (`{topicId: bool}`) against the project's topics: each id must
/// name one (422 naming `topics.<id>` otherwise). More entries than a project may have topics is
/// refused before any is looked up, so a request cannot make the writer read, or the answer list,
/// thousands of ids.
pub fn check_choices(conn: &Tx, project: &str, asked: &BTreeMap<String, bool>) -> Result<Vec<(Topic, bool)>> {
    if asked.len() as u64 > MAX_TOPICS {
        return Err(Error::invalid(
            "topics",
            "too_big",
            format!("topics names at most {MAX_TOPICS} topics, the most a project has"),
        ));
    }
    let mut out = Vec::with_capacity(asked.len());
    let mut errors = Vec::new();
    for (id, subscribed) in asked {
        match rows::get(conn, project, id)? {
            Some(topic) => out.push((topic, *subscribed)),
            None => errors.push(
                FieldError::new(format!("topics.{id}"), "not_found", "no topic of this project has this id")
                    .received(json!(id)),
            ),
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(Error::Invalid(errors)) }
}

/// Records `contact`'s choices, each emitting its event when it changes the contact's state
/// (`source`: `api`, `link`, `form`, ...). Returns whether any did.
pub fn choose(tx: &Tx, contact: &Contact, chosen: &[(Topic, bool)], source: &str, now: i64) -> Result<bool> {
    let choices = rows::choices(tx, contact.seq)?;
    let mut changed = false;
    for (topic, want) in chosen {
        let had_choice = choices.iter().any(|(id, _)| *id == topic.id);
        let before = subscribed(&choices, topic);
        if before == *want && had_choice {
            continue;
        }
        rows::choose(tx, &topic.id, contact.seq, *want, now)?;
        if before != *want {
            changed = true;
            let name = if *want { TOPIC_SUBSCRIBED } else { TOPIC_UNSUBSCRIBED };
            let data = json!({ "topicId": topic.id, "topic": topic.name, "source": source });
            events::emit(tx, &contact.project_id, Some(&contact.id), name, &data, now)?;
        }
    }
    Ok(changed)
}

/// Leaves `topic` from a mailed link (source `link`); a change is credited, once, to the email
/// the link came in (`credit`): its campaign counts the unsubscribe.
pub fn leave_from_link(
    tx: &Tx,
    contact: &Contact,
    topic: &Topic,
    credit: Option<&str>,
    now: i64,
) -> Result<()> {
    let changed = choose(tx, contact, &[(topic.clone(), false)], "link", now)?;
    if let Some(email) = credit.filter(|_| changed) {
        crate::db::emails::credit_unsubscribe(tx, email, now)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_overrides_the_default_and_no_choice_takes_it() {
        let topic = |id: &str, default_opt_in| Topic { id: id.into(), default_opt_in, ..Topic::default() };
        let choices = vec![("a".to_string(), false), ("b".to_string(), true)];
        assert!(!subscribed(&choices, &topic("a", true)), "an opt-out beats a default opt-in");
        assert!(subscribed(&choices, &topic("b", false)), "an opt-in beats a default opt-out");
        assert!(subscribed(&choices, &topic("c", true)));
        assert!(!subscribed(&choices, &topic("d", false)));
    }
}
