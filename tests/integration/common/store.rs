//! The database as the tests look at it and, now and then, set it: rows counted and read by
//! table, column and value, and the few states a test puts in place (a time moved back, a row
//! the engine would have made). The only test code that writes SQL (tests/architecture.rs
//! checks): a test says which rows it means, this file says how SQLite finds them, so a second
//! database behind `db/` would change this file and no test.

use std::path::Path;

use rusqlite::types::{FromSql, ToSqlOutput, Value};
use rusqlite::{Connection, OptionalExtension, ToSql, params_from_iter};

use super::TestApp;

/// What a filter asks of one column.
#[derive(Debug, Clone)]
pub enum Cond {
    Is(Value),
    IsNot(Value),
    Null,
    NotNull,
    /// One of these values.
    Among(Vec<Value>),
    /// Text that starts with this.
    Prefix(String),
}

pub use Cond::{NotNull, Null};

impl From<&str> for Cond {
    fn from(v: &str) -> Self {
        Cond::Is(Value::Text(v.to_string()))
    }
}

impl From<&String> for Cond {
    fn from(v: &String) -> Self {
        Cond::Is(Value::Text(v.clone()))
    }
}

impl From<String> for Cond {
    fn from(v: String) -> Self {
        Cond::Is(Value::Text(v))
    }
}

impl From<i64> for Cond {
    fn from(v: i64) -> Self {
        Cond::Is(Value::Integer(v))
    }
}

impl From<bool> for Cond {
    fn from(v: bool) -> Self {
        Cond::Is(Value::Integer(v.into()))
    }
}

/// Not this value.
pub fn not(v: impl Into<Cond>) -> Cond {
    match v.into() {
        Cond::Is(v) => Cond::IsNot(v),
        other => panic!("not({other:?})"),
    }
}

/// One of these texts.
pub fn among(values: &[&str]) -> Cond {
    Cond::Among(values.iter().map(|v| Value::Text(v.to_string())).collect())
}

/// Text starting with `prefix`.
pub fn prefix(prefix: &str) -> Cond {
    Cond::Prefix(prefix.to_string())
}

/// Which rows: every column named must meet its condition.
pub type Filter<'a> = &'a [(&'a str, Cond)];

/// A value to write into a column.
pub enum Set {
    To(Value),
    /// The column's number less this much (a time moved back).
    Less(i64),
}

impl<T: Into<Cond>> From<T> for Set {
    fn from(v: T) -> Self {
        match v.into() {
            Cond::Is(v) => Set::To(v),
            Cond::Null => Set::To(Value::Null),
            other => panic!("set to {other:?}"),
        }
    }
}

/// A name of a table or column, as the schema spells it.
fn name(n: &str) -> &str {
    assert!(!n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{n:?} is no name");
    n
}

struct Bind(Value);

impl ToSql for Bind {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        self.0.to_sql()
    }
}

/// ` WHERE …` for `filter` (empty without one), its values appended to `args`.
fn clause(filter: Filter<'_>, args: &mut Vec<Bind>) -> String {
    let mut parts = Vec::new();
    for (column, cond) in filter {
        let column = name(column);
        match cond {
            Cond::Is(v) => {
                args.push(Bind(v.clone()));
                parts.push(format!("{column} = ?{}", args.len()));
            }
            Cond::IsNot(v) => {
                args.push(Bind(v.clone()));
                parts.push(format!("{column} IS NOT ?{}", args.len()));
            }
            Cond::Null => parts.push(format!("{column} IS NULL")),
            Cond::NotNull => parts.push(format!("{column} IS NOT NULL")),
            Cond::Among(values) => {
                let mut marks = Vec::new();
                for v in values {
                    args.push(Bind(v.clone()));
                    marks.push(format!("?{}", args.len()));
                }
                parts.push(format!("{column} IN ({})", marks.join(", ")));
            }
            Cond::Prefix(p) => {
                args.push(Bind(Value::Text(p.clone())));
                parts.push(format!("substr({column}, 1, length(?{n})) = ?{n}", n = args.len()));
            }
        }
    }
    if parts.is_empty() { String::new() } else { format!(" WHERE {}", parts.join(" AND ")) }
}

/// A connection to a test's database.
pub struct Store(Box<dyn std::ops::Deref<Target = Connection>>);

impl TestApp {
    /// The app's database, as the tests look at it.
    pub fn store(&self) -> Store {
        Store(Box::new(self.state.db.conn().unwrap()))
    }
}

impl Store {
    /// The database in `path` (the binary's, or a copy of it), to read only.
    pub fn open(path: &Path) -> Store {
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        Store(Box::new(Box::new(conn)))
    }

    /// The database in `path`, to change (with no server on it).
    pub fn open_to_write(path: &Path) -> Store {
        Store(Box::new(Box::new(Connection::open(path).unwrap())))
    }

    fn conn(&self) -> &Connection {
        &self.0
    }

    /// How many rows of `table` the filter names.
    pub fn count(&self, table: &str, filter: Filter<'_>) -> i64 {
        let mut args = Vec::new();
        let sql = format!("SELECT count(*) FROM {}{}", name(table), clause(filter, &mut args));
        self.conn().query_row(&sql, params_from_iter(args), |r| r.get(0)).unwrap()
    }

    /// How many different values `column` takes in the rows the filter names (NULL is none).
    pub fn distinct(&self, table: &str, column: &str, filter: Filter<'_>) -> i64 {
        let mut args = Vec::new();
        let sql = format!(
            "SELECT count(DISTINCT {}) FROM {}{}",
            name(column),
            name(table),
            clause(filter, &mut args)
        );
        self.conn().query_row(&sql, params_from_iter(args), |r| r.get(0)).unwrap()
    }

    /// ` ORDER BY rowid` (the order rows were written in), or nothing for a table without rowids
    /// (its primary key orders it).
    fn in_written_order(&self, table: &str) -> &'static str {
        let schema: String = self
            .conn()
            .query_row("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
                r.get(0)
            })
            .unwrap();
        if schema.to_ascii_uppercase().contains("WITHOUT ROWID") { "" } else { " ORDER BY rowid" }
    }

    /// `column` of the rows the filter names, oldest first (in the order they were written; a
    /// table without rowids in its primary key's order).
    pub fn values<T: FromSql>(&self, table: &str, column: &str, filter: Filter<'_>) -> Vec<T> {
        let mut args = Vec::new();
        let sql = format!(
            "SELECT {} FROM {}{}{}",
            name(column),
            name(table),
            clause(filter, &mut args),
            self.in_written_order(table)
        );
        let mut statement = self.conn().prepare(&sql).unwrap();
        statement.query_map(params_from_iter(args), |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// `column` of the one row the filter names; `None` when there is none.
    pub fn find<T: FromSql>(&self, table: &str, column: &str, filter: Filter<'_>) -> Option<T> {
        let mut args = Vec::new();
        let sql = format!("SELECT {} FROM {}{}", name(column), name(table), clause(filter, &mut args));
        let mut rows = self.conn().prepare(&sql).unwrap();
        let found: Vec<T> =
            rows.query_map(params_from_iter(args), |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
        assert!(found.len() <= 1, "{sql}: {} rows, not one", found.len());
        found.into_iter().next()
    }

    /// `column` of the one row the filter names.
    pub fn value<T: FromSql>(&self, table: &str, column: &str, filter: Filter<'_>) -> T {
        self.find(table, column, filter).unwrap_or_else(|| panic!("no row of {table} matches {filter:?}"))
    }

    /// `column` of the newest row the filter names (the last written), if any.
    pub fn last<T: FromSql>(&self, table: &str, column: &str, filter: Filter<'_>) -> Option<T> {
        let mut args = Vec::new();
        let sql = format!(
            "SELECT {} FROM {}{} ORDER BY rowid DESC LIMIT 1",
            name(column),
            name(table),
            clause(filter, &mut args)
        );
        self.conn().query_row(&sql, params_from_iter(args), |r| r.get(0)).optional().unwrap()
    }

    /// Writes `changes` into the rows the filter names; how many there were.
    pub fn set(&self, table: &str, changes: &[(&str, Set)], filter: Filter<'_>) -> usize {
        let mut args = Vec::new();
        let mut sets = Vec::new();
        for (column, change) in changes {
            let column = name(column);
            match change {
                Set::To(v) => {
                    args.push(Bind(v.clone()));
                    sets.push(format!("{column} = ?{}", args.len()));
                }
                Set::Less(n) => {
                    args.push(Bind(Value::Integer(*n)));
                    sets.push(format!("{column} = {column} - ?{}", args.len()));
                }
            }
        }
        let sql = format!("UPDATE {} SET {}{}", name(table), sets.join(", "), clause(filter, &mut args));
        self.conn().execute(&sql, params_from_iter(args)).unwrap()
    }

    /// Deletes the rows the filter names; how many there were.
    pub fn delete(&self, table: &str, filter: Filter<'_>) -> usize {
        let mut args = Vec::new();
        let sql = format!("DELETE FROM {}{}", name(table), clause(filter, &mut args));
        self.conn().execute(&sql, params_from_iter(args)).unwrap()
    }

    /// Puts a row in place, as the code that makes such rows would have.
    pub fn insert(&self, table: &str, row: &[(&str, Set)]) {
        let columns: Vec<&str> = row.iter().map(|(c, _)| name(c)).collect();
        let args: Vec<Bind> = row
            .iter()
            .map(|(c, v)| match v {
                Set::To(v) => Bind(v.clone()),
                Set::Less(_) => panic!("insert {c}: a value, not a change"),
            })
            .collect();
        let marks: Vec<String> = (1..=args.len()).map(|i| format!("?{i}")).collect();
        let sql =
            format!("INSERT INTO {} ({}) VALUES ({})", name(table), columns.join(", "), marks.join(", "));
        self.conn().execute(&sql, params_from_iter(args)).unwrap();
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<String> {
        let sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name";
        let mut statement = self.conn().prepare(sql).unwrap();
        statement.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// The tables with a column of this name.
    pub fn tables_with(&self, column: &str) -> Vec<String> {
        let sql = "SELECT m.name FROM sqlite_master m WHERE m.type = 'table'
                   AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE name = ?1) ORDER BY m.name";
        let mut statement = self.conn().prepare(sql).unwrap();
        statement.query_map([column], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    }

    /// Copies the write-ahead log into the database file and empties it, so the file's size is
    /// the database's. The app's own background work (a job, a request's tail) may hold a read
    /// for a moment, which blocks the checkpoint: it is tried again for up to ten seconds.
    pub fn checkpoint(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let busy: i64 =
                self.conn().query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0)).unwrap();
            if busy == 0 {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "the checkpoint was blocked for ten seconds");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Rewrites the database file without its free pages (where deleted rows' bytes remain).
    pub fn vacuum(&self) {
        self.conn().execute_batch("VACUUM").unwrap();
    }

    /// What SQLite's own check of the whole file says (`ok` when sound).
    pub fn integrity(&self) -> String {
        self.conn().query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
    }

    /// Whether the email search index agrees with the contacts (FTS5's own check).
    pub fn search_index_is_sound(&self) -> bool {
        self.conn()
            .execute(
                "INSERT INTO contacts_email_search (contacts_email_search) VALUES ('integrity-check')",
                [],
            )
            .is_ok()
    }
}
