//! Bulk contact operations (subscribe, unsubscribe, delete a list of ids) and removing a custom
//! field from every contact.

use rusqlite::{Connection, params};
use serde_json::{Map, Value, json};

use super::contacts as core_contacts;
use super::fields::FieldChanges;
use crate::db::contact_jobs::{self, ContactJob};
use crate::db::contacts::{self, Contact};
use crate::error::ApiError;

/// Most contact ids in one bulk request.
pub const MAX_IDS: usize = 1000;

/// Runs a bulk job over its ids in the caller's transaction, all at once (at most 1,000 ids).
/// Ids that are not contacts of the job's project count as errors and are never touched.
pub fn run(conn: &Connection, job: &ContactJob, ids: &[String], now: i64) -> Result<(), ApiError> {
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
        let changed = match job.operation.as_str() {
            "subscribe" => core_contacts::set_subscribed(conn, contact, true, "bulk", now)?,
            "unsubscribe" => core_contacts::set_subscribed(conn, contact, false, "bulk", now)?,
            "delete" => {
                core_contacts::delete(conn, &contact, &mut fields)?;
                true
            }
            other => return Err(ApiError::internal(format!("unknown bulk operation {other}"))),
        };
        if changed {
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
    conn: &Connection,
    job: &ContactJob,
    path: &str,
    max_rows: usize,
    now: i64,
) -> Result<bool, ApiError> {
    let (end, done) = crate::db::audience::range(conn, job.cursor, max_rows)?;
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {} FROM contacts c WHERE +c.project_id = ?1 AND c.seq > ?2 AND c.seq <= ?3 ORDER BY c.seq",
        contacts::COLUMNS
    ))?;
    let batch: Vec<Contact> = stmt
        .query_map(params![job.project_id, job.cursor, end], contacts::from_row)?
        .collect::<Result<_, _>>()?;
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
