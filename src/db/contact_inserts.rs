//! New contacts: the row, its place in the project's counts (`contact_counts`) and its entry in
//! the email search index. A single insert does all three (the index at its commit); an import
//! batch ([`Deferred`]) counts and indexes its new contacts once, at its end.

use std::cell::Cell;

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// When a new contact is counted and enters the email search index.
#[derive(Debug, Clone, Copy)]
pub enum Indexing<'a> {
    /// Counted with the insert, indexed when its transaction commits: listed in
    /// `contacts_search_pending` for [`index_pending`], which the writer runs before every commit
    /// (migration V9 says why).
    AtCommit,
    /// By [`Deferred::finish`] at the end of the write (an import batch: one statement each for
    /// the batch, nothing per row). A contact of another project than the batch's is inserted
    /// as [`Indexing::AtCommit`].
    Deferred(&'a Deferred),
}

/// Contacts one write inserts into one project with [`Indexing::Deferred`]: counted and added to
/// the search index by [`Deferred::finish`], in the same write.
#[derive(Debug)]
pub struct Deferred {
    project: String,
    /// The highest `seq` before the batch: its contacts have higher ones.
    after: i64,
    /// Contacts inserted so far, and how many of them subscribed when inserted.
    inserted: Cell<(i64, i64)>,
}

impl Deferred {
    /// Starts a batch of inserts into `project`. Its counts get their row now if they have none:
    /// the triggers that move them when one of the batch's contacts changes its subscription or
    /// is deleted before the batch ends update that row, and the batch's own counts are added to
    /// it last (sums, so the order does not matter).
    pub fn start(conn: &Connection, project: &str) -> Result<Deferred> {
        conn.prepare_cached(
            "INSERT OR IGNORE INTO contact_counts (project_id, total, subscribed) VALUES (?1, 0, 0)",
        )?
        .execute([project])?;
        Ok(Deferred { project: project.to_string(), after: last_seq(conn)?, inserted: Cell::new((0, 0)) })
    }

    /// Counts the contacts inserted since [`Deferred::start`] as they were inserted, and adds them
    /// to the search index, one statement each; returns how many were indexed.
    pub fn finish(self, conn: &Connection) -> Result<usize> {
        let (total, subscribed) = self.inserted.get();
        if total > 0 {
            count_inserted(conn, &self.project, total, subscribed)?;
        }
        Ok(conn.prepare_cached(FINISH_INDEX)?.execute(params![self.after, self.project])?)
    }
}

/// A batch's contacts into the search index: a range of rows, the project checked on each (`+`
/// keeps the planner off the project's indexes, which would walk all its contacts).
const FINISH_INDEX: &str = "INSERT INTO contacts_email_search (rowid, email)
    SELECT seq, email FROM contacts WHERE seq > ?1 AND +project_id = ?2";

/// The insert of a new contact's row.
macro_rules! insert_sql {
    () => {
        "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, jsonb(?5), ?6, ?6)"
    };
}
const INSERT: &str = insert_sql!();
/// The same, writing nothing when the project has a contact with the email.
const INSERT_WHEN_FREE: &str = concat!(insert_sql!(), " ON CONFLICT (project_id, email) DO NOTHING");

/// A new contact's row as it is written; `data` is its JSON text.
pub(super) struct NewRow<'a> {
    pub project: &'a str,
    pub email: &'a str,
    pub subscribed: bool,
    pub data: &'a str,
    pub now: i64,
}

/// Inserts the row of a new contact, counts and indexes it as `indexing` says; returns its `seq`
/// and id. With `when_free`, a project's contact that already has the email is no error:
/// nothing is written and the answer is `None`. [`super::contacts::insert`] is the way in.
pub(super) fn insert_row(
    conn: &Connection,
    row: &NewRow<'_>,
    indexing: Indexing<'_>,
    when_free: bool,
) -> Result<Option<(i64, String)>> {
    let NewRow { project, email, subscribed, data, now } = *row;
    let id = super::ids::new_id();
    let values = params![id, project, email, subscribed, data, now];
    if when_free {
        let inserted = conn.prepare_cached(INSERT_WHEN_FREE)?.execute(values)?;
        if inserted == 0 {
            return Ok(None);
        }
    } else {
        conn.prepare_cached(INSERT)?.execute(values)?;
    }
    let seq = conn.last_insert_rowid();
    match indexing {
        Indexing::Deferred(batch) if batch.project == project => {
            let (total, subscribed_so_far) = batch.inserted.get();
            batch.inserted.set((total + 1, subscribed_so_far + i64::from(subscribed)));
        }
        _ => {
            count_inserted(conn, project, 1, i64::from(subscribed))?;
            // OR IGNORE: a row listed and then deleted in this transaction leaves its seq listed,
            // and SQLite may give that seq to the next insert.
            conn.prepare_cached("INSERT OR IGNORE INTO contacts_search_pending (seq) VALUES (?1)")?
                .execute([seq])?;
        }
    }
    Ok(Some((seq, id)))
}

/// Counts `total` contacts just inserted into `project`, `subscribed` of them subscribed, in
/// `contact_counts`. Every insert into `contacts` is counted by it: a trigger did, and cost the
/// insert a statement journal (migration V48).
pub fn count_inserted(conn: &Connection, project: &str, total: i64, subscribed: i64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO contact_counts (project_id, total, subscribed) VALUES (?1, ?2, ?3)
         ON CONFLICT (project_id) DO UPDATE SET total = total + excluded.total, subscribed = subscribed + excluded.subscribed",
    )?
    .execute(params![project, total, subscribed])?;
    Ok(())
}

/// The highest `seq` so far; contacts inserted later in the same transaction have higher ones.
pub fn last_seq(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT coalesce(max(seq), 0) FROM contacts", [], |r| r.get(0))?)
}

/// CROSS JOIN keeps the short list outside: left to itself the planner scanned every contact.
const INDEX_PENDING: &str = "INSERT INTO contacts_email_search (rowid, email)
    SELECT c.seq, c.email FROM contacts_search_pending p CROSS JOIN contacts c ON c.seq = p.seq";

/// Indexes the contacts inserted with [`Indexing::AtCommit`] in this transaction and empties the
/// list. The writer runs it last before every commit; other write transactions ([`super::write_tx`])
/// too.
pub fn index_pending(conn: &Connection) -> Result<usize> {
    let any = conn
        .prepare_cached("SELECT 1 FROM contacts_search_pending LIMIT 1")?
        .query_row([], |_| Ok(()))
        .optional()?;
    if any.is_none() {
        return Ok(0);
    }
    let indexed = conn.prepare_cached(INDEX_PENDING)?.execute([])?;
    conn.prepare_cached("DELETE FROM contacts_search_pending")?.execute([])?;
    Ok(indexed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('p', 'P', 0, 0, 0), ('q', 'Q', 0, 0, 0)",
        )
        .unwrap();
        conn
    }

    fn indexed(conn: &Connection, term: &str) -> Vec<i64> {
        let mut statement = conn
            .prepare(
                "SELECT rowid FROM contacts_email_search WHERE email LIKE '%' || ?1 || '%' ORDER BY rowid",
            )
            .unwrap();
        statement.query_map([term], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap()
    }

    fn add(conn: &Connection, project: &str, email: &str, subscribed: bool, indexing: Indexing<'_>) -> i64 {
        let row = NewRow { project, email, subscribed, data: "{}", now: 1 };
        insert_row(conn, &row, indexing, false).unwrap().unwrap().0
    }

    /// What `contact_counts` says of `project`.
    fn counts(conn: &Connection, project: &str) -> (i64, i64) {
        conn.query_row("SELECT total, subscribed FROM contact_counts WHERE project_id = ?1", [project], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .unwrap()
        .unwrap_or((0, 0))
    }

    /// What the table holds, counted: the figures `contact_counts` must agree with.
    fn actual(conn: &Connection, project: &str) -> (i64, i64) {
        conn.query_row(
            "SELECT count(*), coalesce(sum(subscribed), 0) FROM contacts WHERE project_id = ?1",
            [project],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    }

    fn plan(conn: &Connection, sql: &str) -> Vec<String> {
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let params = statement.parameter_count();
        statement
            .query_map(rusqlite::params_from_iter(std::iter::repeat_n("1", params)), |r| r.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn intact(conn: &Connection) {
        conn.execute(
            "INSERT INTO contacts_email_search (contacts_email_search) VALUES ('integrity-check')",
            [],
        )
        .expect("the search index matches the contacts");
    }

    #[test]
    fn indexing_reads_the_list_or_the_batch_not_every_contact() {
        let conn = database();
        assert_eq!(plan(&conn, INDEX_PENDING), ["SCAN p", "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"]);
        assert_eq!(plan(&conn, FINISH_INDEX), ["SEARCH contacts USING INTEGER PRIMARY KEY (rowid>?)"]);
    }

    #[test]
    fn a_batch_counts_and_indexes_its_contacts_at_its_end_whatever_changed_in_between() {
        let conn = database();
        // The project's first contacts: its counts have no row before the batch.
        let batch = Deferred::start(&conn, "p").unwrap();
        let mut made = Vec::new();
        for n in 0..5 {
            let email = format!("ada{n}@batch.test");
            made.push((add(&conn, "p", &email, n % 2 == 0, Indexing::Deferred(&batch)), n % 2 == 0));
        }
        // Another project's contact in the same write is counted and listed at once.
        let other = add(&conn, "q", "grace@batch.test", true, Indexing::Deferred(&batch));
        assert_eq!(counts(&conn, "q"), (1, 1));
        // Before the batch ends, a later row of it flips two subscriptions: the trigger moves
        // the counts' row, which the batch's sums are added to.
        for (seq, subscribed) in &made[..2] {
            conn.execute("UPDATE contacts SET subscribed = ?2 WHERE seq = ?1", params![seq, !subscribed])
                .unwrap();
        }
        assert_eq!(counts(&conn, "p").0, 0, "not counted before the end");
        assert!(indexed(&conn, "batch").is_empty(), "not indexed before the end");
        assert_eq!(batch.finish(&conn).unwrap(), 5, "the batch's own project's contacts");
        assert_eq!(counts(&conn, "p"), actual(&conn, "p"));
        assert_eq!(actual(&conn, "p"), (5, 3));
        index_pending(&conn).unwrap();
        let mut everyone: Vec<i64> = made.iter().map(|(seq, _)| *seq).collect();
        everyone.push(other);
        assert_eq!(indexed(&conn, "batch"), everyone, "each contact indexed once");
        intact(&conn);
    }

    #[test]
    fn a_later_batch_adds_to_the_counts_and_indexes_only_its_own_contacts() {
        let conn = database();
        let first = add(&conn, "p", "one@later.test", true, Indexing::AtCommit);
        index_pending(&conn).unwrap();
        let batch = Deferred::start(&conn, "p").unwrap();
        let second = add(&conn, "p", "two@later.test", false, Indexing::Deferred(&batch));
        assert_eq!(batch.finish(&conn).unwrap(), 1);
        assert_eq!(counts(&conn, "p"), (2, 1));
        assert_eq!(indexed(&conn, "later"), [first, second]);
        intact(&conn);
        let empty = Deferred::start(&conn, "p").unwrap();
        assert_eq!(empty.finish(&conn).unwrap(), 0);
        assert_eq!(counts(&conn, "p"), (2, 1), "an empty batch changes nothing");
    }

    #[test]
    fn an_insert_when_free_writes_nothing_for_a_taken_email() {
        let conn = database();
        let first = add(&conn, "p", "ada@free.test", true, Indexing::AtCommit);
        let row =
            NewRow { project: "p", email: "ada@free.test", subscribed: false, data: r#"{"a":1}"#, now: 2 };
        assert_eq!(insert_row(&conn, &row, Indexing::AtCommit, true).unwrap(), None);
        assert_eq!(counts(&conn, "p"), (1, 1), "not counted");
        assert_eq!(index_pending(&conn).unwrap(), 1, "not listed for the index");
        let stored: (i64, String) = conn
            .query_row("SELECT subscribed, json(data) FROM contacts WHERE seq = ?1", [first], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(stored, (1, "{}".to_string()), "the contact there is untouched");
        let other = NewRow { project: "q", ..row };
        let made = insert_row(&conn, &other, Indexing::AtCommit, true).unwrap();
        assert!(made.is_some_and(|(seq, _)| seq > first), "the email is free in another project");
        assert_eq!(counts(&conn, "q"), (1, 0));
    }
}
