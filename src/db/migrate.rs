//! Schema migrations from `migrations/`, embedded in the binary at compile time.

use rusqlite::Connection;

use super::error::DbError;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Applies every pending migration; returns how many were applied.
pub fn run(conn: &mut Connection) -> Result<usize, DbError> {
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
