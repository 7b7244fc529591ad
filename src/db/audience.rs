//! The one keyset walk over an audience: a project's contacts in `seq` order after a cursor,
//! each with whether a compiled condition holds for it. Campaign expansion and segment
//! membership computations walk with it. Batches are sized by contacts visited, not matched,
//! so a narrow audience over a large project never holds the writer for a scan.

use rusqlite::{Connection, params_from_iter};

use crate::core::conditions::sql::Compiled;

/// A contact visited by a walk.
#[derive(Debug, Clone, PartialEq)]
pub struct Visited {
    pub seq: i64,
    pub id: String,
    pub email: String,
    pub matches: bool,
}

/// Up to `limit` contacts of `project` after `after` (a `seq`), in order, each with whether
/// `compiled` holds for it. Fewer than `limit` means the contacts ran out.
pub fn walk(
    conn: &Connection,
    project: &str,
    compiled: &Compiled,
    after: i64,
    limit: usize,
) -> rusqlite::Result<Vec<Visited>> {
    let mut params = compiled.params.clone();
    params.extend([project.to_string().into(), after.into(), (limit as i64).into()]);
    let query = format!(
        "SELECT c.seq, c.id, c.email, coalesce(({}), 0) FROM contacts c
         WHERE c.project_id = ? AND c.seq > ? ORDER BY c.seq LIMIT ?",
        compiled.sql
    );
    conn.prepare_cached(&query)?
        .query_map(params_from_iter(params), |r| {
            Ok(Visited { seq: r.get(0)?, id: r.get(1)?, email: r.get(2)?, matches: r.get(3)? })
        })?
        .collect()
}
