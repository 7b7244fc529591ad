//! SQL functions the condition compiler relies on, registered on every connection.
//!
//! - `tidings_date(text, full_only)`: the milliseconds of a date string in the forms of api.md's
//!   type table (`YYYY-MM-DD`, or the full `YYYY-MM-DDTHH:MM:SS[.sss]Z`, the only form taken when
//!   `full_only` is 1), else NULL. The same parser serves the in-memory evaluator, so both paths
//!   read a date the same way (SQLite's own date functions accept more forms and roll invalid
//!   days over).
//! - `tidings_has(bytes, needle, …)`: whether every needle occurs in `bytes` (a text or a blob
//!   such as a contact's JSONB; case kept), by a vectorised search; a quick necessary test the
//!   compiler puts before reading a field out of the JSON, about twice as fast as SQLite's
//!   `instr`, which walks text a character at a time. Each needle's searcher is built once a
//!   statement and kept as SQLite's auxiliary data of its argument (a bound value is
//!   constant for the statement; SQLite drops the data of an argument that is not): memchr
//!   builds a searcher in more instructions than it takes to search a contact's JSONB. At
//!   200,000 contacts, 3 filters, under callgrind: 2,068 instructions a contact with a
//!   searcher built on each call, 1,501 kept (a thread-local cache of the latest needles,
//!   which has to compare them on each call, 1,584).
//! - `tidings_contains(value, needle)`: whether `value` (a text or a number) contains `needle`
//!   once lowercased as Rust lowercases, in every script (SQLite's `lower` knows only ASCII);
//!   `needle` comes lowercase. The contact list's search across fields reads values with it.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::clock;

pub fn register(conn: &Connection) -> Result<()> {
    let flags =
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("tidings_date", 2, flags, |ctx| {
        let ValueRef::Text(text) = ctx.get_raw(0) else { return Ok(None) };
        let full_only = ctx.get::<i64>(1)? != 0;
        Ok(std::str::from_utf8(text)
            .ok()
            .and_then(clock::parse_date)
            .filter(|(_, full)| *full || !full_only)
            .map(|(ms, _)| ms))
    })?;
    conn.create_scalar_function("tidings_has", -1, flags, |ctx| {
        let (ValueRef::Text(bytes) | ValueRef::Blob(bytes)) = ctx.get_raw(0) else { return Ok(false) };
        // One call for all of a group's needles: a call costs about as much as its search.
        // Each needle's searcher is kept as its argument's auxiliary data (see above).
        for i in 1..ctx.len() {
            let finder = ctx.get_or_create_aux(i as i32, |needle| {
                Ok::<_, rusqlite::Error>(match needle {
                    ValueRef::Text(needle) => Some(memchr::memmem::Finder::new(needle).into_owned()),
                    _ => None,
                })
            })?;
            if finder.as_ref().as_ref().is_none_or(|finder| finder.find(bytes).is_none()) {
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    conn.create_scalar_function("tidings_contains", 2, flags, |ctx| {
        let ValueRef::Text(needle) = ctx.get_raw(1) else { return Ok(false) };
        let needle = String::from_utf8_lossy(needle);
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(text) => String::from_utf8_lossy(text).to_lowercase().contains(needle.as_ref()),
            ValueRef::Integer(n) => n.to_string().contains(needle.as_ref()),
            ValueRef::Real(x) => x.to_string().contains(needle.as_ref()),
            _ => false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_from_sql() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let q = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, Option<i64>>(0)).unwrap();
        assert_eq!(q("SELECT tidings_date('1970-01-02', 0)"), Some(86_400_000));
        assert_eq!(q("SELECT tidings_date('1970-01-02', 1)"), None);
        assert_eq!(q("SELECT tidings_date('1970-01-01T00:00:01.500Z', 1)"), Some(1500));
        assert_eq!(q("SELECT tidings_date('2026-02-30', 0)"), None);
        assert_eq!(q("SELECT tidings_date(42, 0)"), None);
        assert_eq!(q("SELECT tidings_date(NULL, 0)"), None);
        assert_eq!(q(r#"SELECT tidings_has('{"plan":"pro"}', '"pro"')"#), Some(1));
        assert_eq!(q(r#"SELECT tidings_has('{"plan":"Pro"}', '"pro"')"#), Some(0));
        assert_eq!(q("SELECT tidings_has(NULL, 'x')"), Some(0));
        // A contact's stored JSONB keeps a text value's bytes, and the search reads blobs.
        assert_eq!(q(r#"SELECT tidings_has(jsonb('{"plan":"pro"}'), 'pro')"#), Some(1));
        assert_eq!(q(r#"SELECT tidings_has(jsonb('{"plan":"Pro"}'), 'pro')"#), Some(0));
        // Several needles: all of them.
        assert_eq!(q(r#"SELECT tidings_has(jsonb('{"plan":"pro","city":"Oslo"}'), 'Oslo', 'pro')"#), Some(1));
        assert_eq!(
            q(r#"SELECT tidings_has(jsonb('{"plan":"pro","city":"Bergen"}'), 'Oslo', 'pro')"#),
            Some(0)
        );
        // A needle that is not constant over the statement is searched for row by row, never
        // with the searcher of the row before.
        let long = "x".repeat(80);
        let varying: Vec<bool> = conn
            .prepare(&format!(
                "SELECT tidings_has(column1, column2) FROM (VALUES ('{long}pro', 'pro'), ('{long}pro', 'Oslo'), ('{long}Oslo', 'Oslo'), ('{long}Oslo', 'pro'))"
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(varying, [true, false, true, false]);
        // A bound needle over many rows, each row searched with it.
        let mut bound = conn
            .prepare(
                "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 200)
                 SELECT tidings_has(?1 || n, ?2) FROM s",
            )
            .unwrap();
        let hits: Vec<bool> =
            bound.query_map([long.as_str(), "7"], |r| r.get(0)).unwrap().collect::<Result<_>>().unwrap();
        let expected: Vec<bool> = (1..=200).map(|n: i32| n.to_string().contains('7')).collect();
        assert_eq!(hits, expected);
        // The same statement run again with another needle bound searches for the new one.
        let mut again = conn.prepare("SELECT tidings_has(?1, ?2)").unwrap();
        for (needle, found) in [("pro", true), ("Oslo", false), ("pro", true)] {
            let hit: bool =
                again.query_row([format!("{long}pro"), needle.to_string()], |r| r.get(0)).unwrap();
            assert_eq!(hit, found, "{needle}");
        }
        assert_eq!(q("SELECT tidings_contains('ŁÓDŹ Centrum', 'łódź')"), Some(1));
        assert_eq!(q("SELECT tidings_contains(4711, '71')"), Some(1));
        assert_eq!(q("SELECT tidings_contains(2.5, '.5')"), Some(1));
        assert_eq!(q("SELECT tidings_contains(NULL, 'x')"), Some(0));
        assert_eq!(q("SELECT tidings_contains('Lodz', 'łódź')"), Some(0));
    }
}
