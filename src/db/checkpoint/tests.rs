//! The checkpointer driven by the writer, on a real WAL file.

use super::*;
use crate::db::error::DbError;
use crate::db::writer::Writer;
use std::path::Path;
use std::time::{Duration, Instant};

/// Pages in a file of `path` (the database, or with `suffix` `-wal` its log).
fn pages(path: &Path, suffix: &str) -> i64 {
    let file = format!("{}{suffix}", path.display());
    std::fs::metadata(file).map_or(0, |m| m.len() as i64 / 4096)
}

fn database() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("c.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY, b BLOB)").unwrap();
    (dir, path)
}

#[test]
fn the_checkpointer_copies_the_log_into_the_database_when_woken() {
    let (_dir, path) = database();
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    for n in 0..200 {
        conn.execute("INSERT INTO t (n, b) VALUES (?1, zeroblob(16000))", [n]).unwrap();
    }
    assert!(pages(&path, "") < 10, "nothing is copied without a checkpoint");
    let checkpointer = Checkpointer::start(Connection::open(&path).unwrap()).unwrap();
    checkpointer.wake.send(()).unwrap();
    let start = Instant::now();
    while checkpointer.copied.load(Ordering::Relaxed) == 0 {
        assert!(start.elapsed() < Duration::from_secs(10), "the checkpointer never ran");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(checkpointer.copied.load(Ordering::Relaxed) >= 800);
    assert!(pages(&path, "") >= 800, "the rows are in the database file");
}

#[test]
fn no_figures_without_a_log() {
    let conn = Connection::open_in_memory().unwrap();
    assert_eq!(checkpoint(&conn).unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_steady_writes_the_log_starts_over_instead_of_growing() {
    let (_dir, path) = database();
    let checkpointer = Checkpointer::start(Connection::open(&path).unwrap()).unwrap();
    let writer =
        Writer::start(Connection::open(&path).unwrap(), |_| Ok(()), Some(checkpointer), Default::default())
            .unwrap();
    // About 12,000 pages of writes, three times the most the log may hold.
    for n in 0..3_000i64 {
        writer
            .write(move |conn| {
                Ok::<_, DbError>(conn.execute("INSERT INTO t (n, b) VALUES (?1, zeroblob(16000))", [n])?)
            })
            .await
            .unwrap();
    }
    assert!(pages(&path, "") >= 9_000, "copied into the database: {} pages", pages(&path, ""));
    let log = pages(&path, "-wal");
    assert!(log <= BEHIND_LIMIT + TAIL_PAGES, "the log grew to {log} pages");
}
