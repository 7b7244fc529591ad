//! Uploaded images: one row a file (`uploads`), the file itself under the data directory.

use rusqlite::{Connection, OptionalExtension, params};

use super::error::Result;

/// The bytes a project's images take.
pub fn kept_bytes(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT coalesce(sum(bytes), 0) FROM uploads WHERE project_id = ?1",
        [project],
        |r| r.get(0),
    )?)
}

pub fn insert(
    conn: &Connection,
    token: &str,
    project: &str,
    (content_type, extension): (&str, &str),
    bytes: i64,
    now: i64,
) -> Result<()> {
    conn.execute(
        "INSERT INTO uploads (token, project_id, content_type, extension, bytes, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![token, project, content_type, extension, bytes, now],
    )?;
    Ok(())
}

/// The project, content type and extension of the upload `token`.
pub fn by_token(conn: &Connection, token: &str) -> Result<Option<(String, String, String)>> {
    Ok(conn
        .query_row("SELECT project_id, content_type, extension FROM uploads WHERE token = ?1", [token], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?)
}
