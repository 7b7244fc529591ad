//! The files that hold secrets (the database holds the session and link signing secrets, DKIM
//! keys and password hashes): the data directory is created 0700, and the database, its WAL and
//! SHM files and backups are 0600 whatever the umask says.
//!
//! SQLite gives the WAL and SHM files the mode of the database file, so creating the database
//! file 0600 before SQLite opens it is enough for all three; files left more open by an earlier
//! version are tightened at start.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) with mode 0700; an existing directory is left as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Creates an empty file with mode 0600; fails if it exists.
pub fn create_private_file(path: &Path) -> io::Result<()> {
    OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(path).map(drop)
}

/// Makes the database file exist with mode 0600, and takes group and other access away from it
/// and from its `-wal` and `-shm` files where an earlier start left them.
pub fn secure_database(path: &Path) -> io::Result<()> {
    match OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    for suffix in ["", "-wal", "-shm"] {
        let file = path.with_file_name(format!(
            "{}{suffix}",
            path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
        ));
        let Ok(meta) = std::fs::metadata(&file) else { continue };
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(&file, Permissions::from_mode(FILE_MODE))?;
            tracing::info!(file = %file.display(), "took group and other access away from the database file");
        }
    }
    Ok(())
}

/// Copies the database at `database` into `to` (an empty file, or none) as one consistent
/// snapshot, waiting up to `busy_timeout_ms` for a writer; the running server may keep writing.
pub fn vacuum_into(database: &Path, to: &Path, busy_timeout_ms: u32) -> Result<(), super::error::DbError> {
    let conn = rusqlite::Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.busy_timeout(std::time::Duration::from_millis(busy_timeout_ms.into()))?;
    conn.execute("VACUUM INTO ?1", [to.to_string_lossy()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_files_are_private_and_old_ones_are_tightened() {
        let dir = tempfile::TempDir::new().unwrap();
        let data = dir.path().join("a/b");
        create_private_dir(&data).unwrap();
        assert_eq!(mode(&data), 0o700);
        let db = data.join("t.db");
        secure_database(&db).unwrap();
        assert_eq!(mode(&db), 0o600);
        // Files an earlier version left readable by others.
        for file in ["t.db", "t.db-wal", "t.db-shm"] {
            let path = data.join(file);
            std::fs::write(&path, b"").unwrap();
            std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        }
        secure_database(&db).unwrap();
        for file in ["t.db", "t.db-wal", "t.db-shm"] {
            assert_eq!(mode(&data.join(file)), 0o600, "{file}");
        }
        assert!(create_private_file(&db).is_err(), "an existing file is not replaced");
    }
}
