//! How many processes in a row died working on an item (see `scheduler::inflight`).

use super::error::Result;
use rusqlite::{Connection, params};

/// Counts one more process that died working on `(kind, id)`; returns the count.
pub fn count(conn: &Connection, kind: &str, id: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO interrupted_work (kind, item_id, count) VALUES (?1, ?2, 1)
         ON CONFLICT (kind, item_id) DO UPDATE SET count = count + 1 RETURNING count",
        )?
        .query_row(params![kind, id], |r| r.get(0))?)
}

/// Forgets the count of `(kind, id)`: a process finished it, or it was failed for good.
pub fn forget(conn: &Connection, kind: &str, id: &str) -> Result<()> {
    Ok(conn
        .prepare_cached("DELETE FROM interrupted_work WHERE kind = ?1 AND item_id = ?2")?
        .execute(params![kind, id])
        .map(drop)?)
}
