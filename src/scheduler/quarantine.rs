//! The quarantine: what the previous process left started is counted, and an item that stopped
//! the process twice in a row is failed for good ([`REASON`]), so one poisonous email, job,
//! execution or delivery cannot take the server down at every start ([`super::inflight`] keeps
//! the journal it is counted from).

use crate::db::Tx;

use super::inflight::{Item, Kind, Previous, REASON};
use crate::db::DbError;

/// Counts the items the previous process left started, and fails those counted twice in a row
/// ([`REASON`]); clears the counts of the items it finished. Returns the quarantined items.
pub fn count_interrupted(conn: &Tx, previous: &Previous, now: i64) -> Result<Vec<Item>, DbError> {
    let Previous { open, done } = previous;
    for (kind, id) in done {
        crate::db::interruptions::forget(conn, kind.name(), id)?;
    }
    let mut quarantined = Vec::new();
    for (kind, id) in open {
        if crate::db::interruptions::count(conn, kind.name(), id)? < 2 {
            continue;
        }
        match kind {
            Kind::Email => crate::core::delivery::quarantine(conn, id, REASON, now)?,
            Kind::Job => crate::db::jobs::give_up(conn, id.parse().unwrap_or(-1), REASON, now)?,
            Kind::Execution => crate::core::workflows::engine::give_up(conn, id, REASON, now)?,
            Kind::Delivery => crate::db::webhooks::record(conn, id, "failed", None, Some(REASON), None, now)?,
        }
        crate::db::interruptions::forget(conn, kind.name(), id)?;
        quarantined.push((*kind, id.clone()));
    }
    Ok(quarantined)
}
