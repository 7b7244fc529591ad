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
    writer.write(|conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (2)", [])?)).await.unwrap();
    assert_eq!(count(&dir), 1);
}

#[tokio::test]
async fn a_failing_before_commit_step_fails_the_transaction_and_keeps_nothing() {
    let dir = tempfile::TempDir::new().unwrap();
    let conn = Connection::open(dir.path().join("w.db")).unwrap();
    conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)").unwrap();
    let writer =
        Writer::start(conn, |_| Err(rusqlite::Error::InvalidQuery.into()), None, Wakers::default()).unwrap();
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
    assert!(tokio::time::timeout(Duration::from_millis(100), jobs).await.is_err(), "only who was asked for");
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
                    .write(move |conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?))
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

/// Runs of repeatable writes: which write, and whether it ran in a savepoint.
type Runs = std::sync::Arc<std::sync::Mutex<Vec<(i64, bool)>>>;

/// A repeatable write that inserts `n`, notes its run in `runs`, and then fails when `fails`.
fn repeatable(
    writer: &Writer,
    runs: &Runs,
    n: i64,
    fails: bool,
) -> impl std::future::Future<Output = Result<i64, DbError>> + use<> {
    let (writer, runs) = (writer.clone(), runs.clone());
    async move {
        writer
            .write_repeatable(move |conn| {
                // Harmless at the start of a run: nothing to undo yet, and the savepoint stays.
                let saved = conn.execute_batch("ROLLBACK TO write").is_ok();
                runs.lock().unwrap().push((n, saved));
                conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?;
                if fails {
                    return Err(DbError::Join(format!("refused {n}")));
                }
                Ok(n)
            })
            .await
    }
}

/// Holds the writer in a write of its own until the writes queued meanwhile can all join the
/// next transaction; returns once that write has begun.
async fn hold_the_writer(writer: &Writer) -> tokio::task::JoinHandle<Result<(), DbError>> {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (begun, running) = oneshot::channel::<()>();
    let writer = writer.clone();
    let handle = tokio::spawn(async move {
        writer
            .write(move |_| {
                let _ = begun.send(());
                let _ = held.recv_timeout(Duration::from_secs(10));
                Ok::<_, DbError>(())
            })
            .await
    });
    running.await.unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        let _ = release.send(());
    });
    handle
}

fn rows(dir: &tempfile::TempDir) -> Vec<i64> {
    let conn = Connection::open(dir.path().join("w.db")).unwrap();
    let mut statement = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
    statement.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeatable_writes_share_a_transaction_without_savepoints_and_one_that_fails_fails_alone() {
    let (writer, dir) = writer();
    let runs = Runs::default();
    let held = hold_the_writer(&writer).await;
    let answers =
        rocket::futures::future::join_all((0..100).map(|n| repeatable(&writer, &runs, n, n % 10 == 7))).await;
    held.await.unwrap().unwrap();
    for (n, answer) in (0..100).zip(&answers) {
        assert_eq!(answer.is_err(), n % 10 == 7, "{n}: {answer:?}");
    }
    assert_eq!(rows(&dir), (0..100).filter(|n| n % 10 != 7).collect::<Vec<_>>(), "nothing done twice");
    let runs = runs.lock().unwrap().clone();
    assert!(runs.iter().any(|(_, saved)| !saved), "the first of the transaction ran without a savepoint");
    for n in 0..100 {
        let of_n: Vec<bool> = runs.iter().filter(|(m, _)| *m == n).map(|(_, saved)| *saved).collect();
        // Once (with or without a savepoint), or twice: without one, and again in one after a
        // later write of the transaction failed.
        assert!(matches!(of_n.as_slice(), [_] | [false, true]), "{n}: {of_n:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_cannot_run_again_is_never_rolled_back_for_a_repeatable_one() {
    let (writer, dir) = writer();
    let runs = Runs::default();
    let once = |n: i64| {
        let writer = writer.clone();
        async move {
            writer
                .write(move |conn| Ok::<_, DbError>(conn.execute("INSERT INTO t (n) VALUES (?1)", [n])?))
                .await
        }
    };

    // Repeatable, then one that is not: the failure after it costs only the failing write.
    let held = hold_the_writer(&writer).await;
    let (a, b, c, d) = tokio::join!(
        repeatable(&writer, &runs, 1, false),
        once(2),
        repeatable(&writer, &runs, 3, true),
        repeatable(&writer, &runs, 4, false),
    );
    held.await.unwrap().unwrap();
    assert!(a.is_ok() && b.is_ok() && c.is_err() && d.is_ok(), "{a:?} {b:?} {c:?} {d:?}");
    assert_eq!(*runs.lock().unwrap(), [(1, false), (3, true), (4, true)]);
    assert_eq!(rows(&dir), [1, 2, 4]);

    // A failure while all are repeatable: they run again, each in a savepoint, and a write
    // that cannot run again, queued after, runs once.
    runs.lock().unwrap().clear();
    let held = hold_the_writer(&writer).await;
    let (e, f, g, h) = tokio::join!(
        repeatable(&writer, &runs, 5, false),
        repeatable(&writer, &runs, 6, true),
        once(7),
        repeatable(&writer, &runs, 8, false),
    );
    held.await.unwrap().unwrap();
    assert!(e.is_ok() && f.is_err() && g.is_ok() && h.is_ok(), "{e:?} {f:?} {g:?} {h:?}");
    assert_eq!(*runs.lock().unwrap(), [(5, false), (6, false), (5, true), (6, true), (8, true)]);
    assert_eq!(rows(&dir), [1, 2, 4, 5, 7, 8]);
}

#[tokio::test]
async fn a_repeatable_write_that_panics_is_an_error_and_the_others_of_its_transaction_commit() {
    let (writer, dir) = writer();
    let runs = Runs::default();
    let panicking = {
        let writer = writer.clone();
        async move {
            writer
                .write_repeatable(|conn| {
                    conn.execute("INSERT INTO t (n) VALUES (100)", [])?;
                    if conn.is_autocommit() {
                        return Ok::<_, DbError>(());
                    }
                    panic!("a bug in a write");
                })
                .await
        }
    };
    let held = hold_the_writer(&writer).await;
    let (a, b, c) =
        tokio::join!(repeatable(&writer, &runs, 1, false), panicking, repeatable(&writer, &runs, 2, false));
    held.await.unwrap().unwrap();
    assert!(a.is_ok() && matches!(b, Err(DbError::Join(_))) && c.is_ok(), "{a:?} {b:?} {c:?}");
    assert_eq!(rows(&dir), [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_that_sqlite_rolled_back_itself_is_begun_again_for_the_others() {
    let (writer, dir) = writer();
    let runs = Runs::default();
    let first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    // Its first run ends the transaction the way SQLite does on a full disk.
    let rolling_back = {
        let writer = writer.clone();
        async move {
            writer
                .write_repeatable(move |conn| {
                    if first.swap(false, std::sync::atomic::Ordering::Relaxed) {
                        conn.execute_batch("ROLLBACK")?;
                    }
                    Err::<(), _>(DbError::Join("refused".into()))
                })
                .await
        }
    };
    let held = hold_the_writer(&writer).await;
    let (a, b, c) = tokio::join!(
        repeatable(&writer, &runs, 1, false),
        rolling_back,
        repeatable(&writer, &runs, 2, false)
    );
    held.await.unwrap().unwrap();
    assert!(a.is_ok() && b.is_err() && c.is_ok(), "{a:?} {b:?} {c:?}");
    assert_eq!(rows(&dir), [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rollback_every_write_takes_a_savepoint_for_a_while() {
    let (writer, dir) = writer();
    let runs = Runs::default();
    let held = hold_the_writer(&writer).await;
    let (a, b) = tokio::join!(repeatable(&writer, &runs, 1, false), repeatable(&writer, &runs, 2, true));
    held.await.unwrap().unwrap();
    assert!(a.is_ok() && b.is_err(), "{a:?} {b:?}");
    assert_eq!(*runs.lock().unwrap(), [(1, false), (2, false), (1, true), (2, true)]);

    // A failing project keeps failing: the next transactions do not run everyone twice.
    runs.lock().unwrap().clear();
    let held = hold_the_writer(&writer).await;
    let (c, d) = tokio::join!(repeatable(&writer, &runs, 3, false), repeatable(&writer, &runs, 4, true));
    held.await.unwrap().unwrap();
    assert!(c.is_ok() && d.is_err(), "{c:?} {d:?}");
    assert_eq!(*runs.lock().unwrap(), [(3, true), (4, true)]);
    assert_eq!(rows(&dir), [1, 3]);
}
