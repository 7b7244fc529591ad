//! Campaigns: checking their content and audience, their references, the state machine of
//! appliance.md §11, and expansion (the audience turned into email rows, batch by batch).
//!
//! Expansion visits the project's contacts in `seq` order, [`EXPAND_BATCH`] per transaction, and
//! inserts one QUEUED email per matching contact with the campaign's new cursor in the same
//! transaction. The rows are unique on (campaign, contact), so a batch run again after a crash
//! adds nothing; the cursor means it is not even run again. The delivery worker drains the rows
//! behind transactional mail; the counters and the move to SENT are kept by triggers (V7).

use crate::core::outbound::{self, Draft};
use crate::core::vocabulary::{CampaignStatus, EmailKind};
use crate::db::Tx;
use serde_json::{Value, json};

use super::compose;
use super::conditions::resolve::resolve;
use super::conditions::{Condition, References, canonical};
use super::contacts::parse_email;
use super::domains::require_verified_sender;
use super::formats;
use crate::clock;
use crate::core::error::{Error, FieldError, Result};
use crate::db::campaigns::{self, Campaign};
use crate::db::refs::{self, Owner};
use crate::db::{audience, segments, templates, topics};

/// Contacts visited per expansion transaction.
pub const EXPAND_BATCH: usize = 2000;
const AUDIENCES: &[&str] = &["ALL", "SEGMENT", "FILTERED"];

/// A campaign's content and audience as a client gives them (`POST /campaigns`, or what
/// [`merge`] makes of `PUT /campaigns/:id`'s changes), each value as sent; [`check_content`]
/// checks them as a whole.
#[derive(Debug, Default)]
pub struct Fields {
    pub name: Option<String>,
    pub description: Option<String>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<String>,
    pub from_name: Option<String>,
    pub reply_to: Option<String>,
    pub kind: Option<String>,
    pub audience_type: Option<String>,
    pub segment_id: Option<String>,
    pub audience_condition: Option<Value>,
    pub template_id: Option<String>,
    pub topic_id: Option<String>,
    pub public: Option<bool>,
    pub archive_data: Option<Value>,
    /// What `body` is written in (`html` when left out).
    pub format: Option<String>,
    /// Track clicks on its links (true when left out).
    pub track_links: Option<bool>,
}

/// Changes to a campaign's content and audience: `None` keeps a value, `Some(None)` clears it.
#[derive(Debug, Default)]
pub struct Changes {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub subject: Option<String>,
    pub body: Option<String>,
    pub from: Option<String>,
    pub from_name: Option<Option<String>>,
    pub reply_to: Option<Option<String>>,
    pub kind: Option<String>,
    pub audience_type: Option<String>,
    pub segment_id: Option<Option<String>>,
    pub audience_condition: Option<Option<Value>>,
    pub template_id: Option<Option<String>>,
    pub topic_id: Option<Option<String>>,
    pub public: Option<bool>,
    pub archive_data: Option<Option<Value>>,
    pub format: Option<String>,
    pub track_links: Option<bool>,
}

impl Changes {
    /// Whether the changes touch only the campaign's place in the archive (`public`,
    /// `archiveData`), which may change in any state.
    pub fn only_publication(&self) -> bool {
        let Changes {
            name,
            description,
            subject,
            body,
            from,
            from_name,
            reply_to,
            kind,
            audience_type,
            segment_id,
            audience_condition,
            template_id,
            topic_id,
            public,
            archive_data,
            format,
            track_links,
        } = self;
        (public.is_some() || archive_data.is_some())
            && name.is_none()
            && description.is_none()
            && subject.is_none()
            && body.is_none()
            && from.is_none()
            && from_name.is_none()
            && reply_to.is_none()
            && kind.is_none()
            && audience_type.is_none()
            && segment_id.is_none()
            && audience_condition.is_none()
            && template_id.is_none()
            && topic_id.is_none()
            && format.is_none()
            && track_links.is_none()
    }

    /// The campaign's place in the archive with these changes over `current`'s, checked.
    pub fn publication(self, current: &Campaign) -> Result<(bool, Option<String>)> {
        let data = match self.archive_data {
            None => current.archive_data.clone(),
            Some(given) => check_archive_data(given)?,
        };
        Ok((self.public.unwrap_or(current.public), data))
    }
}

/// What an archived copy is rendered with: a JSON object of at most [`data::MAX_DATA_BYTES`]
/// (422 on `archiveData` otherwise), serialized; `None` for null.
///
/// [`data::MAX_DATA_BYTES`]: super::data::MAX_DATA_BYTES
pub fn check_archive_data(value: Option<Value>) -> Result<Option<String>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => {
            let text = Value::Object(map).to_string();
            if text.len() > super::data::MAX_DATA_BYTES {
                return Err(Error::invalid("archiveData", "too_big", "archiveData is at most 64 KiB"));
            }
            Ok(Some(text))
        }
        Some(other) => Err(Error::Invalid(vec![
            FieldError::new("archiveData", "invalid_type", "archiveData is an object of template variables")
                .received(json!(super::data::type_name(&other))),
        ])),
    }
}

/// A campaign's content and audience with `changes` over it: what is left out stays, what is
/// null is cleared. The result is checked as a whole, like a new campaign's.
pub fn merge(current: &Campaign, changes: Changes) -> Fields {
    let kept = |change: Option<Option<String>>, now: &Option<String>| match change {
        None => now.clone(),
        Some(given) => given,
    };
    Fields {
        name: changes.name.or_else(|| Some(current.name.clone())),
        description: kept(changes.description, &current.description),
        subject: changes.subject.or_else(|| Some(current.subject.clone())),
        // What the author wrote: the source of a compiled body.
        body: changes.body.or_else(|| Some(current.source.clone().unwrap_or_else(|| current.body.clone()))),
        from: changes.from.or_else(|| Some(current.from_email.clone())),
        from_name: kept(changes.from_name, &current.from_name),
        reply_to: kept(changes.reply_to, &current.reply_to),
        kind: changes.kind.or_else(|| Some(current.kind.clone())),
        audience_type: changes.audience_type.or_else(|| Some(current.audience_type.clone())),
        segment_id: kept(changes.segment_id, &current.segment_id),
        audience_condition: match changes.audience_condition {
            None => current.audience_condition.as_deref().and_then(|c| serde_json::from_str(c).ok()),
            Some(given) => given,
        },
        template_id: kept(changes.template_id, &current.template_id),
        topic_id: kept(changes.topic_id, &current.topic_id),
        public: changes.public.or(Some(current.public)),
        track_links: changes.track_links.or(Some(current.track_links)),
        archive_data: match changes.archive_data {
            None => current.archive_data.as_deref().and_then(|d| serde_json::from_str(d).ok()),
            Some(given) => given,
        },
        format: changes.format.or_else(|| Some(current.format.clone())),
    }
}

fn required(field: &str) -> Error {
    Error::invalid(field, "required", format!("{field} is required"))
}

/// Checks the content of a campaign (CPU work: the templates are parsed) and fills `c` with it.
/// What needs the database (sender domain, segment, condition references, template) is
/// [`check_references`]'s.
pub fn check_content(c: &mut Campaign, f: Fields) -> Result<Option<Condition>> {
    let name = f.name.ok_or_else(|| required("name"))?.trim().to_string();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(Error::invalid("name", "invalid_string", "name must be 1 to 200 characters"));
    }
    let subject = f.subject.ok_or_else(|| required("subject"))?;
    compose::check_subject(&subject, "subject")?;
    let body = f.body.ok_or_else(|| required("body"))?;
    let content = formats::compile_named(f.format.as_deref(), &body, "body")?;
    let from = parse_email(f.from.as_deref().ok_or_else(|| required("from"))?, "from")?;
    let audience_type = f.audience_type.ok_or_else(|| required("audienceType"))?;
    if !AUDIENCES.contains(&audience_type.as_str()) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                "audienceType",
                "invalid_enum_value",
                "audienceType must be ALL, SEGMENT or FILTERED",
            )
            .received(json!(audience_type)),
        ]));
    }
    let condition = match audience_type.as_str() {
        "FILTERED" => {
            let value =
                f.audience_condition.filter(|v| !v.is_null()).ok_or_else(|| required("audienceCondition"))?;
            let parsed = Condition::parse(&value, "audienceCondition")?;
            c.audience_condition = Some(canonical(&value).to_string());
            Some(parsed)
        }
        _ => {
            c.audience_condition = None;
            None
        }
    };
    c.segment_id = match audience_type.as_str() {
        "SEGMENT" => {
            Some(f.segment_id.filter(|s| !s.trim().is_empty()).ok_or_else(|| required("segmentId"))?)
        }
        _ => None,
    };
    c.name = name;
    c.description = f.description.map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
    if c.description.as_ref().is_some_and(|d| d.chars().count() > 500) {
        return Err(Error::invalid("description", "too_big", "description is at most 500 characters"));
    }
    c.subject = subject;
    c.body = content.html;
    c.format = content.format.as_str().into();
    c.source = content.source;
    c.from_email = from;
    c.from_name =
        f.from_name.map(|n| compose::check_name(&n, "fromName")).transpose()?.filter(|n| !n.is_empty());
    c.reply_to = match f.reply_to.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(reply) => Some(parse_email(reply, "replyTo")?),
    };
    c.kind = compose::check_type(f.kind.as_deref(), "type", EmailKind::Marketing.as_str())?;
    c.audience_type = audience_type;
    c.template_id = f.template_id.filter(|t| !t.trim().is_empty());
    c.topic_id = f.topic_id.filter(|t| !t.trim().is_empty());
    c.public = f.public.unwrap_or(false);
    c.track_links = f.track_links.unwrap_or(true);
    c.archive_data = check_archive_data(f.archive_data)?;
    if c.topic_id.is_some() && c.kind != EmailKind::Marketing {
        return Err(Error::invalid(
            "topicId",
            "invalid_value",
            "only MARKETING campaigns go to a topic's subscribers",
        ));
    }
    Ok(condition)
}

/// The database side of the checks: a verified sender domain (403), a segment and template of
/// this project (422), a condition whose segments exist (422). Stores what the campaign refers
/// to in the registry.
pub fn check_references(conn: &Tx, c: &Campaign, condition: Option<Condition>) -> Result<()> {
    require_verified_sender(conn, &c.project_id, &c.from_email)?;
    let mut found = References::default();
    if let Some(mut condition) = condition {
        resolve(conn, &c.project_id, &mut condition, None, "audienceCondition")?;
        found = condition.references();
    }
    if let Some(segment) = &c.segment_id {
        if segments::get(conn, &c.project_id, segment)?.is_none() {
            return Err(Error::Invalid(vec![
                FieldError::new("segmentId", "not_found", "no segment of this project has this id")
                    .received(json!(segment)),
            ]));
        }
        found.segments.push(segment.clone());
    }
    if let Some(template) = &c.template_id
        && templates::get(conn, &c.project_id, template)?.is_none()
    {
        return Err(Error::Invalid(vec![
            FieldError::new("templateId", "not_found", "no template of this project has this id")
                .received(json!(template)),
        ]));
    }
    let domain = c.from_email.rsplit_once('@').map(|(_, d)| d.to_string()).unwrap_or_default();
    if let Some(topic) = &c.topic_id {
        if topics::get(conn, &c.project_id, topic)?.is_none() {
            return Err(Error::Invalid(vec![
                FieldError::new("topicId", "not_found", "no topic of this project has this id")
                    .received(json!(topic)),
            ]));
        }
        found.topics.push(topic.clone());
    }
    let mut list = found.pairs();
    list.extend(c.template_id.iter().map(|t| ("template", t.as_str())));
    list.push(("domain", domain.as_str()));
    refs::set(conn, Owner::Campaign, &c.id, &c.project_id, &list)?;
    Ok(())
}

/// Gives `copy` the references of `original` (a duplicate names what its original names).
pub fn copy_references(conn: &Tx, original: &Campaign, copy: &Campaign) -> Result<()> {
    let found = refs::of(conn, Owner::Campaign, &original.id)?;
    let list: Vec<(&str, &str)> = found.iter().map(|(k, n)| (k.as_str(), n.as_str())).collect();
    refs::set(conn, Owner::Campaign, &copy.id, &copy.project_id, &list)?;
    Ok(())
}

/// The email of a test send of `c` to `to`: the campaign's content with `[Test]` before the
/// subject, rendered for the contact with that address when there is one, outside the
/// campaign's counters (its source is TEST) and ahead of campaign mail in the queue.
pub fn test_email(c: &Campaign, to: &str, contact: Option<String>) -> Draft {
    Draft { subject: format!("[Test] {}", c.subject), body: c.body.clone(), ..draft_of(c, to, contact) }
}

/// A draft of `c` to `to`: its sender, type, template and campaign.
fn draft_of(c: &Campaign, to: &str, contact: Option<String>) -> Draft {
    Draft {
        project_id: c.project_id.clone(),
        contact_id: contact,
        to: (to.to_string(), None),
        from: (c.from_email.clone(), c.from_name.clone()),
        reply_to: c.reply_to.clone(),
        kind: c.kind.clone(),
        template_id: c.template_id.clone(),
        campaign_id: Some(c.id.clone()),
        ..Draft::default()
    }
}

/// A campaign type, MARKETING when left out (422 for another value).
pub fn check_type(kind: Option<&str>) -> Result<String> {
    compose::check_type(kind, "type", EmailKind::Marketing.as_str())
}

/// Who receives the campaign, as one checked condition: the audience (every contact, the
/// segment's members, or the filter) and, for MARKETING mail, only subscribed contacts.
pub fn audience(conn: &Tx, c: &Campaign) -> Result<Condition> {
    if !AUDIENCES.contains(&c.audience_type.as_str()) {
        return Err(Error::Invalid(vec![
            FieldError::new(
                "audienceType",
                "invalid_enum_value",
                "audienceType must be ALL, SEGMENT or FILTERED",
            )
            .received(json!(c.audience_type)),
        ]));
    }
    let tree = match c.audience_type.as_str() {
        "SEGMENT" => json!({ "groups": [{ "filters": [
            { "operator": "memberOfSegment", "value": c.segment_id.clone().unwrap_or_default() }
        ] }] }),
        "FILTERED" => {
            c.audience_condition.as_deref().and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
        }
        _ => json!({ "groups": [] }),
    };
    let mut condition = Condition::parse(&tree, "audienceCondition")?;
    resolve(conn, &c.project_id, &mut condition, None, "audienceCondition")?;
    if c.kind != EmailKind::Marketing {
        return Ok(condition);
    }
    // Subscribed to marketing and not pausing it, and subscribed to the campaign's topic when
    // it has one.
    let mut filters = vec![
        json!({ "field": "subscribed", "operator": "equals", "value": true }),
        json!({ "field": "snoozed", "operator": "equals", "value": false }),
    ];
    filters.extend(
        c.topic_id
            .iter()
            .map(|t| json!({ "field": format!("topic.{t}"), "operator": "equals", "value": true })),
    );
    let mut only_subscribed = Condition::parse(&json!({ "groups": [{ "filters": filters }] }), "audience")?;
    resolve(conn, &c.project_id, &mut only_subscribed, None, "topicId")?;
    only_subscribed.groups[0].conditions = Some(Box::new(condition));
    Ok(only_subscribed)
}

/// When a `scheduledFor` value means: RFC 3339 with any offset, `YYYY-MM-DD` (midnight UTC),
/// `YYYY-MM-DDTHH:MM[:SS[.sss]]` without an offset (UTC), or milliseconds since the epoch.
/// `None` for null; 400 for anything else.
pub fn parse_schedule(value: Option<&Value>) -> Result<Option<i64>> {
    use time::format_description::well_known::Rfc3339;
    let bad = |shown: &Value| {
        Error::malformed(format!(
            "scheduledFor must be a date-time such as 2026-12-01T09:00:00Z or 2026-12-01T10:00:00+01:00 (found {shown})"
        ))
    };
    let text = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => {
            return n
                .as_i64()
                .filter(|ms| (1..=clock::MAX_MS).contains(ms))
                .map(Some)
                .ok_or_else(|| bad(&json!(n)));
        }
        Some(Value::String(s)) => s.trim(),
        Some(other) => return Err(bad(other)),
    };
    if let Ok(at) = time::OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(Some((at.unix_timestamp_nanos() / 1_000_000) as i64));
    }
    if let Some((ms, _)) = clock::parse_date(text) {
        return Ok(Some(ms));
    }
    let padded = match text.len() {
        16 => format!("{text}:00Z"),
        19 | 23 => format!("{text}Z"),
        _ => return Err(bad(&json!(text))),
    };
    time::OffsetDateTime::parse(&padded, &Rfc3339)
        .map(|at| Some((at.unix_timestamp_nanos() / 1_000_000) as i64))
        .map_err(|_| bad(&json!(text)))
}

/// When `POST /campaigns/:id/send` asks to send: now (`None`), at `scheduledFor`, or at a
/// wall-clock `localTime` in each contact's zone, which starts where it happens first (or now,
/// if that has passed) and is returned in its stored form.
pub fn parse_when(
    scheduled_for: Option<&Value>,
    local_time: Option<&str>,
    now: i64,
) -> Result<(Option<i64>, Option<String>)> {
    let at = parse_schedule(scheduled_for)?;
    let Some(local) = local_time else { return Ok((at, None)) };
    if at.is_some() {
        return Err(Error::invalid("localTime", "invalid_union", "give scheduledFor or localTime, not both"));
    }
    let wall = super::delivery_windows::parse_local_time(local, "localTime")?;
    let first = super::delivery_windows::earliest_instant_of(wall).max(now);
    if first > clock::MAX_MS - 86_400_000 {
        return Err(Error::invalid("localTime", "too_big", "localTime is too far ahead"));
    }
    Ok((Some(first), Some(wall.strftime("%Y-%m-%dT%H:%M:%S").to_string())))
}

/// Where an expansion stands after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expansion {
    /// More contacts to visit.
    Running,
    /// Every contact visited.
    Done,
    /// The campaign is gone or no longer SENDING.
    Stopped,
}

/// One expansion batch of campaign `id`, in the caller's transaction: visits the contacts in
/// the next `batch` rows after the cursor and queues an email for each one in the audience.
pub fn expand_step(conn: &Tx, id: &str, batch: usize, now: i64) -> Result<Expansion> {
    let Some(c) = campaigns::by_id(conn, id)? else { return Ok(Expansion::Stopped) };
    if c.status != CampaignStatus::Sending || c.expanded {
        return Ok(if c.expanded { Expansion::Done } else { Expansion::Stopped });
    }
    // An A/B test queues its test share first, then, once the winner is known, the rest.
    let split = super::ab_variants::Split::of(conn, &c)?;
    if matches!(split, super::ab_variants::Split::Waiting) {
        return Ok(Expansion::Done);
    }
    let condition = audience(conn, &c)?;
    let walk = audience::walk(conn, &c.project_id, (&condition, now), c.expand_cursor, batch)?;
    let mut added = 0;
    let due = due_times(conn, &c, &walk.visited, now)?;
    for contact in walk.visited.iter().filter(|v| v.matches) {
        let Some(place) = split.place(&c.id, &contact.id) else { continue };
        let at = due.get(contact.id.as_str()).copied().unwrap_or(now);
        let mut draft = draft_of(&c, &contact.email, Some(contact.id.clone()));
        if place.from_name.is_some() {
            draft.from.1 = place.from_name;
        }
        match outbound::queue_campaign(conn, draft, place.variant, at, now) {
            Ok(Some(_)) => added += 1,
            Ok(None) => {}
            // The marketing cap is met: the campaign ends with the recipients queued so far.
            Err(e) if e.over_cap().is_some() => {
                let reason = "the project's monthly limit of campaign emails was reached";
                campaigns::stop_expansion(conn, &c.id, walk.cursor, added, reason, now)?;
                return Ok(Expansion::Done);
            }
            Err(e) => return Err(e.into()),
        }
    }
    if walk.done && split.ends_in_wait() {
        super::ab_variants::start_wait(conn, &c, added, now)?;
        return Ok(Expansion::Done);
    }
    campaigns::record_expansion(conn, &c.id, walk.cursor, added, walk.done, now)?;
    Ok(if walk.done { Expansion::Done } else { Expansion::Running })
}

/// When each matching contact's email of campaign `c` is due, where that is not `now`: at the
/// campaign's wall-clock time in the contact's zone, and, for MARKETING mail, out of the
/// project's quiet hours and days there (`core::delivery_windows`).
fn due_times(
    conn: &Tx,
    c: &Campaign,
    visited: &[crate::db::audience::Visited],
    now: i64,
) -> Result<std::collections::HashMap<String, i64>> {
    use super::delivery_windows::{Windows, instant_of};
    let windows = Windows::of(&crate::db::sending::get(conn, &c.project_id)?);
    let wall = c.local_time.as_deref().and_then(|t| t.parse::<jiff::civil::DateTime>().ok());
    let quiet = c.kind == EmailKind::Marketing && windows.has_quiet_time();
    if wall.is_none() && !quiet {
        return Ok(Default::default());
    }
    let ids: Vec<&str> = visited.iter().filter(|v| v.matches).map(|v| v.id.as_str()).collect();
    let own: std::collections::HashMap<String, String> =
        crate::db::sending::timezones(conn, &ids)?.into_iter().collect();
    Ok(ids
        .into_iter()
        .map(|id| {
            let zone = windows.zone_of(own.get(id).map(String::as_str));
            let mut at = wall.map_or(now, |wall| instant_of(wall, &zone).max(now));
            if quiet {
                at = windows.next_open(&zone, at);
            }
            (id.to_string(), at)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_take_the_forms_a_date_parser_accepts() {
        let at = |v: Value| parse_schedule(Some(&v)).unwrap().unwrap();
        assert_eq!(at(json!("2026-12-01T09:00:00Z")), 1_796_115_600_000);
        assert_eq!(at(json!("2026-12-01T10:00:00+01:00")), 1_796_115_600_000);
        assert_eq!(at(json!("2026-12-01T09:00")), 1_796_115_600_000);
        assert_eq!(at(json!("2026-12-01T09:00:00")), 1_796_115_600_000);
        assert_eq!(at(json!("2026-12-01")), 1_796_083_200_000);
        assert_eq!(at(json!(1_796_115_600_000_i64)), 1_796_115_600_000);
        assert_eq!(parse_schedule(None).unwrap(), None);
        assert_eq!(parse_schedule(Some(&Value::Null)).unwrap(), None);
        for bad in [
            json!("tomorrow"),
            json!("2026-13-01"),
            json!(true),
            json!(-5),
            json!("2026-12-01T25:00"),
            json!(i64::MAX),
            json!(crate::clock::MAX_MS + 1),
        ] {
            assert_eq!(parse_schedule(Some(&bad)).unwrap_err().kind(), "malformed", "{bad}");
        }
    }
}
