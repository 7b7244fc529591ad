//! Schema migrations from `migrations/`, embedded in the binary at compile time.

use rusqlite::Connection;

use super::error::DbError;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Applies the migrations up to `version` only: a database as an older binary left it.
#[cfg(test)]
pub fn run_to(conn: &mut Connection, version: i32) {
    embedded::migrations::runner().set_target(refinery::Target::Version(version)).run(conn).unwrap();
}

/// The newest migration this binary carries.
pub fn latest() -> i64 {
    embedded::migrations::runner().get_migrations().iter().map(|m| i64::from(m.version())).max().unwrap_or(0)
}

/// The newest migration applied to the database (0 for a new one).
pub fn applied(conn: &Connection) -> Result<i64, DbError> {
    let has_history: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'refinery_schema_history')",
        [],
        |r| r.get(0),
    )?;
    if !has_history {
        return Ok(0);
    }
    Ok(conn.query_row("SELECT coalesce(max(version), 0) FROM refinery_schema_history", [], |r| r.get(0))?)
}

/// The migrations that would run on the database, as `V<version>__<name>`, oldest first.
pub fn pending(conn: &Connection) -> Result<Vec<String>, DbError> {
    let applied = applied(conn)?;
    let mut pending: Vec<(i64, String)> = embedded::migrations::runner()
        .get_migrations()
        .iter()
        .filter(|m| i64::from(m.version()) > applied)
        .map(|m| (i64::from(m.version()), format!("V{}__{}", m.version(), m.name())))
        .collect();
    pending.sort();
    Ok(pending.into_iter().map(|(_, name)| name).collect())
}

/// What `tidings migrate --dry-run` reports of the database file at `path`, read only: the
/// version it is at, and the migrations that would run (a newer database is refused).
pub fn dry_run(path: &std::path::Path) -> Result<(i64, Vec<String>), DbError> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    check_not_newer(&conn)?;
    Ok((applied(&conn)?, pending(&conn)?))
}

/// Refuses a database that a newer binary has migrated: this one does not know its schema.
pub fn check_not_newer(conn: &Connection) -> Result<(), DbError> {
    let (applied, known) = (applied(conn)?, latest());
    if applied > known {
        return Err(DbError::Migration(format!(
            "the database is at schema version {applied}, newer than this binary's {known} (Tidings {}); run the newer binary, or restore a backup made by this version",
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok(())
}

/// Applies every pending migration; returns how many were applied. A database that a newer
/// binary migrated is refused, naming both versions.
pub fn run(conn: &mut Connection) -> Result<usize, DbError> {
    check_not_newer(conn)?;
    let report = embedded::migrations::runner().run(conn).map_err(|e| DbError::Migration(e.to_string()))?;
    for m in report.applied_migrations() {
        tracing::info!(version = m.version(), name = m.name(), "applied migration");
    }
    Ok(report.applied_migrations().len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn migrations_apply_once() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        assert!(super::run(&mut conn).unwrap() >= 1);
        assert_eq!(super::run(&mut conn).unwrap(), 0);
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='jobs'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables, 1);
    }

    #[test]
    fn an_upgrade_moves_unfinished_job_inputs_to_their_own_table() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::embedded::migrations::runner()
            .set_target(refinery::Target::Version(9))
            .run(&mut conn)
            .unwrap();
        conn.execute_batch(
            "PRAGMA foreign_keys = OFF;
             INSERT INTO contact_jobs (id, project_id, operation, status, input, cursor, created_at)
                 VALUES ('running', 'p', 'import', 'processing', X'656D61696C0A', 6, 1);
             INSERT INTO contact_jobs (id, project_id, operation, status, input, created_at)
                 VALUES ('done', 'p', 'import', 'completed', NULL, 1);",
        )
        .unwrap();
        super::run(&mut conn).unwrap();
        let input = crate::db::contact_jobs::input(&conn, "running").unwrap();
        assert_eq!(input.as_deref(), Some(&b"email\n"[..]));
        assert_eq!(crate::db::contact_jobs::input(&conn, "done").unwrap(), None);
        let job = crate::db::contact_jobs::by_id(&conn, "running").unwrap().unwrap();
        assert_eq!((job.status.as_str(), job.cursor), ("processing", 6), "progress kept");
    }

    #[test]
    fn the_search_index_merges_sixteen_segments_at_a_time() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::run(&mut conn).unwrap();
        let setting = |key: &str| -> i64 {
            conn.query_row("SELECT v FROM contacts_email_search_config WHERE k = ?1", [key], |r| r.get(0))
                .unwrap()
        };
        assert_eq!((setting("automerge"), setting("crisismerge")), (16, 64));
    }
}
