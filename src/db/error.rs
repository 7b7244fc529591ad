//! The error of every query function: [`DbError`], and what it says about the write that failed.

/// What can go wrong below the query functions.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("migration: {0}")]
    Migration(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("blocking task: {0}")]
    Join(String),
    #[error("the transaction did not commit: {0}")]
    Commit(String),
    /// A row the schema promises is absent (named here).
    #[error("missing: {0}")]
    Missing(String),
}

/// What a query function returns.
pub type Result<T, E = DbError> = std::result::Result<T, E>;

impl DbError {
    /// The SQLite error underneath, if that is what failed.
    fn sqlite(&self) -> Option<&rusqlite::Error> {
        match self {
            DbError::Sqlite(e) => Some(e),
            _ => None,
        }
    }

    /// The message a trigger aborted the write with (`RAISE(ABORT, ...)`).
    pub fn trigger(&self) -> Option<&str> {
        match self.sqlite()? {
            rusqlite::Error::SqliteFailure(f, Some(message))
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_TRIGGER =>
            {
                Some(message)
            }
            _ => None,
        }
    }

    /// The category whose monthly cap a write went over: the `billing_*` triggers (migration
    /// V19) abort the insert with `BILLING_LIMIT_EXCEEDED:<category>`.
    pub fn over_cap(&self) -> Option<&str> {
        self.trigger()?.strip_prefix("BILLING_LIMIT_EXCEEDED:")
    }

    /// Whether the disk (or the file system the data is on) is full: SQLite's `SQLITE_FULL`, a
    /// commit that failed for it, or a file write refused with `ENOSPC`.
    pub fn is_disk_full(&self) -> bool {
        match self {
            DbError::Sqlite(rusqlite::Error::SqliteFailure(f, _)) => f.code == rusqlite::ErrorCode::DiskFull,
            DbError::Commit(why) => why.contains("database or disk is full"),
            DbError::Io(e) => e.kind() == std::io::ErrorKind::StorageFull,
            _ => false,
        }
    }

    /// What SQLite answers a write when the disk is full (for tests above `db`).
    #[cfg(test)]
    pub fn disk_full() -> DbError {
        DbError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        ))
    }

    /// Whether the write broke a unique key (a duplicate).
    pub fn is_unique_violation(&self) -> bool {
        matches!(self.sqlite(), Some(rusqlite::Error::SqliteFailure(f, _))
            if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY)
    }
}
