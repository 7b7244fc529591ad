//! The writer: one thread that runs every [`super::Db::write`] of this process.
//!
//! Writes queue up while a transaction is being committed; the writer takes them all into the
//! next transaction, each in its own savepoint (so one that fails rolls back alone), and answers
//! each caller only after that transaction commits. A busy server thus commits once for many
//! requests instead of once per request, and no thread waits on SQLite's lock by sleeping.
//!
//! A job's large batch runs alone instead ([`Writer::write_alone`]): in a transaction of its
//! own, without a savepoint. Inside a savepoint every statement that opens a statement journal
//! (an insert into a table with a trigger, say) walks the savepoint's whole in-memory
//! sub-journal when it ends, so a batch of n such statements costs n² (measured with 5,000
//! inserts into a 200,000-row table: 137 µs a row in a savepoint, 20 µs without).

use super::error::Result;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::checkpoint::{Checkpointer, Checkpoints};
use super::effects::{self, Wakers};
use super::error::DbError;

/// Most writes in one transaction.
const MAX_BATCH: usize = 256;
/// A transaction takes no more writes after it has run this long.
const MAX_BATCH_TIME: Duration = Duration::from_millis(20);
/// For this long after it begins, a transaction waits up to [`GATHER_GAP`] for the next write
/// when the queue runs dry, so that requests answered a moment ago and coming back share it:
/// fewer commits, each writing the same hot pages (index edges, counters) once for more
/// requests. 1 ms and 200 µs took `/v1/track` from 16,100-16,400 to 17,900-18,800 req/s and
/// 61 to 53 µs of CPU a request (harness track step, binaries alternated); 3 ms and 500 µs
/// did worse than either.
const GATHER_TIME: Duration = Duration::from_millis(1);
const GATHER_GAP: Duration = Duration::from_micros(200);

/// A write waiting for the writer.
trait Work: Send {
    /// Whether it runs in a transaction of its own, without a savepoint.
    fn alone(&self) -> bool;
    /// Runs in the open transaction; returns the answer to send once it commits, or `None`
    /// when it failed (and has answered): its savepoint is rolled back, or for a write alone,
    /// the caller rolls back the transaction.
    fn run(self: Box<Self>, conn: &Connection) -> Option<Box<dyn Pending>>;
    /// The transaction could not start.
    fn abort(self: Box<Self>, why: &str);
}

/// An answer held until its transaction commits.
trait Pending: Send {
    fn committed(self: Box<Self>);
    fn failed(self: Box<Self>, why: &str);
}

struct Write<F, T, E> {
    f: F,
    alone: bool,
    reply: oneshot::Sender<Result<T, E>>,
}

struct Reply<T, E> {
    value: T,
    reply: oneshot::Sender<Result<T, E>>,
}

impl<F, T, E> Work for Write<F, T, E>
where
    F: FnOnce(&Connection) -> Result<T, E> + Send,
    T: Send + 'static,
    E: From<DbError> + Send + 'static,
{
    fn alone(&self) -> bool {
        self.alone
    }

    fn run(self: Box<Self>, conn: &Connection) -> Option<Box<dyn Pending>> {
        let Write { f, alone, reply } = *self;
        let outcome = (|| -> Result<T, E> {
            let guarded = || match catch_unwind(AssertUnwindSafe(|| f(conn))) {
                Ok(result) => result,
                Err(_) => Err(E::from(DbError::Join("a database write panicked".into()))),
            };
            if alone {
                return guarded();
            }
            exec(conn, "SAVEPOINT write").map_err(E::from)?;
            match guarded() {
                Ok(value) => match exec(conn, "RELEASE write") {
                    Ok(()) => Ok(value),
                    Err(e) => {
                        rollback(conn);
                        Err(E::from(e))
                    }
                },
                Err(e) => {
                    rollback(conn);
                    Err(e)
                }
            }
        })();
        match outcome {
            Ok(value) => Some(Box::new(Reply { value, reply })),
            Err(e) => {
                let _ = reply.send(Err(e));
                None
            }
        }
    }

    fn abort(self: Box<Self>, why: &str) {
        let _ = self.reply.send(Err(E::from(DbError::Commit(why.to_string()))));
    }
}

impl<T: Send, E: From<DbError> + Send> Pending for Reply<T, E> {
    fn committed(self: Box<Self>) {
        let _ = self.reply.send(Ok(self.value));
    }

    fn failed(self: Box<Self>, why: &str) {
        let _ = self.reply.send(Err(E::from(DbError::Commit(why.to_string()))));
    }
}

fn rollback(conn: &Connection) {
    if let Err(e) = exec(conn, "ROLLBACK TO write").and_then(|()| exec(conn, "RELEASE write")) {
        tracing::error!("could not roll back a failed write: {e}");
    }
}

/// What the writer runs last in every transaction, after the writes and before `COMMIT`; an
/// error fails the whole transaction.
pub type BeforeCommit = fn(&Connection) -> Result<()>;

/// The queue in front of the writer thread.
#[derive(Clone)]
pub struct Writer {
    queue: Sender<Box<dyn Work>>,
}

impl Writer {
    /// Starts the writer thread on `conn`; it ends when every handle is dropped. With a
    /// `checkpointer`, the log is checkpointed by it ([`super::checkpoint`]) instead of by SQLite in
    /// the writer's commits. After each commit it wakes the workers its writes asked for
    /// ([`effects`]) through `wakers`.
    pub fn start(
        conn: Connection,
        before_commit: BeforeCommit,
        checkpointer: Option<Checkpointer>,
        wakers: Wakers,
    ) -> Result<Writer, DbError> {
        let (queue, work) = channel::<Box<dyn Work>>();
        std::thread::Builder::new().name("tidings-db-writer".into()).spawn(move || {
            let checkpoints = checkpointer.map(|c| Checkpoints::install(&conn, c));
            run(conn, work, before_commit, checkpoints, wakers)
        })?;
        Ok(Writer { queue })
    }

    /// Runs `f` in the writer's transaction; answers once it is committed.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.send(f, false).await
    }

    /// Runs `f` in a transaction of its own, without a savepoint; answers once it is committed.
    /// For a job's large batch: see the module's documentation.
    pub async fn write_alone<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.send(f, true).await
    }

    async fn send<T, E, F>(&self, f: F, alone: bool) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let work: Box<dyn Work> = Box::new(Write { f, alone, reply });
        if self.queue.send(work).is_err() {
            return Err(E::from(DbError::Join("the database writer has stopped".into())));
        }
        answer.await.unwrap_or_else(|_| Err(E::from(DbError::Join("the database writer has stopped".into()))))
    }
}

/// Runs a statement without parameters from the connection's cache: the writer's own
/// `BEGIN`, `SAVEPOINT` and `RELEASE` run many thousand times a second under load, and
/// `execute_batch` parses its text on every call. [`super::savepoint`] uses it too.
pub(super) fn exec(conn: &Connection, sql: &str) -> Result<()> {
    Ok(conn.prepare_cached(sql)?.execute([]).map(drop)?)
}

fn run(
    conn: Connection,
    queue: Receiver<Box<dyn Work>>,
    before_commit: BeforeCommit,
    mut checkpoints: Option<Checkpoints>,
    wakers: Wakers,
) {
    // A write alone that arrived while a shared transaction was filling up goes next.
    let mut held: Option<Box<dyn Work>> = None;
    while let Some(first) = held.take().or_else(|| queue.recv().ok()) {
        if let Err(e) = exec(&conn, "BEGIN IMMEDIATE") {
            first.abort(&e.to_string());
            continue;
        }
        // What an earlier transaction that did not commit asked for is void.
        effects::take();
        let mut pending = Vec::new();
        if first.alone() {
            match first.run(&conn) {
                Some(answer) => pending.push(answer),
                None => {
                    roll_back_all(&conn);
                    continue;
                }
            }
        } else {
            let started = Instant::now();
            let mut next = Some(first);
            let mut taken = 0;
            while let Some(work) = next {
                pending.extend(work.run(&conn));
                taken += 1;
                next = if taken < MAX_BATCH && started.elapsed() < MAX_BATCH_TIME {
                    queue.try_recv().ok().or_else(|| {
                        if started.elapsed() < GATHER_TIME {
                            queue.recv_timeout(GATHER_GAP).ok()
                        } else {
                            None
                        }
                    })
                } else {
                    None
                };
                if next.as_ref().is_some_and(|w| w.alone()) {
                    held = next.take();
                }
            }
        }
        match before_commit(&conn).and_then(|()| exec(&conn, "COMMIT")) {
            Ok(()) => {
                wakers.fire(effects::take());
                pending.into_iter().for_each(|p| p.committed());
                if let Some(checkpoints) = &mut checkpoints {
                    checkpoints.after_commit(&conn);
                }
            }
            Err(e) => {
                let why = e.to_string();
                tracing::error!("a write transaction did not commit: {why}");
                roll_back_all(&conn);
                pending.into_iter().for_each(|p| p.failed(&why));
            }
        }
    }
}

fn roll_back_all(conn: &Connection) {
    if let Err(e) = conn.execute_batch("ROLLBACK") {
        tracing::error!("could not roll back: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> (Writer, tempfile::TempDir) {
        let dir = tempfile::TempDir::new().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)").unwrap();
        (Writer::start(conn, |_| Ok(()), None, Wakers::default()).unwrap(), dir)
    }

    fn count(dir: &tempfile::TempDir) -> i64 {
        Connection::open(dir.path().join("w.db"))
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_writes_at_once_each_commit_or_fail_alone() {
        let (writer, dir) = writer();
        let mut tasks = Vec::new();
        for n in 0..500i64 {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                writer
                    .write(move |conn| {
                        conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                        // Every tenth write changes its mind after writing: only it is undone.
                        if n % 10 == 0 {
                            return Err(DbError::Join(format!("refused {n}")));
                        }
                        Ok::<_, DbError>(n)
                    })
                    .await
            }));
        }
        let mut refused = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(_) => {}
                Err(DbError::Join(_)) => refused += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(refused, 50);
        assert_eq!(count(&dir), 450, "every accepted write is committed, every refused one undone");
    }

    #[tokio::test]
    async fn a_write_that_panics_is_an_error_and_the_writer_carries_on() {
        let (writer, dir) = writer();
        let panicked = writer
            .write(|conn| {
                conn.execute("INSERT INTO t (n) VALUES (1)", [])?;
                if conn.is_autocommit() {
                    return Ok::<_, DbError>(());
                }
                panic!("a bug in a write");
            })
            .await;
        assert!(matches!(panicked, Err(DbError::Join(_))));
        writer
            .write(|conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (2)", [])?))
            .await
            .unwrap();
        assert_eq!(count(&dir), 1);
    }

    #[tokio::test]
    async fn a_failing_before_commit_step_fails_the_transaction_and_keeps_nothing() {
        let dir = tempfile::TempDir::new().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)").unwrap();
        let writer =
            Writer::start(conn, |_| Err(rusqlite::Error::InvalidQuery.into()), None, Wakers::default())
                .unwrap();
        let answer =
            writer.write(|conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (1)", [])?)).await;
        assert!(matches!(answer, Err(DbError::Commit(_))), "{answer:?}");
        assert_eq!(count(&dir), 0);
    }

    #[tokio::test]
    async fn workers_are_woken_after_the_commit_that_asked_and_not_for_a_failed_transaction() {
        use crate::db::effects::{Wake, wake};
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)").unwrap();
        let wakers = Wakers::default();
        // A before-commit step that fails while t holds 13: that transaction never commits.
        let writer = Writer::start(
            conn,
            |c| match c.query_row("SELECT count(*) FROM t WHERE n = 13", [], |r| r.get::<_, i64>(0))? {
                0 => Ok(()),
                _ => Err(rusqlite::Error::InvalidQuery.into()),
            },
            None,
            wakers.clone(),
        )
        .unwrap();
        let refused = writer
            .write(|c| {
                c.execute("INSERT INTO t (n) VALUES (13)", [])?;
                wake(Wake::Delivery);
                Ok::<_, DbError>(())
            })
            .await;
        assert!(refused.is_err());
        let woken = tokio::time::timeout(Duration::from_millis(100), wakers.delivery.notified()).await;
        assert!(woken.is_err(), "a transaction that did not commit wakes nobody");

        let reader = Connection::open(&path).unwrap();
        let woken = wakers.delivery.notified();
        let jobs = wakers.jobs.notified();
        writer
            .write(|c| {
                c.execute("INSERT INTO t (n) VALUES (1)", [])?;
                wake(Wake::Delivery);
                Ok::<_, DbError>(())
            })
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), woken).await.expect("the delivery worker is woken");
        // By the time it wakes, what it was woken for is there to read.
        let n: i64 = reader.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 1);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), jobs).await.is_err(),
            "only who was asked for"
        );
    }

    #[tokio::test]
    async fn a_bad_statement_fails_its_write_only() {
        let (writer, dir) = writer();
        let bad =
            writer.write(|conn| Ok::<_, DbError>(conn.execute("INSERT INTO missing VALUES (1)", [])?)).await;
        assert!(matches!(bad, Err(DbError::Sqlite(_))));
        let dup = writer
            .write(|conn| {
                conn.execute("INSERT INTO t (n) VALUES (7)", [])?;
                Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (7)", [])?)
            })
            .await;
        assert!(dup.is_err());
        assert_eq!(count(&dir), 0, "the first insert of the failed write was undone too");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_alone_has_a_transaction_of_its_own_and_fails_alone() {
        let (writer, dir) = writer();
        let mut tasks = Vec::new();
        for n in 0..300i64 {
            let writer = writer.clone();
            tasks.push(tokio::spawn(async move {
                if n % 50 == 0 {
                    // A write alone runs outside any savepoint; every other one of them fails
                    // after writing, and only its own rows are undone.
                    writer
                        .write_alone(move |conn| {
                            assert!(conn.execute_batch("ROLLBACK TO write").is_err(), "no savepoint");
                            for k in 0..100 {
                                conn.execute("INSERT INTO t (n) VALUES (?1)", [10_000 + n * 100 + k])?;
                            }
                            if n % 100 == 0 {
                                return Err(DbError::Join(format!("refused {n}")));
                            }
                            Ok::<_, DbError>(())
                        })
                        .await
                } else {
                    writer
                        .write(move |conn| {
                            Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?)
                        })
                        .await
                        .map(drop)
                }
            }));
        }
        let answers: Vec<_> = rocket::futures::future::join_all(tasks).await;
        let refused = answers.into_iter().filter(|a| a.as_ref().unwrap().is_err()).count();
        assert_eq!(refused, 3, "0, 100 and 200");
        assert_eq!(count(&dir), 294 + 3 * 100, "every shared write and every accepted write alone");
    }
}
