//! Looking up the segments a condition refers to (`memberOfSegment`), so both evaluators know
//! whether to read stored members (static) or to evaluate the other segment's condition
//! (dynamic), and the topics it names (`topic.<id>`), for their defaults. Refuses unknown
//! segments and topics, cycles and chains that grow too deep or too large.

use crate::db::Tx;

use super::{Condition, Field, Filter, MAX_FILTERS, MAX_NESTING, Target};
use crate::core::error::{Error, FieldError, Result};
use crate::db::{campaigns, segments, topics};

/// Most filters once referred segments are included.
const MAX_RESOLVED_FILTERS: usize = 5 * MAX_FILTERS;

/// Resolves every segment filter of `condition` (recursively) in `project`. `within` is the
/// segment the condition belongs to, if any, so a segment cannot refer to itself through others.
pub fn resolve(
    conn: &Tx,
    project: &str,
    condition: &mut Condition,
    within: Option<&str>,
    path: &str,
) -> Result<()> {
    let mut chain: Vec<String> = within.map(str::to_string).into_iter().collect();
    let mut total = 0;
    resolve_in(conn, project, condition, &mut chain, &mut total, path)
}

fn resolve_in(
    conn: &Tx,
    project: &str,
    condition: &mut Condition,
    chain: &mut Vec<String>,
    total: &mut usize,
    path: &str,
) -> Result<()> {
    let fail = |code: &str, message: String, id: &str| {
        Error::Invalid(vec![FieldError::new(path, code, message).received(serde_json::json!(id))])
    };
    for group in &mut condition.groups {
        for filter in &mut group.filters {
            *total += 1;
            if *total > MAX_RESOLVED_FILTERS {
                return Err(Error::invalid(
                    path,
                    "too_big",
                    format!(
                        "with the segments it refers to, a condition holds at most {MAX_RESOLVED_FILTERS} filters"
                    ),
                ));
            }
            if let Filter::Field { field: Field::Topic { id, default_opt_in }, .. } = filter {
                let Some(topic) = topics::get(conn, project, id)? else {
                    return Err(fail("not_found", format!("no topic {id} in this project"), id));
                };
                *default_opt_in = topic.default_opt_in;
                continue;
            }
            if let Filter::Campaign { id, .. } = filter {
                if campaigns::get(conn, project, id)?.is_none() {
                    return Err(fail("not_found", format!("no campaign {id} in this project"), id));
                }
                continue;
            }
            let Filter::Segment { id, target, .. } = filter else { continue };
            if chain.iter().any(|c| c == id) {
                return Err(fail(
                    "cycle",
                    format!("segment {id} refers back to itself through memberOfSegment"),
                    id,
                ));
            }
            if chain.len() > MAX_NESTING {
                return Err(fail(
                    "too_deep",
                    format!("segments refer to segments at most {MAX_NESTING} deep"),
                    id,
                ));
            }
            let Some(segment) = segments::get(conn, project, id)? else {
                return Err(fail("not_found", format!("no segment {id} in this project"), id));
            };
            *target = if segment.is_static() {
                Target::Static
            } else {
                let stored = segment.condition.clone().unwrap_or(serde_json::Value::Null);
                let mut inner = Condition::parse(&stored, path).map_err(|_| {
                    fail("invalid_value", format!("segment {id} has a condition that no longer reads"), id)
                })?;
                chain.push(id.clone());
                resolve_in(conn, project, &mut inner, chain, total, path)?;
                chain.pop();
                Target::Dynamic(Box::new(inner))
            };
        }
        if let Some(nested) = &mut group.conditions {
            resolve_in(conn, project, nested, chain, total, path)?;
        }
    }
    Ok(())
}
