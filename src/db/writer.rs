//! The writer: one thread that runs every [`super::Db::write`] of this process.
//!
//! Writes queue up while a transaction is being committed; the writer takes them all into the
//! next transaction, each in its own savepoint (so one that fails rolls back alone), and answers
//! each caller only after that transaction commits. A busy server thus commits once for many
//! requests instead of once per request, and no thread waits on SQLite's lock by sleeping.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::DbError;

/// Most writes in one transaction.
const MAX_BATCH: usize = 256;
/// A transaction takes no more writes after it has run this long.
const MAX_BATCH_TIME: Duration = Duration::from_millis(20);

/// A write waiting for the writer.
trait Work: Send {
    /// Runs in the open transaction; returns the answer to send once it commits.
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
    E: From<DbError> + From<rusqlite::Error> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &Connection) -> Option<Box<dyn Pending>> {
        let Write { f, reply } = *self;
        let outcome = (|| -> Result<T, E> {
            exec(conn, "SAVEPOINT write")?;
            let result = match catch_unwind(AssertUnwindSafe(|| f(conn))) {
                Ok(result) => result,
                Err(_) => Err(E::from(DbError::Join("a database write panicked".into()))),
            };
            match result {
                Ok(value) => match exec(conn, "RELEASE write") {
                    Ok(()) => Ok(value),
                    Err(e) => {
                        rollback(conn);
                        Err(e.into())
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
pub type BeforeCommit = fn(&Connection) -> rusqlite::Result<()>;

/// The queue in front of the writer thread.
#[derive(Clone)]
pub struct Writer {
    queue: Sender<Box<dyn Work>>,
}

impl Writer {
    /// Starts the writer thread on `conn`; it ends when every handle is dropped.
    pub fn start(conn: Connection, before_commit: BeforeCommit) -> Result<Writer, DbError> {
        let (queue, work) = channel::<Box<dyn Work>>();
        std::thread::Builder::new()
            .name("tidings-db-writer".into())
            .spawn(move || run(conn, work, before_commit))?;
        Ok(Writer { queue })
    }

    /// Runs `f` in the writer's transaction; answers once it is committed.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + From<rusqlite::Error> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let work: Box<dyn Work> = Box::new(Write { f, reply });
        if self.queue.send(work).is_err() {
            return Err(E::from(DbError::Join("the database writer has stopped".into())));
        }
        answer.await.unwrap_or_else(|_| Err(E::from(DbError::Join("the database writer has stopped".into()))))
    }
}

/// Runs a statement without parameters from the connection's cache: the writer's own
/// `BEGIN`, `SAVEPOINT` and `RELEASE` run many thousand times a second under load, and
/// `execute_batch` parses its text on every call.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn run(conn: Connection, queue: Receiver<Box<dyn Work>>, before_commit: BeforeCommit) {
    while let Ok(first) = queue.recv() {
        if let Err(e) = exec(&conn, "BEGIN IMMEDIATE") {
            first.abort(&e.to_string());
            continue;
        }
        let started = Instant::now();
        let mut pending = Vec::new();
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(work) = next {
            pending.extend(work.run(&conn));
            taken += 1;
            next = if taken < MAX_BATCH && started.elapsed() < MAX_BATCH_TIME {
                queue.try_recv().ok()
            } else {
                None
            };
        }
        match before_commit(&conn).and_then(|()| exec(&conn, "COMMIT")) {
            Ok(()) => pending.into_iter().for_each(|p| p.committed()),
            Err(e) => {
                let why = e.to_string();
                tracing::error!("a write transaction did not commit: {why}");
                if let Err(e) = conn.execute_batch("ROLLBACK") {
                    tracing::error!("could not roll back: {e}");
                }
                pending.into_iter().for_each(|p| p.failed(&why));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> (Writer, tempfile::TempDir) {
        let dir = tempfile::TempDir::new().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)").unwrap();
        (Writer::start(conn, |_| Ok(())).unwrap(), dir)
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
        let writer = Writer::start(conn, |_| Err(rusqlite::Error::InvalidQuery)).unwrap();
        let answer =
            writer.write(|conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (1)", [])?)).await;
        assert!(matches!(answer, Err(DbError::Commit(_))), "{answer:?}");
        assert_eq!(count(&dir), 0);
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
}
