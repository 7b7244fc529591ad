//! One server per database (appliance.md §12): `serve` holds an exclusive lock on a file beside
//! the database for as long as it runs. A second `serve` on the same data refuses to start and
//! names the holder's pid. Because of the lock, work leased by an earlier process is known to be
//! abandoned at start ([`crate::scheduler::take_over`]) instead of waiting for its lease to run out.
//!
//! The lock is the operating system's (`flock`), so it goes away with the process however it
//! ends, kill -9 included; the pid written into the file is only there to be named.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct DataLock {
    _file: File,
    pub path: PathBuf,
}

/// The lock file of the database at `database`.
pub fn lock_path(database: &Path) -> PathBuf {
    let name = database.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    database.with_file_name(format!("{name}.lock"))
}

/// Takes the lock of the database at `database` (its directory must exist), or says who has it.
pub fn acquire(database: &Path) -> Result<DataLock, String> {
    let path = lock_path(database);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(crate::db::files::FILE_MODE)
        .open(&path)
        .map_err(|e| format!("could not open the lock file {}: {e}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let who =
                if holder.is_empty() { "another process".to_string() } else { format!("process {holder}") };
            return Err(format!(
                "another Tidings server ({who}) is already using {}; stop it first (one server per database)",
                database.display()
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(format!("could not lock {}: {e}", path.display()));
        }
    }
    let written = file
        .set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| writeln!(file, "{}", std::process::id()))
        .and_then(|()| file.flush());
    if let Err(e) = written {
        tracing::warn!(file = %path.display(), "could not write the pid into the lock file: {e}");
    }
    Ok(DataLock { _file: file, path })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_and_named() {
        let dir = tempfile::TempDir::new().unwrap();
        let db = dir.path().join("tidings.db");
        let held = acquire(&db).unwrap();
        assert_eq!(held.path, dir.path().join("tidings.db.lock"));
        let e = acquire(&db).unwrap_err();
        assert!(e.contains(&format!("process {}", std::process::id())), "{e}");
        drop(held);
        assert!(acquire(&db).is_ok(), "released when dropped");
    }
}
