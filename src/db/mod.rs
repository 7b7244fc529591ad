//! The SQLite pool, its pragmas, and the one funnel through which async code reaches it.
//!
//! Async code never touches rusqlite directly: [`Db::run`] and [`Db::write`] take a permit from a
//! semaphore sized like the pool, then run the closure on a blocking thread, so executor threads
//! never wait on the pool or on SQLite. [`Db::write`] hands its closure to the writer thread
//! ([`writer`]), which groups the writes waiting at the time into one IMMEDIATE transaction, each
//! in its own savepoint, and answers each once that transaction has committed. SQLite lets one
//! writer in at a time anyway, and its busy handler waits by sleeping, so a queue in front of the
//! lock with one commit per group is much faster under load than many threads taking turns.
//!
//! The submodules hold plain synchronous query functions on `&Connection`, so several of them can
//! share one transaction.

pub mod ab_tests;
pub mod account_tokens;
pub mod analytics_views;
pub mod audience;
pub mod backups;
pub mod batches;
pub mod billing;
pub mod branding;
pub mod campaigns;
pub mod checkpoint;
pub mod consent;
pub mod contact_inserts;
pub mod contact_jobs;
pub mod contacts;
pub mod domains;
pub mod effects;
pub mod email_parts;
pub mod emails;
pub mod engagements;
pub mod erasure;
pub mod error;
pub mod events;
pub mod executions;
pub mod exports;
pub mod fair;
pub mod fields;
pub mod files;
pub mod forms;
pub mod functions;
pub mod idempotency;
pub mod ids;
pub mod inbound;
pub mod interruptions;
pub mod invitations;
pub mod jobs;
pub mod keys;
pub mod migrate;
pub mod outbox;
pub mod pool;
pub mod projects;
pub mod refs;
pub mod reputation;
pub mod retention;
pub mod rollups;
pub mod segments;
pub mod sending;
pub mod sessions;
pub mod settings;
pub mod smtp_credentials;
pub mod sso;
pub mod suppression_list;
pub mod suppressions;
pub mod templates;
#[cfg(test)]
pub mod testing;
pub mod timeline;
pub mod topics;
pub mod tracking_domains;
pub mod uploads;
pub mod users;
pub mod warmups;
pub mod webhooks;
pub mod wipe;
pub mod workflows;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use r2d2::PooledConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::Semaphore;

pub use error::{DbError, Result};
pub use ids::new_id;

/// What the layers above hold while they work in the database: a connection, inside the
/// writer's transaction for writes. Core names this, never the driver's type.
pub type Tx = rusqlite::Connection;

/// The shared database handle: cheap to clone.
#[derive(Clone)]
pub struct Db {
    pool: r2d2::Pool<pool::Manager>,
    retire: pool::Retire,
    permits: Arc<Semaphore>,
    writer: writer::Writer,
    wakers: effects::Wakers,
    path: PathBuf,
}

impl Db {
    /// Opens (creating if needed) the database file and its directory, private to this user
    /// ([`files`]), switches it to WAL, and builds a pool whose connections all carry the pragmas.
    pub fn open(path: &Path, pool_size: u32, busy_timeout_ms: u32) -> Result<Db, DbError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            files::create_private_dir(dir)?;
        }
        files::secure_database(path)?;
        {
            // journal_mode is a property of the file: set it once, before the pool exists.
            let conn = Connection::open(path)?;
            conn.busy_timeout(Duration::from_millis(busy_timeout_ms.into()))?;
            // Before WAL, which writes the first page of a new file: a new database gives the
            // pages the retention job frees back to the file system; an older one is rewritten
            // so here when it is small, else by `tidings migrate`.
            if !retention::enable_space_return(&conn, Some(retention::REWRITE_AT_START_PAGES))? {
                tracing::warn!(
                    "the database file does not give freed space back; run `tidings migrate` while the server is stopped to rewrite it once"
                );
            }
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                tracing::warn!(mode, "SQLite refused WAL mode; concurrent readers will block on writes");
            }
        }
        let (manager, retire) = pool::Manager::new(
            SqliteConnectionManager::file(path).with_init(move |c| prepare(c, busy_timeout_ms)),
        );
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .connection_timeout(Duration::from_secs(30))
            // A local file's connection does not go stale; testing it on every checkout was a
            // statement per query.
            .test_on_check_out(false)
            // Opened when needed, closed when quiet ([`pool`]).
            .min_idle(Some(0))
            .idle_timeout(Some(pool::IDLE_TIMEOUT))
            .build(manager)?;
        let open = |path: &Path| -> Result<Connection, DbError> {
            let conn = Connection::open(path)?;
            prepare(&conn, busy_timeout_ms)?;
            Ok(conn)
        };
        let wakers = effects::Wakers::default();
        Ok(Db {
            pool,
            retire,
            permits: Arc::new(Semaphore::new(pool_size as usize)),
            writer: writer::Writer::start(
                open(path)?,
                |conn| contacts::index_pending(conn).map(drop),
                Some(checkpoint::Checkpointer::start(open(path)?)?),
                wakers.clone(),
            )?,
            wakers,
            path: path.to_path_buf(),
        })
    }

    /// The handles that wake the background workers after a commit ([`effects`]).
    pub fn wakers(&self) -> &effects::Wakers {
        &self.wakers
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A connection for synchronous callers (the CLI, start-up). Never call this on an executor.
    pub fn conn(&self) -> Result<PooledConnection<pool::Manager>, DbError> {
        Ok(self.pool.get()?)
    }

    /// Runs `f` with a connection on a blocking thread.
    pub async fn run<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        self.run_boxed(Box::new(move |conn| drop(answer.send(f(conn))))).await?;
        answered.await.map_err(|_| E::from(DbError::Join("a read ended without its answer".into())))?
    }

    /// [`Db::run`] for a function of any type: one blocking task's code for every read, where a
    /// task of each closure's own type, here and in [`crate::core::blocking`], took 0.7 MB more
    /// of the release binary. The function's answer goes back by its own channel; an error here
    /// is the pool's, or a panic's.
    async fn run_boxed(&self, f: Box<dyn FnOnce(&mut Connection) + Send>) -> Result<(), DbError> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|e| DbError::Join(e.to_string()))?;
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = pool.get().map_err(DbError::from)?;
            f(&mut conn);
            Ok(())
        })
        .await
        .map_err(|e| DbError::Join(e.to_string()))?
    }

    /// Runs `f` in a write transaction (see [`writer`]): its changes are kept when it returns
    /// `Ok` and undone when it returns `Err`, and the answer comes once they are committed.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.writer.write(f).await
    }

    /// Like [`Db::write`], for a write that may run more than once (its effects all in the
    /// database, its answer the last run's): it needs no savepoint of its own while the
    /// transaction holds only such writes ([`writer`]). For the ingest endpoints.
    pub async fn write_repeatable<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: Fn(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.writer.write_repeatable(f).await
    }

    /// Hands back what SQLite keeps between queries on every connection not in use: each
    /// connection's page cache (up to 2 MiB) and prepared statements (the writer alone keeps 64).
    /// The idle pooled connections beyond [`pool::KEPT_WHEN_QUIET`] are closed. Run once the
    /// server has gone quiet; the next queries read their pages and prepare their statements
    /// again, on connections opened again as needed.
    pub async fn release_memory(&self) -> Result<(), DbError> {
        fn release(conn: &Connection) -> rusqlite::Result<()> {
            conn.flush_prepared_statement_cache();
            conn.execute_batch("PRAGMA shrink_memory")
        }
        let (pool, retire) = (self.pool.clone(), self.retire.clone());
        tokio::task::spawn_blocking(move || {
            // Idle connections only: each taken one stays out until all are done.
            let idle: Vec<_> = std::iter::from_fn(|| pool.try_get()).collect();
            // Handed back in order when `idle` is dropped: the first ones are closed, the last
            // ones kept.
            let closed = idle.len().saturating_sub(pool::KEPT_WHEN_QUIET);
            idle[closed..].iter().try_for_each(|conn| release(conn))?;
            retire.next(closed);
            Ok::<_, rusqlite::Error>(())
        })
        .await
        .map_err(|e| DbError::Join(e.to_string()))??;
        self.write(|conn| Ok::<_, DbError>(release(conn)?)).await
    }

    /// Like [`Db::write`], in a transaction of its own without a savepoint: for the large
    /// batches of jobs (imports, campaign expansion, segment computation), which would otherwise
    /// cost time growing with the square of their size (see [`writer`]).
    pub async fn write_alone<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.writer.write_alone(f).await
    }
}

/// SQLite's settings for the whole process, made once by the server before it opens a
/// connection (SQLite takes them only before its first, and from one thread): memory statistics
/// off. With them on, every allocation SQLite makes or frees takes a global mutex to count it:
/// 7.7 % of the writer thread's time under `/v1/track` went to locking it. Tidings reads no
/// statistic, and with no heap limit set SQLite's memory release needs none.
#[allow(unsafe_code)]
pub fn configure_library() {
    // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int. Called from `serve` on its one thread before
    // any connection exists; should SQLite already be initialized, it answers SQLITE_MISUSE and
    // changes nothing.
    let answer = unsafe { rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0) };
    if answer != rusqlite::ffi::SQLITE_OK {
        tracing::warn!(answer, "SQLite kept its memory statistics on");
    }
}

/// What every connection is set up with.
fn prepare(c: &Connection, busy_timeout_ms: u32) -> rusqlite::Result<()> {
    c.busy_timeout(Duration::from_millis(busy_timeout_ms.into()))?;
    // rusqlite keeps 16 by default; the writer alone uses more than that on the send and
    // delivery paths, and a statement pushed out is parsed again on its next use.
    c.set_prepared_statement_cache_capacity(64);
    functions::register(c)?;
    c.execute_batch("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;")
}

/// A write transaction for code already on a blocking thread (the CLI, benchmarks, tests); it
/// takes SQLite's write lock like the writer thread does, waiting out `busy_timeout`.
pub fn write_tx<T, E, F>(conn: &mut Connection, f: F) -> Result<T, E>
where
    F: FnOnce(&Transaction<'_>) -> Result<T, E>,
    E: From<DbError>,
{
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(DbError::from)?;
    let value = f(&tx)?;
    contacts::index_pending(&tx)?;
    tx.commit().map_err(DbError::from)?;
    Ok(value)
}

/// Runs `f` inside a savepoint of the caller's transaction: what it wrote stays when it returns
/// `Ok` and is undone when it returns `Err`, and the transaction goes on either way. The outer
/// error is the savepoint's own.
pub fn savepoint<T, E>(conn: &Connection, f: impl FnOnce() -> Result<T, E>) -> Result<Result<T, E>, DbError> {
    // From the statement cache: delivery records every outcome in one (scheduler::records).
    let exec = |sql: &str| writer::exec(conn, sql);
    exec("SAVEPOINT step")?;
    let result = f();
    match result {
        Ok(_) => exec("RELEASE step")?,
        Err(_) => {
            exec("ROLLBACK TO step")?;
            exec("RELEASE step")?;
        }
    }
    Ok(result)
}

/// Whether the database answers a trivial query.
pub fn ping(conn: &Connection) -> Result<(), DbError> {
    conn.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?;
    Ok(())
}

/// A `LIKE` pattern (with `ESCAPE '\\'`) matching `text` anywhere, wildcards in it taken literally.
pub fn contains_pattern(text: &str) -> String {
    format!("%{}%", text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"))
}

/// One page of a filtered list: the rows `SELECT {columns} FROM {table}{filter} ORDER BY
/// {order} LIMIT … OFFSET …` read by `from_row`, and the number of rows the filter matches.
/// `filter` starts with ` WHERE` and uses `?1`… for `args`.
pub fn paged<T>(
    conn: &rusqlite::Connection,
    query: (&str, &str, &str, &str),
    mut args: Vec<rusqlite::types::Value>,
    (limit, offset): (i64, i64),
    from_row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<(Vec<T>, i64)> {
    let (table, columns, filter, order) = query;
    let total: i64 = conn
        .prepare_cached(&format!("SELECT count(*) FROM {table}{filter}"))?
        .query_row(rusqlite::params_from_iter(args.clone()), |r| r.get(0))?;
    args.push(limit.into());
    args.push(offset.into());
    let sql = format!(
        "SELECT {columns} FROM {table}{filter} ORDER BY {order} LIMIT ?{} OFFSET ?{}",
        args.len() - 1,
        args.len()
    );
    let rows = conn
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(args), from_row)?
        .collect::<Result<_, _>>()?;
    Ok((rows, total))
}

/// What a page list of a project's named rows (templates, campaigns) asks for.
pub struct ListQuery {
    pub project: String,
    /// A column that must hold a value (`type`, `status`).
    pub only: Option<(&'static str, String)>,
    /// Text to find, case-insensitively, in any of the searched columns.
    pub search: Option<String>,
    /// `name`, `created_at` or `updated_at`.
    pub sort: &'static str,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
}

/// One page of `table`'s rows of a project as `q` asks, and how many match: [`paged`] with the
/// filter, search (in `searched` columns) and order every such list has.
pub fn list_page<T>(
    conn: &rusqlite::Connection,
    (table, columns, searched): (&str, &str, &[&str]),
    q: &ListQuery,
    from_row: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<(Vec<T>, i64)> {
    let mut filter = String::from(" WHERE project_id = ?1");
    let mut args: Vec<rusqlite::types::Value> = vec![q.project.clone().into()];
    if let Some((column, value)) = &q.only {
        args.push(value.clone().into());
        filter.push_str(&format!(" AND {column} = ?{}", args.len()));
    }
    if let Some(search) = &q.search {
        args.push(contains_pattern(search).into());
        let n = args.len();
        let any: Vec<String> =
            searched.iter().map(|c| format!("coalesce({c}, '') LIKE ?{n} ESCAPE '\\'")).collect();
        filter.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    let dir = if q.descending { "DESC" } else { "ASC" };
    let sort = if q.sort == "name" { "name COLLATE NOCASE" } else { q.sort };
    let order = format!("{sort} {dir}, id {dir}");
    paged(conn, (table, columns, &filter, &order), args, (q.limit, q.offset), from_row)
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_upgrade_stores_contact_data_as_jsonb_and_reads_it_the_same() {
        let mut conn = rusqlite::Connection::open_in_memory().unwrap();
        super::migrate::run_to(&mut conn, 48);
        conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        let data = serde_json::json!({
            "plan": "pro", "age": 36, "vip": true, "score": 1.5,
            "tags": ["a", "b\"c\\d"], "profile": { "tier": "gold", "since": null },
        });
        let indexing = super::contacts::Indexing::AtCommit;
        let map = data.as_object().unwrap().clone();
        let contact = super::contacts::insert(&conn, "p", "ada@example.org", true, map, 1, indexing).unwrap();
        // Before V49 the object was stored as its JSON text.
        conn.execute("UPDATE contacts SET data = json(data)", []).unwrap();
        let kind = |conn: &rusqlite::Connection| {
            conn.query_row("SELECT typeof(data) FROM contacts", [], |r| r.get::<_, String>(0)).unwrap()
        };
        assert_eq!(kind(&conn), "text");
        super::migrate::run(&mut conn).unwrap();
        assert_eq!(kind(&conn), "blob");
        let read = super::contacts::by_id(&conn, "p", &contact.id).unwrap().unwrap();
        assert_eq!(serde_json::Value::Object(read.data), data);
    }

    #[tokio::test]
    async fn released_caches_leave_the_database_working() {
        let dir = tempfile::TempDir::new().unwrap();
        let db = super::Db::open(&dir.path().join("m.db"), 4, 1000).unwrap();
        super::migrate::run(&mut db.conn().unwrap()).unwrap();
        let add = |n: i64| {
            let db = db.clone();
            async move {
                db.write(move |c| Ok::<_, super::DbError>(c.execute("INSERT INTO t (n) VALUES (?1)", [n])?))
                    .await
                    .unwrap()
            }
        };
        db.write(|c| Ok::<_, super::DbError>(c.execute_batch("CREATE TABLE t (n INTEGER)")?)).await.unwrap();
        add(1).await;
        let count = || {
            db.run(|c| {
                Ok::<i64, super::DbError>(
                    c.prepare_cached("SELECT count(*) FROM t")?.query_row([], |r| r.get(0))?,
                )
            })
        };
        assert_eq!(count().await.unwrap(), 1);
        db.release_memory().await.unwrap();
        add(2).await;
        assert_eq!(count().await.unwrap(), 2, "statements are prepared again after the release");
    }

    /// A read's answer, its error and its panic each reach its caller, and none keeps its
    /// connection or its turn: with one connection, the reads after them go on.
    #[tokio::test]
    async fn a_read_that_fails_or_panics_answers_its_caller_and_the_next_reads_go_on() {
        let dir = tempfile::TempDir::new().unwrap();
        let db = super::Db::open(&dir.path().join("r.db"), 1, 1000).unwrap();
        let one = || db.run(|c| Ok::<i64, super::DbError>(c.query_row("SELECT 1", [], |r| r.get(0))?));
        assert_eq!(one().await.unwrap(), 1);
        let failed =
            db.run(|c| Ok::<i64, super::DbError>(c.query_row("SELECT nope", [], |r| r.get(0))?)).await;
        assert!(matches!(failed, Err(super::DbError::Sqlite(_))), "{failed:?}");
        let panicked = db.run(|_| -> Result<i64, super::DbError> { panic!("a read that panics") }).await;
        assert!(matches!(panicked, Err(super::DbError::Join(_))), "{panicked:?}");
        for _ in 0..3 {
            assert_eq!(one().await.unwrap(), 1);
        }
    }

    /// Connections are opened as they are asked for, and a quiet spell closes the idle ones but
    /// one; the pool goes on working and opens them again.
    #[tokio::test]
    async fn a_quiet_spell_closes_the_idle_connections_but_one() {
        let dir = tempfile::TempDir::new().unwrap();
        let db = super::Db::open(&dir.path().join("q.db"), 8, 1000).unwrap();
        let open = || db.pool.state().connections;
        assert_eq!(open(), 0, "none opened at start");
        super::migrate::run(&mut db.conn().unwrap()).unwrap();
        let held: Vec<_> = (0..4).map(|_| db.conn().unwrap()).collect();
        assert!(open() >= 4);
        drop(held);
        db.release_memory().await.unwrap();
        assert_eq!(open() as usize, super::pool::KEPT_WHEN_QUIET);
        let held: Vec<_> = (0..3).map(|_| db.conn().unwrap()).collect();
        let one: i64 = held[2].query_row("SELECT 1", [], |r| r.get(0)).unwrap();
        assert_eq!((one, db.pool.state().idle_connections), (1, open() - 3));
    }

    /// A batch of writes, each in a savepoint (how delivery records its outcomes): the one that
    /// fails is undone alone, the others stay, and the savepoint statements come from the cache
    /// (a failed one leaves none of them mid-step).
    #[tokio::test]
    async fn a_failed_savepoint_undoes_itself_alone() {
        let dir = tempfile::TempDir::new().unwrap();
        let db = super::Db::open(&dir.path().join("s.db"), 4, 1000).unwrap();
        super::migrate::run(&mut db.conn().unwrap()).unwrap();
        db.write(|c| Ok::<_, super::DbError>(c.execute_batch("CREATE TABLE t (n INTEGER CHECK (n != 2))")?))
            .await
            .unwrap();
        let results = db
            .write(|c| {
                let results: Vec<bool> = (1..=4)
                    .map(|n| {
                        super::savepoint(c, || {
                            c.execute("INSERT INTO t (n) VALUES (?1)", [n * 10])?;
                            c.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                            Ok::<_, super::DbError>(())
                        })
                        .unwrap()
                        .is_ok()
                    })
                    .collect();
                Ok::<_, super::DbError>(results)
            })
            .await
            .unwrap();
        assert_eq!(results, [true, false, true, true]);
        let kept: Vec<i64> = db
            .run(|c| {
                let mut stmt = c.prepare("SELECT n FROM t ORDER BY n")?;
                Ok::<_, super::DbError>(stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?)
            })
            .await
            .unwrap();
        assert_eq!(kept, [1, 3, 4, 10, 30, 40], "the second write's first insert is undone with it");
    }
}
