//! Bulk contact operations (subscribe, unsubscribe, delete a list of ids, or every contact a
//! list's filters match) and removing a custom field from every contact.

use std::collections::HashSet;

use crate::db::Tx;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::contact_filters::Narrowing;
use super::contacts as core_contacts;
use super::fields::FieldChanges;
use crate::core::error::{Error, Result};
use crate::core::ids::ContactJobId;
use crate::db::contact_jobs::{self, ContactJob};
use crate::db::contacts::{self, Contact};

/// Most contact ids in one bulk request.
pub const MAX_IDS: usize = 1000;
/// Most ids a query-mode request leaves out (10,000 in Plunk; 5,000 keep the body within the
/// 256 KiB cap of contact requests).
pub const MAX_EXCLUDED: usize = 5000;
/// Longest search of a query-mode request.
pub const MAX_SEARCH: usize = 255;

/// What a bulk job acts on, as stored for it: a list of ids, or every contact whose email
/// contains `search` (lowercase), whose subscription is `subscribed` and that the list's other
/// filters (`narrowing`, read at each batch) match, but those in `exclude` (Plunk's query mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Selection {
    Ids(Vec<String>),
    Query {
        search: Option<String>,
        subscribed: Option<bool>,
        exclude: Vec<String>,
        #[serde(default, skip_serializing_if = "Narrowing::is_empty")]
        narrowing: Narrowing,
    },
}

/// The filters of a query-mode bulk job.
pub struct QueryFilters<'a> {
    pub search: Option<&'a str>,
    pub subscribed: Option<bool>,
    pub narrowing: &'a Narrowing,
    pub exclude: &'a HashSet<String>,
}

/// Applies a bulk operation to one contact; returns whether it changed anything.
fn apply(conn: &Tx, operation: &str, contact: Contact, fields: &mut FieldChanges, now: i64) -> Result<bool> {
    match operation {
        "subscribe" => core_contacts::set_subscribed(conn, contact, true, "bulk", now),
        "unsubscribe" => core_contacts::set_subscribed(conn, contact, false, "bulk", now),
        "delete" => {
            core_contacts::delete(conn, &contact, fields)?;
            Ok(true)
        }
        other => Err(Error::permanent(format!("unknown bulk operation {other}"))),
    }
}

/// The contact job `id` of `project`: a CSV import when `import`, else a bulk operation (the
/// removal of a custom field among them). A job of the other kind is not found.
pub fn find(conn: &Tx, project: &str, id: &ContactJobId, import: bool) -> Result<ContactJob> {
    contact_jobs::get(conn, project, id)?
        .filter(|j| (j.operation == "import") == import)
        .ok_or_else(|| ContactJobId::missing(id))
}

/// Stores contact job `operation` over `input` and enqueues the scheduler job that runs it.
pub fn start(
    tx: &Tx,
    project: &str,
    operation: &str,
    input: &[u8],
    total: i64,
    now: i64,
) -> Result<ContactJob> {
    let job = contact_jobs::insert(tx, project, operation, input, total, now)?;
    crate::db::jobs::enqueue(tx, &super::jobs::contact_job(project, &job.id))?;
    Ok(job)
}

/// Forgets custom field `path` (and the fields under it) at once, and starts the contact job
/// that takes its values out of every contact.
pub fn remove_field(tx: &Tx, project: &str, path: &str, now: i64) -> Result<ContactJob> {
    crate::db::fields::forget(tx, project, path)?;
    let (total, _) = crate::db::contacts::counts(tx, project)?;
    start(tx, project, "delete_field", path.as_bytes(), total, now)
}

/// Runs a bulk job over its ids in the caller's transaction, all at once (at most 1,000 ids).
/// Ids that are not contacts of the job's project count as errors and are never touched.
pub fn run(conn: &Tx, job: &ContactJob, ids: &[String], now: i64) -> Result<()> {
    let mut progress = job.clone();
    let mut errors = Vec::new();
    let mut fields = FieldChanges::default();
    for id in ids {
        progress.processed += 1;
        let Some(contact) = contacts::by_id(conn, &job.project_id, id)? else {
            progress.error_count += 1;
            errors.push(json!({ "contactId": id, "reason": "not_found" }));
            continue;
        };
        if apply(conn, &job.operation, contact, &mut fields, now)? {
            progress.updated += 1;
        } else {
            progress.skipped += 1;
        }
    }
    progress.errors = Value::Array(errors).to_string();
    fields.save(conn, &job.project_id)?;
    contact_jobs::save_progress(conn, &progress, true, now)?;
    Ok(())
}

/// Runs a query-mode bulk job over the next `max_rows` rows after its cursor (see
/// [`crate::db::audience::range`]) in the caller's transaction: each contact the filters match
/// is processed, an excluded one skipped. Returns whether every contact has been visited.
pub fn run_query_batch(
    conn: &Tx,
    job: &ContactJob,
    filters: &QueryFilters<'_>,
    max_rows: usize,
    now: i64,
) -> Result<bool> {
    let QueryFilters { search, subscribed, narrowing, exclude } = filters;
    let (end, done) = crate::db::audience::range(conn, job.cursor, max_rows)?;
    let within = narrowing.within(conn, &job.project_id, now)?;
    let batch = contacts::matching_in_range(
        conn,
        &job.project_id,
        (*search, *subscribed, &within),
        (job.cursor, end),
    )?;
    let mut progress = job.clone();
    let mut fields = FieldChanges::default();
    for contact in batch {
        progress.processed += 1;
        if !exclude.contains(&contact.id) && apply(conn, &job.operation, contact, &mut fields, now)? {
            progress.updated += 1;
        } else {
            progress.skipped += 1;
        }
    }
    progress.cursor = end;
    fields.save(conn, &job.project_id)?;
    contact_jobs::save_progress(conn, &progress, done, now)?;
    Ok(done)
}

/// Removes a dotted path from an object; returns whether something was removed.
pub fn remove_path(data: &mut Map<String, Value>, path: &str) -> bool {
    match path.split_once('.') {
        None => data.remove(path).is_some(),
        Some((head, rest)) => match data.get_mut(head) {
            Some(Value::Object(inner)) => remove_path(inner, rest),
            _ => false,
        },
    }
}

/// Removes the field `path` from the project's contacts in the next `max_rows` rows after the
/// job's cursor (see [`crate::db::audience::range`]), in the caller's transaction. Returns
/// whether every contact has been visited.
pub fn remove_field_batch(
    conn: &Tx,
    job: &ContactJob,
    path: &str,
    max_rows: usize,
    now: i64,
) -> Result<bool> {
    let (end, done) = crate::db::audience::range(conn, job.cursor, max_rows)?;
    let batch = contacts::matching_in_range(conn, &job.project_id, (None, None, &[]), (job.cursor, end))?;
    let mut progress = job.clone();
    let mut fields = FieldChanges::default();
    for mut contact in batch.iter().cloned() {
        progress.processed += 1;
        let mut data = contact.data.clone();
        if remove_path(&mut data, path) {
            fields.record(&contact.data, &data);
            contact.data = data;
            contact.updated_at = now;
            contacts::update(conn, &contact)?;
            progress.updated += 1;
        }
    }
    progress.cursor = end;
    fields.save(conn, &job.project_id)?;
    contact_jobs::save_progress(conn, &progress, done, now)?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::remove_path;
    use serde_json::json;

    #[test]
    fn paths_are_removed_at_any_depth() {
        let mut data =
            json!({ "plan": 1, "profile": { "tier": "gold", "city": "Oslo" } }).as_object().unwrap().clone();
        assert!(remove_path(&mut data, "profile.tier"));
        assert!(!remove_path(&mut data, "profile.tier"));
        assert!(!remove_path(&mut data, "plan.x"));
        assert!(remove_path(&mut data, "plan"));
        assert_eq!(serde_json::Value::Object(data), json!({ "profile": { "city": "Oslo" } }));
    }
}
