//! Segments: dynamic ones (a condition over contacts, evaluated live) and static ones (a stored
//! list of members), their counts, and the stored membership of tracked segments, whose changes
//! are emitted as `segment.<slug>.entry` / `segment.<slug>.exit` events.
//!
//! A membership computation walks the project's contacts in batches by `seq`; each batch writes
//! its membership changes, their events and the run's cursor in one transaction, so a run that
//! stops halfway resumes where it was and never emits an event twice.

use crate::db::Tx;
use serde_json::{Value, json};

use super::conditions::resolve::resolve;
use super::conditions::{Condition, References, canonical};
use super::contacts::{self as core_contacts, Upsert};
use super::data::DataPatch;
use super::events;
use super::fields::FieldChanges;
use crate::clock;
use crate::core::error::{Error, FieldError, Result};
use crate::core::ids::SegmentId;
use crate::db::Db;
use crate::db::audience;
use crate::db::contacts::{self, Contact, Indexing};
use crate::db::refs::{self, Owner};
use crate::db::segments::{self, Segment};

pub const MAX_NAME: usize = 100;
pub const MAX_DESCRIPTION: usize = 500;
/// Most emails in one members request.
pub const MAX_MEMBER_EMAILS: usize = 1000;
/// Contacts visited per transaction of a membership computation.
pub const COMPUTE_BATCH: usize = 5000;

/// The slug a name gives: lowercase ASCII letters and digits joined by single hyphens.
pub fn slugify(name: &str) -> String {
    let mut slug = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug: String = slug.chars().take(60).collect();
    if slug.is_empty() { "segment".into() } else { slug.trim_end_matches('-').to_string() }
}

/// A slug for `name` not yet used in the project (`vip`, then `vip-2`, `vip-3`, ...).
fn unique_slug(conn: &Tx, project: &str, name: &str) -> crate::db::Result<String> {
    let base = slugify(name);
    let mut slug = base.clone();
    let mut n = 2;
    while segments::slug_taken(conn, project, &slug)? {
        slug = format!("{base}-{n}");
        n += 1;
    }
    Ok(slug)
}

/// The name rule: 1 to 100 characters after trimming.
pub fn check_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(Error::Invalid(vec![
            FieldError::new("name", "invalid_string", format!("name is 1 to {MAX_NAME} characters"))
                .received(json!(name.chars().take(300).collect::<String>())),
        ]));
    }
    Ok(name.to_string())
}

/// The description rule: at most 500 characters; empty is none.
pub fn check_description(description: &str) -> Result<Option<String>> {
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(Error::invalid(
            "description",
            "too_big",
            format!("description is at most {MAX_DESCRIPTION} characters"),
        ));
    }
    Ok(Some(description.trim().to_string()).filter(|d| !d.is_empty()))
}

/// Checks a condition for a segment of `project` (`within`: the segment's own id, when it
/// exists), and returns it resolved.
pub fn check_condition(conn: &Tx, project: &str, value: &Value, within: Option<&str>) -> Result<Condition> {
    let mut condition = Condition::parse(value, "condition")?;
    resolve(conn, project, &mut condition, within, "condition")?;
    Ok(condition)
}

fn save_refs(conn: &Tx, segment: &Segment, refs: &References) -> crate::db::Result<()> {
    refs::set(conn, Owner::Segment, &segment.id, &segment.project_id, &refs.pairs())
}

/// A new segment, checked.
pub struct NewSegment {
    pub name: String,
    pub description: Option<String>,
    pub is_static: bool,
    pub condition: Option<Value>,
    pub track_membership: bool,
}

/// Creates a segment (its count is taken after the write, see [`count`]).
pub fn create(conn: &Tx, project: &str, new: NewSegment, now: i64) -> Result<Segment> {
    let condition = match (&new.condition, new.is_static) {
        (Some(value), false) => Some(check_condition(conn, project, value, None)?),
        _ => None,
    };
    let segment = Segment {
        id: crate::db::new_id(),
        project_id: project.to_string(),
        slug: unique_slug(conn, project, &new.name)?,
        name: new.name,
        description: new.description,
        kind: if new.is_static { "STATIC".into() } else { "DYNAMIC".into() },
        condition: if new.is_static { None } else { new.condition.as_ref().map(canonical) },
        track_membership: new.track_membership,
        member_count: 0,
        counted_at: None,
        compute_cursor: None,
        compute_entered: 0,
        compute_exited: 0,
        computed_at: None,
        created_at: now,
        updated_at: now,
    };
    segments::insert(conn, &segment)?;
    save_refs(conn, &segment, &condition.map(|c| c.references()).unwrap_or_default())?;
    if is_tracked_dynamic(&segment) {
        start_computing(conn, &segment)?;
    }
    Ok(segment)
}

/// Changes to a segment, checked.
#[derive(Default)]
pub struct SegmentChanges {
    /// The type the client named, if any: a segment's type never changes.
    pub kind: Option<&'static str>,
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub condition: Option<Value>,
    pub track_membership: Option<bool>,
}

/// Segment `id` of `project`.
pub fn find(conn: &Tx, project: &str, id: &SegmentId) -> Result<Segment> {
    segments::get(conn, project, id)?.ok_or_else(|| SegmentId::missing(id))
}

/// Applies changes to segment `id`. A new condition abandons a computation in progress (the
/// stored membership stays the reference, so the next computation emits exactly the
/// differences); turning tracking off drops the stored membership of a dynamic segment.
pub fn update(
    conn: &Tx,
    project: &str,
    id: &SegmentId,
    changes: SegmentChanges,
    now: i64,
) -> Result<Segment> {
    let mut segment = find(conn, project, id)?;
    if changes.kind.is_some_and(|k| k != segment.kind) {
        return Err(Error::invalid(
            "type",
            "invalid_value",
            "a segment's type cannot change; make a new segment instead",
        ));
    }
    let was_tracked = is_tracked_dynamic(&segment);
    if let Some(name) = changes.name {
        segment.name = name;
    }
    if let Some(description) = changes.description {
        segment.description = description;
    }
    if let Some(value) = changes.condition {
        if segment.is_static() {
            return Err(Error::malformed(
                "A static segment has no condition; its members are added and removed through /segments/:id/members",
            ));
        }
        let condition = check_condition(conn, &segment.project_id, &value, Some(&segment.id))?;
        save_refs(conn, &segment, &condition.references())?;
        segment.condition = Some(canonical(&value));
        segment.compute_cursor = None;
    }
    if let Some(track) = changes.track_membership {
        if !track && segment.track_membership && !segment.is_static() {
            segments::clear_members(conn, &segment.id)?;
            segment.compute_cursor = None;
            segment.computed_at = None;
        }
        segment.track_membership = track;
    }
    segment.updated_at = now;
    segments::update(conn, &segment)?;
    if is_tracked_dynamic(&segment) && !was_tracked {
        start_computing(conn, &segment)?;
    }
    Ok(segment)
}

/// Enqueues the computation of `segment`'s membership (one per segment at a time).
pub fn start_computing(conn: &Tx, segment: &Segment) -> Result<()> {
    crate::db::jobs::enqueue(conn, &super::jobs::segment_compute(&segment.project_id, &segment.id))?;
    Ok(())
}

/// Deletes segment `id`; 409 while another segment's condition refers to it, or a SCHEDULED or
/// SENDING campaign uses it.
pub fn delete(conn: &Tx, project: &str, id: &SegmentId) -> Result<()> {
    let segment = &find(conn, project, id)?;
    if let Some((id, name)) = refs::active_campaign(conn, &segment.project_id, "segment", &segment.id)? {
        return Err(Error::Conflict {
            message: format!(
                "The campaign {name:?} sends to this segment; cancel it or wait until it has sent"
            ),
            details: Some(json!({ "campaigns": [{ "id": id, "name": name }] })),
        });
    }
    let users = refs::segments(conn, &segment.project_id, "segment", &segment.id)?;
    if let Some((_, name)) = users.first() {
        return Err(Error::Conflict {
            message: format!(
                "The segment {name:?} refers to this segment (memberOfSegment); change its condition first"
            ),
            details: Some(
                json!({ "segments": users.iter().map(|(id, name)| json!({ "id": id, "name": name })).collect::<Vec<_>>() }),
            ),
        });
    }
    segments::delete(conn, &segment.id)?;
    Ok(())
}

/// The resolved condition of a dynamic segment.
pub fn condition_of(conn: &Tx, segment: &Segment) -> Result<Condition> {
    let value = segment.condition.clone().unwrap_or(Value::Null);
    check_condition(conn, &segment.project_id, &value, Some(&segment.id))
}

/// How many contacts of `project` with `seq` in `range` match `condition`. The project test is
/// kept off the index (`+`), so the scan follows `seq` and parts of the table can be counted
/// side by side.
fn count_matching(
    conn: &Tx,
    project: &str,
    condition: &Condition,
    range: (i64, i64),
    now: i64,
) -> Result<i64> {
    Ok(audience::count_in_range(conn, project, (condition, now), range)?)
}

/// How many contacts are in the segment now: a static segment's stored members, or the contacts
/// a dynamic segment's condition matches, counted on several connections at once, each taking a
/// slice of the contacts table (one per core, at most four): counting evaluates the condition on
/// every contact of the project, and that work divides cleanly.
pub async fn count(db: &Db, segment: &Segment) -> Result<i64> {
    if segment.is_static() {
        let id = segment.id.clone();
        return db.run(move |conn| Ok::<_, Error>(segments::stored_count(conn, &id)?)).await;
    }
    let resolved = segment.clone();
    let condition = db.run(move |conn| condition_of(conn, &resolved)).await?;
    count_condition(db, &segment.project_id, condition).await
}

/// One gate per project: counting reads every contact of the project on several connections,
/// so one project's counts run one at a time (the next waits) and a key holder asking for many
/// cannot occupy every core while other projects wait.
fn counting_gate(project: &str) -> std::sync::Arc<tokio::sync::Semaphore> {
    use std::collections::HashMap;
    use std::sync::{Arc, LazyLock, Mutex};
    static GATES: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Semaphore>>>> =
        LazyLock::new(Default::default);
    let mut gates = GATES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    gates.entry(project.to_string()).or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(1))).clone()
}

/// A turn at the project's counting gate, for other reads of every contact of a project.
pub async fn counting_turn(project: &str) -> Result<tokio::sync::OwnedSemaphorePermit> {
    counting_gate(project)
        .acquire_owned()
        .await
        .map_err(|e| Error::permanent(format!("the counting gate closed: {e}")))
}

/// How many of `project`'s contacts match a checked condition now (see [`count`]); a project's
/// counts run one at a time.
pub async fn count_condition(db: &Db, project: &str, condition: Condition) -> Result<i64> {
    let _turn = counting_turn(project).await?;
    let last = db.run(|conn| Ok::<i64, Error>(crate::db::contacts::last_seq(conn)?)).await?;
    let parts = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4) as i64;
    let parts = if last < 10_000 { 1 } else { parts };
    let now = clock::now_ms();
    let step = last / parts + 1;
    let mut counts = tokio::task::JoinSet::new();
    for i in 0..parts {
        let (condition, project, db) = (condition.clone(), project.to_string(), db.clone());
        let range = (i * step, if i + 1 == parts { i64::MAX } else { (i + 1) * step });
        counts.spawn(async move {
            db.run(move |conn| count_matching(conn, &project, &condition, range, now)).await
        });
    }
    let mut total = 0;
    while let Some(part) = counts.join_next().await {
        total += part.map_err(|e| Error::permanent(format!("a count task failed: {e}")))??;
    }
    Ok(total)
}

/// Stores a count taken by [`count`] (no membership writes, no events). Counting reads
/// every contact of a large project, so callers count outside the write transaction and store
/// the number in a short one; the segment as it is now is returned.
pub fn store_count(conn: &Tx, id: &str, count: i64, now: i64) -> Result<Option<Segment>> {
    let Some(mut segment) = segments::by_id(conn, id)? else { return Ok(None) };
    segment.member_count = count;
    segment.counted_at = Some(now);
    segments::update(conn, &segment)?;
    Ok(Some(segment))
}

/// One page of the segment's contacts, newest first (the total is [`count`]).
pub fn contacts_page(
    conn: &Tx,
    segment: &Segment,
    page: i64,
    page_size: i64,
    now: i64,
) -> Result<Vec<Contact>> {
    let offset = (page - 1).saturating_mul(page_size);
    if segment.is_static() {
        return Ok(segments::members_page(conn, &segment.id, page_size, offset)?);
    }
    let condition = condition_of(conn, segment)?;
    Ok(audience::matching_page(conn, &segment.project_id, (&condition, now), page_size, offset)?)
}

/// The segment's contacts as a restriction of a contact list: its stored members, or those its
/// condition holds for at `now`.
pub fn list_filter(conn: &Tx, segment: &Segment, now: i64) -> Result<contacts::Within> {
    if segment.is_static() {
        return Ok(contacts::Within::members_of(&segment.id));
    }
    Ok(audience::within(&condition_of(conn, segment)?, &segment.project_id, now))
}

fn membership_event(
    conn: &Tx,
    segment: &Segment,
    contact: &str,
    entry: bool,
    now: i64,
) -> crate::db::Result<()> {
    let name = format!("segment.{}.{}", segment.slug, if entry { "entry" } else { "exit" });
    let data = json!({ "segmentId": segment.id, "segmentName": segment.name });
    events::emit(conn, &segment.project_id, Some(contact), &name, &data, now).map(|_| ())
}

/// What a members request did.
#[derive(Debug, Default)]
pub struct MembersOutcome {
    pub added: usize,
    pub removed: usize,
    pub already: usize,
    pub created: usize,
    pub not_found: Vec<String>,
}

/// Checks the `emails` of a members request: 1 to 1000 addresses, each normalised.
pub fn check_emails(value: Option<&Value>) -> Result<Vec<String>> {
    let Some(Value::Array(items)) = value else {
        return Err(Error::invalid("emails", "required", "emails is required: an array of addresses"));
    };
    if items.is_empty() || items.len() > MAX_MEMBER_EMAILS {
        return Err(Error::invalid(
            "emails",
            "too_big",
            format!("emails holds 1 to {MAX_MEMBER_EMAILS} addresses"),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let field = format!("emails[{i}]");
        let Some(address) = item.as_str() else {
            return Err(Error::invalid(&field, "invalid_type", "each email is a string"));
        };
        out.push(core_contacts::parse_email(address, &field)?);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn require_static(segment: &Segment) -> Result<()> {
    if segment.is_static() {
        return Ok(());
    }
    Err(Error::malformed(
        "This is a dynamic segment: its members are the contacts its condition matches. Members are added to static segments",
    ))
}

/// Adds contacts to a static segment by email; with `create_missing`, unknown addresses become
/// contacts (subscribed unless `subscribed` is false). A tracked segment emits entry events.
pub fn add_members(
    conn: &Tx,
    mut segment: Segment,
    emails: &[String],
    create_missing: bool,
    subscribed: Option<bool>,
    now: i64,
) -> Result<(Segment, MembersOutcome)> {
    require_static(&segment)?;
    let mut outcome = MembersOutcome::default();
    let mut fields = FieldChanges::default();
    let empty = DataPatch::default();
    for email in emails {
        let contact = match contacts::by_email(conn, &segment.project_id, email)? {
            Some(contact) => contact,
            None if create_missing => {
                let upsert = Upsert {
                    email,
                    subscribed,
                    default_subscribed: true,
                    data: &empty,
                    source: "segment",
                    indexing: Indexing::AtCommit,
                    new_likely: false,
                };
                outcome.created += 1;
                core_contacts::upsert(conn, &segment.project_id, &upsert, &mut fields, now)?.contact
            }
            None => {
                outcome.not_found.push(email.clone());
                continue;
            }
        };
        if segments::add_member(conn, &segment.id, contact.seq, now)? {
            outcome.added += 1;
            if segment.track_membership {
                membership_event(conn, &segment, &contact.id, true, now)?;
            }
        } else {
            outcome.already += 1;
        }
    }
    fields.save(conn, &segment.project_id)?;
    segment.member_count = segments::stored_count(conn, &segment.id)?;
    segment.counted_at = Some(now);
    segments::update(conn, &segment)?;
    Ok((segment, outcome))
}

/// Removes contacts from a static segment by email; a tracked segment emits exit events.
pub fn remove_members(
    conn: &Tx,
    mut segment: Segment,
    emails: &[String],
    now: i64,
) -> Result<(Segment, MembersOutcome)> {
    require_static(&segment)?;
    let mut outcome = MembersOutcome::default();
    for email in emails {
        let contact = contacts::by_email(conn, &segment.project_id, email)?;
        match contact {
            Some(contact) if segments::remove_member(conn, &segment.id, contact.seq)? => {
                outcome.removed += 1;
                if segment.track_membership {
                    membership_event(conn, &segment, &contact.id, false, now)?;
                }
            }
            _ => outcome.not_found.push(email.clone()),
        }
    }
    segment.member_count = segments::stored_count(conn, &segment.id)?;
    segment.counted_at = Some(now);
    segments::update(conn, &segment)?;
    Ok((segment, outcome))
}

/// Where a membership computation stands after a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// More contacts to visit.
    Running,
    /// The run is complete; the segment carries its results.
    Done(Box<Segment>),
    /// The segment is gone, or no longer a tracked dynamic segment.
    Gone,
}

/// Whether a segment has a stored membership to compute.
pub fn is_tracked_dynamic(segment: &Segment) -> bool {
    !segment.is_static() && segment.track_membership
}

/// One batch of a membership computation of segment `id`, in the caller's transaction: visits the
/// project's contacts in the next `batch` rows after the run's cursor, stores who entered and
/// left, emits their events, and moves the cursor. A run starts when none is in progress and
/// ends when the contacts run out.
pub fn compute_step(conn: &Tx, id: &str, batch: usize, now: i64) -> Result<Step> {
    let Some(mut segment) = segments::by_id(conn, id)? else { return Ok(Step::Gone) };
    if !is_tracked_dynamic(&segment) {
        return Ok(Step::Gone);
    }
    let cursor = match segment.compute_cursor {
        Some(cursor) => cursor,
        None => {
            segment.compute_entered = 0;
            segment.compute_exited = 0;
            0
        }
    };
    let condition = condition_of(conn, &segment)?;
    let walk = audience::walk(conn, &segment.project_id, (&condition, now), cursor, batch)?;
    let stored = match (walk.visited.first(), walk.visited.last()) {
        (Some(first), Some(last)) => segments::members_between(conn, &segment.id, first.seq, last.seq)?,
        _ => Default::default(),
    };
    for contact in &walk.visited {
        let was = stored.contains(&contact.seq);
        if contact.matches && !was {
            segments::add_member(conn, &segment.id, contact.seq, now)?;
            membership_event(conn, &segment, &contact.id, true, now)?;
            segment.compute_entered += 1;
        } else if !contact.matches && was {
            segments::remove_member(conn, &segment.id, contact.seq)?;
            membership_event(conn, &segment, &contact.id, false, now)?;
            segment.compute_exited += 1;
        }
    }
    let done = walk.done;
    if done {
        segment.compute_cursor = None;
        segment.computed_at = Some(now);
        segment.member_count = segments::stored_count(conn, &segment.id)?;
        segment.counted_at = Some(now);
    } else {
        segment.compute_cursor = Some(walk.cursor);
    }
    segments::update(conn, &segment)?;
    Ok(if done { Step::Done(Box::new(segment)) } else { Step::Running })
}

/// Counts the segment's members outside any write, then stores the count; the segment as it is
/// then (or as given, when it was deleted meanwhile).
pub async fn recount(db: &Db, segment: Segment) -> Result<Segment> {
    let count = count(db, &segment).await?;
    let id = segment.id.clone();
    let stored = db.write(move |tx| store_count(tx, &id, count, clock::now_ms())).await?;
    Ok(stored.unwrap_or(segment))
}

#[cfg(test)]
mod tests {
    use super::{counting_gate, slugify};

    #[test]
    fn a_projects_counts_take_turns_and_other_projects_do_not_wait() {
        let first = counting_gate("p1").try_acquire_owned().expect("free");
        assert!(counting_gate("p1").try_acquire_owned().is_err(), "the same project waits its turn");
        assert!(counting_gate("p2").try_acquire_owned().is_ok(), "another project does not");
        drop(first);
        assert!(counting_gate("p1").try_acquire_owned().is_ok());
    }

    #[test]
    fn slugs() {
        assert_eq!(slugify("Power Users"), "power-users");
        assert_eq!(slugify("  VIP!! (2024) "), "vip-2024");
        assert_eq!(slugify("Café crème"), "caf-cr-me");
        assert_eq!(slugify("!!!"), "segment");
        assert_eq!(slugify(&"a".repeat(100)).len(), 60);
    }
}
