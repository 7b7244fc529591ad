//! Schema migrations from `migrations/`, embedded in the binary at compile time.

use rusqlite::Connection;

use super::DbError;

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
}
