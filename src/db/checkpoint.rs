//! Checkpoints on a thread of their own, so the writer does not copy the write-ahead log back
//! into the database file in the middle of answering requests.
//!
//! SQLite's automatic checkpoint runs inside the `COMMIT` that takes the log past 1,000 pages:
//! under `/v1/track`'s load that was 17 % of the writer thread's time (half of it the two
//! `fsync`s), with every request of that transaction waiting on it. Here the writer's
//! connection reports the log's length after each commit ([`Checkpoints::after_commit`]) and
//! wakes the checkpointer once 1,000 pages have been added since its last pass; the
//! checkpointer's PASSIVE checkpoint on its own connection runs beside the writer without
//! blocking it.
//!
//! A checkpoint that runs while the writer appends leaves the pages appended meanwhile, and
//! SQLite starts the log over only when a write begins on a log copied to its end: under
//! steady load the file would grow without end, and every reader would search a longer log. So
//! once the checkpointer has copied all but a few pages ([`TAIL_PAGES`]), the writer copies
//! those itself between two transactions, and the next transaction starts the log over (unless
//! a reader still uses the log; then the checkpointer goes on as before). Should the
//! checkpointer fall [`BEHIND_LIMIT`] pages behind, the writer checkpoints as SQLite would.

use super::error::Result;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// Pages added to the log that make a checkpoint worth its two `fsync`s: SQLite's own default.
pub const PASS_PAGES: i64 = 1_000;
/// Pages left behind by the checkpointer that the writer copies itself, to start the log over.
pub const TAIL_PAGES: i64 = PASS_PAGES / 4;
/// Pages not yet copied at which the writer checkpoints itself.
pub const BEHIND_LIMIT: i64 = 4 * PASS_PAGES;

thread_local! {
    /// The log's length in pages after the last commit on this thread's connection.
    static WAL_PAGES: Cell<Option<i64>> = const { Cell::new(None) };
}

fn record(_: &Wal, pages: c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(Some(pages.into())));
    Ok(())
}

/// The writer's side: what it does after each commit.
pub struct Checkpoints {
    checkpointer: Checkpointer,
    /// The log's length after the previous commit: a shorter one was started over.
    last: i64,
    /// Pages copied when the writer last checkpointed this log itself.
    tailed: i64,
}

impl Checkpoints {
    /// Installs the hook that reports the log's length on `conn`, the connection of the
    /// thread that will call [`Self::after_commit`]; this replaces SQLite's own checkpoint on
    /// commit, which used the same hook.
    pub fn install(conn: &Connection, checkpointer: Checkpointer) -> Checkpoints {
        conn.wal_hook(Some(record));
        Checkpoints { checkpointer, last: 0, tailed: 0 }
    }

    /// Wakes the checkpointer, or copies the rest of the log on `conn` (see the module's
    /// documentation). Call after each commit.
    pub fn after_commit(&mut self, conn: &Connection) {
        let Some(pages) = WAL_PAGES.with(Cell::take) else { return };
        if pages < self.last {
            self.checkpointer.copied.store(0, Ordering::Relaxed);
            self.tailed = 0;
        }
        self.last = pages;
        // A figure from a pass over an earlier log can exceed this one's length.
        let copied = self.checkpointer.copied.load(Ordering::Relaxed).min(pages);
        let behind = pages - copied;
        // The tail once after each pass: while a reader keeps the log from starting over, a
        // checkpoint after every commit would cost two `fsync`s each.
        if (copied > self.tailed && behind <= TAIL_PAGES) || behind >= BEHIND_LIMIT {
            match checkpoint(conn) {
                Ok(Some(done)) => {
                    self.checkpointer.copied.store(done, Ordering::Relaxed);
                    self.tailed = done;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("checkpoint failed: {e}"),
            }
        } else if behind >= PASS_PAGES {
            let _ = self.checkpointer.wake.try_send(());
        }
    }
}

/// The checkpointer thread's handle.
pub struct Checkpointer {
    wake: SyncSender<()>,
    /// Pages of the log copied into the database by the last checkpoint.
    copied: Arc<AtomicI64>,
}

impl Checkpointer {
    /// Starts the thread with its own connection; it ends when the handle is dropped.
    pub fn start(conn: Connection) -> std::io::Result<Checkpointer> {
        let (wake, woken) = sync_channel(1);
        let copied = Arc::new(AtomicI64::new(0));
        let progress = copied.clone();
        std::thread::Builder::new().name("tidings-db-ckpt".into()).spawn(move || {
            // A wake-up sent while a pass runs waits for it; later ones are dropped.
            while let Ok(()) = woken.recv() {
                match checkpoint(&conn) {
                    Ok(Some(done)) => progress.store(done, Ordering::Relaxed),
                    Ok(None) => {}
                    Err(e) => tracing::warn!("background checkpoint failed: {e}"),
                }
            }
        })?;
        Ok(Checkpointer { wake, copied })
    }
}

/// Runs a PASSIVE checkpoint on `conn`: how many pages of the log are now copied into the
/// database, or `None` when SQLite reports no figures: another connection's checkpoint was
/// running (a PASSIVE one does not wait for it), or the database is not in WAL mode.
pub fn checkpoint(conn: &Connection) -> Result<Option<i64>> {
    let copied: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(2))?;
    Ok((copied >= 0).then_some(copied))
}

#[cfg(test)]
mod tests;
