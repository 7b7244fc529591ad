//! The writer: one thread that runs every [`super::Db::write`] of this process.
//!
//! Writes queue up while a transaction is being committed; the writer takes them all into the
//! next transaction, each in its own savepoint (so one that fails rolls back alone), and answers
//! each caller only after that transaction commits. A busy server thus commits once for many
//! requests instead of once per request, and no thread waits on SQLite's lock by sleeping.
//!
//! A write that may run twice ([`Writer::write_repeatable`], the ingest endpoints') runs
//! without a savepoint while every write before it in the transaction could run again too:
//! inside a savepoint SQLite first copies every page a write changes into an in-memory
//! sub-journal, a kilobyte allocation at a time, and frees it all at `RELEASE` (8.6 % of the
//! server's samples under `/v1/track`'s load). Should one of them fail, the writer rolls the
//! transaction back and runs them all again, each in a savepoint; a write that cannot run again
//! ([`Writer::write`]) makes every write after it in the transaction take a savepoint. After
//! such a rollback every write takes a savepoint for [`SAVED_AFTER_RESTART`]: a project whose
//! writes keep failing (its app tracking on past its events cap, say) would otherwise have every
//! transaction, and every other project's writes in it, run twice.
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
/// How long every write takes a savepoint after a transaction of repeatable writes had to be
/// rolled back and run again.
const SAVED_AFTER_RESTART: Duration = Duration::from_secs(1);

/// What a write runs and answers: the only part of the writer that depends on the write's
/// types, so one copy of it a call site. Savepoints, panics and when to answer are decided once,
/// by [`Job`] and the code around it (0.25 MB less code in the release binary than when every
/// write had its own copy of them).
trait Work: Send {
    /// Runs the write's function (once more, for a repeatable one) and keeps its outcome;
    /// returns whether it succeeded.
    fn call(&mut self, conn: &Connection) -> bool;
    /// Makes the kept outcome this failure of the writer's own.
    fn fail(&mut self, error: DbError);
    /// Sends the kept outcome to the caller.
    fn answer(self: Box<Self>);
}

/// A write waiting for the writer.
struct Job {
    work: Box<dyn Work>,
    /// Whether it runs in a transaction of its own, without a savepoint.
    alone: bool,
    /// Whether it may run more than once (see the module's documentation).
    repeatable: bool,
    /// Whether its last run succeeded.
    succeeded: bool,
}

impl Job {
    /// Runs in the open transaction, in a savepoint of its own when `saved` (rolled back when
    /// it fails); otherwise the caller rolls back the transaction when it fails. Returns whether
    /// it succeeded, and keeps its outcome for [`Job::answer`].
    fn run(&mut self, conn: &Connection, saved: bool) -> bool {
        self.succeeded = if !saved {
            self.call(conn)
        } else if let Err(e) = exec(conn, "SAVEPOINT write") {
            self.work.fail(e);
            false
        } else if !self.call(conn) {
            rollback(conn);
            false
        } else if let Err(e) = exec(conn, "RELEASE write") {
            rollback(conn);
            self.work.fail(e);
            false
        } else {
            true
        };
        self.succeeded
    }

    fn call(&mut self, conn: &Connection) -> bool {
        let work = &mut self.work;
        catch_unwind(AssertUnwindSafe(|| work.call(conn))).unwrap_or_else(|_| {
            self.work.fail(DbError::Join("a database write panicked".into()));
            false
        })
    }

    /// Answers a failed run now; a successful one's answer waits in `pending` for the commit.
    fn answer(self, pending: &mut Vec<Box<dyn Work>>) {
        if self.succeeded {
            pending.push(self.work);
        } else {
            self.work.answer();
        }
    }

    /// The transaction could not start.
    fn abort(self, why: &str) {
        failed(self.work, why);
    }
}

/// Answers a write whose transaction did not commit.
fn failed(mut work: Box<dyn Work>, why: &str) {
    work.fail(DbError::Commit(why.to_string()));
    work.answer();
}

/// What a write runs: once, or as often as the writer needs.
trait Call<T, E>: Send {
    fn call(&mut self, conn: &Connection) -> Result<T, E>;
}

/// A function that may run once ([`Writer::write`]).
struct Once<F>(Option<F>);

impl<F, T, E> Call<T, E> for Once<F>
where
    F: FnOnce(&Connection) -> Result<T, E> + Send,
    E: From<DbError>,
{
    fn call(&mut self, conn: &Connection) -> Result<T, E> {
        match self.0.take() {
            Some(f) => f(conn),
            None => Err(E::from(DbError::Join("a write that may run once was run again".into()))),
        }
    }
}

/// A function that may run again ([`Writer::write_repeatable`]).
struct Again<F>(F);

impl<F, T, E> Call<T, E> for Again<F>
where
    F: Fn(&Connection) -> Result<T, E> + Send,
{
    fn call(&mut self, conn: &Connection) -> Result<T, E> {
        (self.0)(conn)
    }
}

struct Write<C, T, E> {
    call: C,
    outcome: Option<Result<T, E>>,
    reply: oneshot::Sender<Result<T, E>>,
}

impl<C, T, E> Work for Write<C, T, E>
where
    C: Call<T, E>,
    T: Send + 'static,
    E: From<DbError> + Send + 'static,
{
    fn call(&mut self, conn: &Connection) -> bool {
        let outcome = self.call.call(conn);
        let succeeded = outcome.is_ok();
        self.outcome = Some(outcome);
        succeeded
    }

    fn fail(&mut self, error: DbError) {
        self.outcome = Some(Err(E::from(error)));
    }

    fn answer(self: Box<Self>) {
        let Write { outcome, reply, .. } = *self;
        let outcome = outcome
            .unwrap_or_else(|| Err(E::from(DbError::Join("a write was answered before it ran".into()))));
        let _ = reply.send(outcome);
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
    queue: Sender<Job>,
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
        let (queue, work) = channel::<Job>();
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
        self.send(Once(Some(f)), false, false).await
    }

    /// Like [`Writer::write`], for a write that may run more than once: its effects must all be
    /// in the database (a second run follows a rollback of the first), and its answer is the
    /// last run's. It then needs no savepoint (see the module's documentation).
    pub async fn write_repeatable<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: Fn(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.send(Again(f), false, true).await
    }

    /// Runs `f` in a transaction of its own, without a savepoint; answers once it is committed.
    /// For a job's large batch: see the module's documentation.
    pub async fn write_alone<T, E, F>(&self, f: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        self.send(Once(Some(f)), true, false).await
    }

    async fn send<T, E, C>(&self, call: C, alone: bool, repeatable: bool) -> Result<T, E>
    where
        C: Call<T, E> + 'static,
        T: Send + 'static,
        E: From<DbError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let work = Box::new(Write { call, outcome: None, reply });
        if self.queue.send(Job { work, alone, repeatable, succeeded: false }).is_err() {
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
    queue: Receiver<Job>,
    before_commit: BeforeCommit,
    mut checkpoints: Option<Checkpoints>,
    wakers: Wakers,
) {
    // A write alone that arrived while a shared transaction was filling up goes next.
    let mut held: Option<Job> = None;
    // When a transaction of repeatable writes was last rolled back and run again.
    let mut restarted_at: Option<Instant> = None;
    'transactions: while let Some(first) = held.take().or_else(|| queue.recv().ok()) {
        if let Err(e) = exec(&conn, "BEGIN IMMEDIATE") {
            first.abort(&e.to_string());
            continue;
        }
        // What an earlier transaction that did not commit asked for is void.
        effects::take();
        let mut pending = Vec::new();
        if first.alone {
            let mut first = first;
            let succeeded = first.run(&conn, false);
            first.answer(&mut pending);
            if !succeeded {
                roll_back_all(&conn);
                continue;
            }
        } else {
            let saved = restarted_at.is_some_and(|at| at.elapsed() < SAVED_AFTER_RESTART);
            let mut batch = Batch { pending, unsaved: Vec::new(), saved, restarted: false };
            let started = Instant::now();
            let mut next = Some(first);
            let mut taken = 0;
            while let Some(work) = next {
                let ran = batch.run(&conn, work);
                if batch.restarted {
                    restarted_at = Some(Instant::now());
                }
                if let Err(why) = ran {
                    tracing::error!("a write transaction could not begin again: {why}");
                    continue 'transactions;
                }
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
                if next.as_ref().is_some_and(|w| w.alone) {
                    held = next.take();
                }
            }
            pending = batch.pending;
            batch.unsaved.into_iter().for_each(|w| w.answer(&mut pending));
        }
        match before_commit(&conn).and_then(|()| exec(&conn, "COMMIT")) {
            Ok(()) => {
                wakers.fire(effects::take());
                pending.into_iter().for_each(|p| p.answer());
                if let Some(checkpoints) = &mut checkpoints {
                    checkpoints.after_commit(&conn);
                }
            }
            Err(e) => {
                let why = e.to_string();
                tracing::error!("a write transaction did not commit: {why}");
                roll_back_all(&conn);
                pending.into_iter().for_each(|p| failed(p, &why));
            }
        }
    }
}

/// The writes of a shared transaction so far.
struct Batch {
    /// The answers that wait for the commit.
    pending: Vec<Box<dyn Work>>,
    /// Repeatable writes run without a savepoint, with their answers.
    unsaved: Vec<Job>,
    /// Whether the transaction holds a write that cannot run again: every write after it runs
    /// in a savepoint, as rolling the transaction back would lose it.
    saved: bool,
    /// Whether its repeatable writes were rolled back and run again.
    restarted: bool,
}

impl Batch {
    /// Runs `work` in the open transaction. An error means the transaction could not be begun
    /// again after a rollback: every write of it has been answered, and none is open.
    fn run(&mut self, conn: &Connection, mut work: Job) -> Result<()> {
        if self.saved || !work.repeatable {
            self.saved = true;
            work.run(conn, true);
            work.answer(&mut self.pending);
            return Ok(());
        }
        let succeeded = work.run(conn, false);
        self.unsaved.push(work);
        if succeeded {
            return Ok(());
        }
        // Undo them all, and run them again each in its savepoint: the one that failed fails
        // alone.
        // (SQLite may have rolled the transaction back itself, on a full disk say.)
        (self.saved, self.restarted) = (true, true);
        let undone = if conn.is_autocommit() { Ok(()) } else { exec(conn, "ROLLBACK") };
        let again = undone.and_then(|()| exec(conn, "BEGIN IMMEDIATE"));
        effects::take();
        if let Err(e) = again {
            if !conn.is_autocommit() {
                roll_back_all(conn);
            }
            let why = e.to_string();
            self.unsaved.drain(..).for_each(|w| w.abort(&why));
            return Err(e);
        }
        for mut work in self.unsaved.drain(..) {
            work.run(conn, true);
            work.answer(&mut self.pending);
        }
        Ok(())
    }
}

fn roll_back_all(conn: &Connection) {
    if let Err(e) = conn.execute_batch("ROLLBACK") {
        tracing::error!("could not roll back: {e}");
    }
}

#[cfg(test)]
mod tests;
