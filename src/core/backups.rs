//! Backups and restores (issue 35, item 2). A backup is a consistent copy of the live database
//! (`VACUUM INTO`, one read transaction, so the server goes on writing), checked with SQLite's
//! integrity check before it counts, with the uploaded images copied beside it
//! (`<file>.uploads/`). The schedule (`[backup] schedule`) makes one per slot into `[backup]
//! path` and removes the oldest past `[backup] keep`. A restore checks the file, refuses while a
//! server holds the database, and keeps the database it replaces aside.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::db::{self, files};

/// A checked copy.
#[derive(Debug, Clone)]
pub struct Made {
    pub path: PathBuf,
    pub bytes: u64,
    /// Uploaded images copied beside it.
    pub uploads: usize,
}

/// The file name of a scheduled copy started at `now` (ms): `tidings-20261128-031500.db`.
pub fn file_name(now: i64) -> String {
    let at = jiff::Timestamp::from_millisecond(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    format!("tidings-{}.db", at.strftime("%Y%m%d-%H%M%S"))
}

/// Where the uploads of the copy at `to` go.
pub fn uploads_beside(to: &Path) -> PathBuf {
    PathBuf::from(format!("{}.uploads", to.display()))
}

/// Copies the database at `database` to `to` (which must not exist), checks the copy, and
/// copies the uploads in `uploads` beside it. A copy that fails its check is removed.
pub fn copy(database: &Path, to: &Path, uploads: &Path, busy_timeout_ms: u32) -> Result<Made, String> {
    if !database.is_file() {
        return Err(format!("there is no database at {}", database.display()));
    }
    if to.exists() {
        return Err(format!("{} already exists; choose a new file name", to.display()));
    }
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        files::create_private_dir(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    }
    // The copy holds every secret the database does: made 0600 before SQLite writes into it
    // (VACUUM INTO accepts an empty file).
    files::create_private_file(to).map_err(|e| format!("could not create {}: {e}", to.display()))?;
    let checked = files::vacuum_into(database, to, busy_timeout_ms)
        .map_err(|e| format!("the copy failed: {e}"))
        .and_then(|()| db::backups::integrity(to).map_err(|e| format!("the copy cannot be read: {e}")))
        .and_then(|verdict| match verdict.as_str() {
            "ok" => Ok(()),
            other => Err(format!("the copy failed its integrity check: {other}")),
        });
    if let Err(e) = checked {
        let _ = std::fs::remove_file(to);
        return Err(e);
    }
    let bytes = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    let uploads = copy_uploads(uploads, &uploads_beside(to))?;
    Ok(Made { path: to.to_path_buf(), bytes, uploads })
}

/// Copies the uploaded images (one directory per project) into `target`, when there are any.
/// Uploads are never changed once written, so copying them after the database leaves none that
/// the copy names missing, except any uploaded in between, which the copy does not name.
fn copy_uploads(uploads: &Path, target: &Path) -> Result<usize, String> {
    let Ok(projects) = std::fs::read_dir(uploads) else { return Ok(0) };
    let failed = |e: std::io::Error| format!("could not copy the uploads to {}: {e}", target.display());
    let mut copied = 0;
    for project in projects {
        let project = project.map_err(failed)?;
        if !project.file_type().map_err(failed)?.is_dir() {
            continue;
        }
        let into = target.join(project.file_name());
        files::create_private_dir(&into).map_err(failed)?;
        for file in std::fs::read_dir(project.path()).map_err(failed)? {
            let file = file.map_err(failed)?;
            let name = file.file_name();
            // Half-written files (`.<token>.part`) are not uploads yet.
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            std::fs::copy(file.path(), into.join(&name)).map_err(failed)?;
            copied += 1;
        }
    }
    Ok(copied)
}

/// Removes a copy and its uploads.
pub fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    match std::fs::remove_dir_all(uploads_beside(path)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// Where the database it replaced (and its uploads) were put; none when there was none.
    pub previous: Option<PathBuf>,
    pub uploads: usize,
    pub version: i64,
}

/// Puts the backup `file` in place of the configured database: the file must pass SQLite's
/// integrity check and come from this version or an earlier one (it is migrated at the next
/// start), and no server may hold the database. The database it replaces, with its log and its
/// uploads, is moved aside to `<database>.before-restore-<time>`.
pub fn restore(config: &Config, file: &Path, now: i64) -> Result<Restored, String> {
    if !file.is_file() {
        return Err(format!("there is no file at {}", file.display()));
    }
    match db::backups::integrity(file) {
        Ok(verdict) if verdict == "ok" => {}
        Ok(verdict) => return Err(format!("{} failed its integrity check: {verdict}", file.display())),
        Err(e) => return Err(format!("{} is not a Tidings database: {e}", file.display())),
    }
    let version =
        db::backups::schema_version(file).map_err(|e| format!("{} cannot be read: {e}", file.display()))?;
    let known = db::migrate::latest();
    if version > known {
        return Err(format!(
            "{} is at schema version {version}, newer than this binary's {known} (Tidings {}); restore it with the version that made it",
            file.display(),
            env!("CARGO_PKG_VERSION")
        ));
    }
    let database = config.database_path();
    if let Some(dir) = database.parent().filter(|d| !d.as_os_str().is_empty()) {
        files::create_private_dir(dir).map_err(|e| format!("could not create {}: {e}", dir.display()))?;
    }
    let _lock = crate::lock::acquire(&database).map_err(|why| format!("{why}; stop the server first"))?;
    let stamp = file_name(now).trim_start_matches("tidings-").trim_end_matches(".db").to_string();
    let aside = PathBuf::from(format!("{}.before-restore-{stamp}", database.display()));
    let uploads = config.uploads_dir();
    let mut previous = None;
    if database.exists() {
        for suffix in ["", "-wal", "-shm"] {
            let from = PathBuf::from(format!("{}{suffix}", database.display()));
            if from.exists() {
                let to = PathBuf::from(format!("{}{suffix}", aside.display()));
                std::fs::rename(&from, &to)
                    .map_err(|e| format!("could not move {} aside: {e}", from.display()))?;
            }
        }
        if uploads.exists() {
            std::fs::rename(&uploads, uploads_beside(&aside))
                .map_err(|e| format!("could not move {} aside: {e}", uploads.display()))?;
        }
        previous = Some(aside);
    }
    files::create_private_file(&database)
        .map_err(|e| format!("could not create {}: {e}", database.display()))?;
    std::fs::copy(file, &database).map_err(|e| format!("could not copy {}: {e}", file.display()))?;
    let restored_uploads = copy_uploads(&uploads_beside(file), &uploads)?;
    Ok(Restored { previous, uploads: restored_uploads, version })
}

#[cfg(test)]
mod tests {
    #[test]
    fn copies_are_named_by_their_time() {
        assert_eq!(super::file_name(1795835700000), "tidings-20261128-031500.db");
        assert_eq!(super::file_name(0), "tidings-19700101-000000.db");
    }
}
