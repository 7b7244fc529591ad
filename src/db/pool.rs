//! The readers' pool: connections opened when needed, and all but one closed when the server goes
//! quiet.
//!
//! Every SQLite connection holds its own copy of the parsed schema (about 0.4 MiB for Tidings'
//! 260 tables, indexes and triggers) besides its page cache. Eight opened at start made 3.4 MiB
//! of the idle server's 27 (issue 36). So the pool opens none at start, one whenever a request
//! or a job finds none idle, and [`Db::release_memory`](super::Db::release_memory), run once the
//! server is quiet after being busy, closes the idle ones beyond [`KEPT_WHEN_QUIET`]: r2d2
//! closes a connection handed back while its manager calls it broken, and [`Manager`] does so
//! for as many as it was told to retire. The one kept is closed too once unused for
//! [`IDLE_TIMEOUT`], as is any other. (r2d2's own floor, `min_idle`, stays at zero: it opens a
//! connection every time one taken leaves fewer idle than that.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

/// Idle connections a quiet spell leaves open.
pub const KEPT_WHEN_QUIET: usize = 1;
/// How long a pooled connection stays open unused, should no quiet spell close it first (r2d2
/// looks every 30 seconds).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// SQLite's connection manager, which retires connections on request.
pub struct Manager {
    sqlite: SqliteConnectionManager,
    retiring: Arc<AtomicUsize>,
}

impl Manager {
    /// The manager, and the handle that tells it how many connections handed back to close.
    pub fn new(sqlite: SqliteConnectionManager) -> (Manager, Retire) {
        let retiring = Arc::new(AtomicUsize::new(0));
        (Manager { sqlite, retiring: retiring.clone() }, Retire(retiring))
    }
}

/// Tells the pool's [`Manager`] to close the next connections handed back.
#[derive(Clone)]
pub struct Retire(Arc<AtomicUsize>);

impl Retire {
    /// The next `n` connections handed back are closed instead of kept.
    pub fn next(&self, n: usize) {
        self.0.store(n, Ordering::SeqCst);
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Connection;
    type Error = rusqlite::Error;

    fn connect(&self) -> Result<Connection, rusqlite::Error> {
        self.sqlite.connect()
    }

    fn is_valid(&self, conn: &mut Connection) -> Result<(), rusqlite::Error> {
        self.sqlite.is_valid(conn)
    }

    /// Called for each connection handed back: a retired one counts as broken, so r2d2 closes it.
    fn has_broken(&self, _: &mut Connection) -> bool {
        self.retiring.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }
}
