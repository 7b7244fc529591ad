//! The catalogue of a project's custom fields (`contact_fields`).

use rusqlite::{Connection, params};

use super::error::Result;

/// Forgets field `path` and every field under it (`path.…`).
pub fn forget(conn: &Connection, project: &str, path: &str) -> Result<()> {
    conn.execute(
        // A plain prefix test: as a LIKE pattern, `a_b` would also match `axb.c`.
        "DELETE FROM contact_fields WHERE project_id = ?1
           AND (path = ?2 OR substr(path, 1, length(?2) + 1) = ?2 || '.')",
        params![project, path],
    )?;
    Ok(())
}
