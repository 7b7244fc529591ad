//! Contacts: one row per (project, email), custom fields as a JSON object.
//!
//! The object is stored as SQLite's binary JSON (JSONB, V49): a segment's conditions read
//! fields out of every contact of a project, and JSONB is read without parsing text. Rows go
//! in through `jsonb(?)` and come out through `json(c.data)`; SQLite's JSON functions take
//! either form.

use super::error::Result;
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use serde_json::{Map, Value};

pub use super::contact_inserts::{Deferred, Indexing, count_inserted, index_pending, last_seq};
use super::contact_inserts::{NewRow, insert_row};

/// A contact as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Contact {
    pub seq: i64,
    pub id: String,
    pub project_id: String,
    pub email: String,
    pub subscribed: bool,
    pub snoozed_until: Option<i64>,
    pub data: Map<String, Value>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A contact's columns as [`from_row`] reads them, for `concat!`: a cached statement's SQL made
/// with `format!` is made again on every call (the statement cache is keyed by its text).
macro_rules! columns {
    () => {
        "c.seq, c.id, c.project_id, c.email, c.subscribed, c.snoozed_until, json(c.data), c.created_at, c.updated_at"
    };
}
pub const COLUMNS: &str = columns!();

/// Reads a contact selected with [`COLUMNS`].
pub fn from_row(r: &Row<'_>) -> rusqlite::Result<Contact> {
    let data: String = r.get(6)?;
    let data = match serde_json::from_str::<Value>(&data) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    Ok(Contact {
        seq: r.get(0)?,
        id: r.get(1)?,
        project_id: r.get(2)?,
        email: r.get(3)?,
        subscribed: r.get(4)?,
        snoozed_until: r.get(5)?,
        data,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

fn data_text(data: &Map<String, Value>) -> String {
    serde_json::to_string(data).unwrap_or_else(|_| "{}".into())
}

/// A contact about to be inserted.
pub struct NewContact<'a> {
    pub project: &'a str,
    /// Already normalised.
    pub email: &'a str,
    pub subscribed: bool,
    pub data: Map<String, Value>,
    /// `data`'s JSON text, as it is stored.
    pub json: String,
    pub now: i64,
}

/// Inserts a new contact (the caller made sure the email is free in the project), counted and
/// indexed as `indexing` says.
pub fn insert(
    conn: &Connection,
    project: &str,
    email: &str,
    subscribed: bool,
    data: Map<String, Value>,
    now: i64,
    indexing: Indexing<'_>,
) -> Result<Contact> {
    let json = data_text(&data);
    insert_new(conn, NewContact { project, email, subscribed, data, json, now }, indexing)
}

/// [`insert`] of a contact whose data's JSON is written already.
pub fn insert_new(conn: &Connection, contact: NewContact<'_>, indexing: Indexing<'_>) -> Result<Contact> {
    let email = contact.email;
    inserted(conn, contact, indexing, false)?
        .ok_or_else(|| super::error::DbError::Missing(format!("the new contact {email}")))
}

/// Inserts a new contact unless the project has one with the email (then `None`, nothing
/// written): for a new contact one search of the `(project_id, email)` index instead of a
/// lookup's and the insert's.
pub fn insert_if_free(
    conn: &Connection,
    contact: NewContact<'_>,
    indexing: Indexing<'_>,
) -> Result<Option<Contact>> {
    inserted(conn, contact, indexing, true)
}

fn inserted(
    conn: &Connection,
    NewContact { project, email, subscribed, data, json, now }: NewContact<'_>,
    indexing: Indexing<'_>,
    when_free: bool,
) -> Result<Option<Contact>> {
    let row = NewRow { project, email, subscribed, data: &json, now };
    Ok(insert_row(conn, &row, indexing, when_free)?.map(|(seq, id)| Contact {
        seq,
        id,
        project_id: project.into(),
        email: email.into(),
        subscribed,
        snoozed_until: None,
        data,
        created_at: now,
        updated_at: now,
    }))
}

pub fn by_id(conn: &Connection, project: &str, id: &str) -> Result<Option<Contact>> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM contacts c WHERE c.id = ?1 AND c.project_id = ?2"
        ))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// A contact by its row number, whatever its project (for rows that name it by `seq`).
pub fn by_seq(conn: &Connection, seq: i64) -> Result<Option<Contact>> {
    Ok(conn
        .prepare_cached(concat!("SELECT ", columns!(), " FROM contacts c WHERE c.seq = ?1"))?
        .query_row([seq], from_row)
        .optional()?)
}

/// A contact by id alone, whatever its project (for a link token, which names only the contact).
pub fn by_id_anywhere(conn: &Connection, id: &str) -> Result<Option<Contact>> {
    Ok(conn
        .prepare_cached(concat!("SELECT ", columns!(), " FROM contacts c WHERE c.id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

pub fn by_email(conn: &Connection, project: &str, email: &str) -> Result<Option<Contact>> {
    Ok(conn
        .prepare_cached(concat!(
            "SELECT ",
            columns!(),
            " FROM contacts c WHERE c.project_id = ?1 AND c.email = ?2"
        ))?
        .query_row([project, email], from_row)
        .optional()?)
}

/// Writes a contact's data and `updated_at` alone. An update that names neither the email nor
/// the subscription fires none of their triggers, so it opens no statement journal (V48).
pub fn update_data(conn: &Connection, contact: &Contact) -> Result<()> {
    conn.prepare_cached("UPDATE contacts SET data = jsonb(?2), updated_at = ?3 WHERE seq = ?1")?
        .execute(params![contact.seq, data_text(&contact.data), contact.updated_at])?;
    Ok(())
}

/// Writes a contact's email, subscription, data and `updated_at`.
pub fn update(conn: &Connection, contact: &Contact) -> Result<()> {
    conn.prepare_cached(
        "UPDATE contacts SET email = ?2, subscribed = ?3, data = jsonb(?4), updated_at = ?5 WHERE seq = ?1",
    )?
    .execute(params![
        contact.seq,
        contact.email,
        contact.subscribed,
        data_text(&contact.data),
        contact.updated_at
    ])?;
    Ok(())
}

/// Sets until when contact `seq` pauses marketing mail (`None`: it does not).
pub fn set_snoozed_until(conn: &Connection, seq: i64, until: Option<i64>, now: i64) -> Result<()> {
    conn.prepare_cached("UPDATE contacts SET snoozed_until = ?2, updated_at = ?3 WHERE seq = ?1")?
        .execute(params![seq, until, now])?;
    Ok(())
}

pub fn delete(conn: &Connection, seq: i64) -> Result<bool> {
    Ok(conn.prepare_cached("DELETE FROM contacts WHERE seq = ?1")?.execute([seq])? > 0)
}

/// The project's contact counts: (all, subscribed).
pub fn counts(conn: &Connection, project: &str) -> Result<(i64, i64)> {
    Ok(conn
        .query_row("SELECT total, subscribed FROM contact_counts WHERE project_id = ?1", [project], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?
        .unwrap_or((0, 0)))
}

/// How a contact list is ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    CreatedAt,
    Email,
}

/// Where a page starts: after this row in the list's order.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    Start,
    CreatedAt(i64, i64),
    Email(String),
}

/// One page of a contact list.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub project: String,
    pub search: Option<String>,
    /// Start a search from the trigram index (see [`plan_search`]).
    pub search_indexed: bool,
    pub subscribed: Option<bool>,
    pub sort: Sort,
    pub descending: bool,
    pub after: After,
    /// Rows skipped before the page (a numbered page; 0 with a cursor).
    pub offset: usize,
    pub limit: usize,
    /// Further restrictions, all of which hold.
    pub within: Vec<Within>,
}

/// A restriction of a contact list: a condition over `contacts c` and its positional (`?`)
/// parameters, in order.
#[derive(Debug, Clone, Default)]
pub struct Within {
    pub sql: String,
    pub params: Vec<SqlValue>,
}

impl Within {
    /// The stored members of a static segment.
    pub fn members_of(segment: &str) -> Within {
        Within {
            sql: "c.seq IN (SELECT m.contact_seq FROM segment_members m WHERE m.segment_id = ?)".into(),
            params: vec![segment.to_string().into()],
        }
    }

    /// The contacts subscribed to a topic: by their choice, or the topic's default when they
    /// made none.
    pub fn topic(topic: &str, default_opt_in: bool) -> Within {
        Within {
            sql: "coalesce((SELECT t.subscribed FROM contact_topics t WHERE t.topic_id = ? AND t.contact_seq = c.seq), ?) = 1"
                .into(),
            params: vec![topic.to_string().into(), SqlValue::Integer(default_opt_in.into())],
        }
    }

    /// The contacts whose email or any custom-field value (nested ones and list items too; text
    /// and numbers) contains `text`, any case in any script (`text` is lowercase).
    pub fn anywhere(text: &str) -> Within {
        Within {
            sql: "(c.email GLOB ? OR EXISTS (SELECT 1 FROM json_tree(c.data) j
                   WHERE j.type IN ('text', 'integer', 'real') AND tidings_contains(j.atom, ?)))"
                .into(),
            params: vec![SqlValue::Text(substring_glob(text)), SqlValue::Text(text.to_string())],
        }
    }
}

/// Searches of at least this many characters use the trigram index.
pub const INDEXED_SEARCH_CHARS: usize = 3;

/// A GLOB pattern matching `text` anywhere, with GLOB's special characters taken literally.
/// (GLOB rather than LIKE: the trigram index serves GLOB, and LIKE only without ESCAPE.)
fn substring_glob(text: &str) -> String {
    let mut pattern = String::from("*");
    for ch in text.chars() {
        match ch {
            '*' => pattern.push_str("[*]"),
            '?' => pattern.push_str("[?]"),
            '[' => pattern.push_str("[[]"),
            other => pattern.push(other),
        }
    }
    pattern.push('*');
    pattern
}

/// Most index matches for which a search starts from the trigram index.
const INDEXED_SEARCH_CAP: i64 = 10_000;

/// Whether a search should start from the trigram index: when it has at least three characters
/// and matches fewer than [`INDEXED_SEARCH_CAP`] emails. A broad search (`gmail`) is cheaper as a
/// walk of the project's own indexes, which stops at a page's end and counts from a covering
/// index, than as hundreds of thousands of index hits.
pub fn plan_search(conn: &Connection, search: &str) -> Result<bool> {
    if search.chars().count() < INDEXED_SEARCH_CHARS {
        return Ok(false);
    }
    let hits: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM (SELECT rowid FROM contacts_email_search WHERE email GLOB ?1 LIMIT ?2)",
        )?
        .query_row(params![substring_glob(search), INDEXED_SEARCH_CAP], |r| r.get(0))?;
    Ok(hits < INDEXED_SEARCH_CAP)
}

/// `FROM ... WHERE ...` of a list query. An indexed search starts from the trigram index
/// (CROSS JOIN keeps it the outer loop); others filter the project's rows.
fn from_where(q: &ListQuery, sql: &mut String, args: &mut Vec<SqlValue>) {
    args.push(SqlValue::Text(q.project.clone()));
    match &q.search {
        Some(search) if q.search_indexed => {
            args.push(SqlValue::Text(substring_glob(search)));
            sql.push_str(
                " FROM contacts_email_search s CROSS JOIN contacts c ON c.seq = s.rowid
                  WHERE s.email GLOB ?2 AND c.project_id = ?1",
            );
        }
        Some(search) => {
            args.push(SqlValue::Text(substring_glob(search)));
            sql.push_str(" FROM contacts c WHERE c.project_id = ?1 AND c.email GLOB ?2");
        }
        None => sql.push_str(" FROM contacts c WHERE c.project_id = ?1"),
    }
    if let Some(subscribed) = q.subscribed {
        args.push(SqlValue::Integer(subscribed.into()));
        sql.push_str(&format!(" AND c.subscribed = ?{}", args.len()));
    }
    // Positional parameters after numbered ones take the numbers that follow.
    for within in &q.within {
        sql.push_str(&format!(" AND ({})", within.sql));
        args.extend(within.params.iter().cloned());
    }
}

/// What a bulk job over a list's filters visits: the contacts of `project` with a `seq` in
/// `after + 1 ..= end` (a range of the table's rows, see [`crate::db::audience::range`]) whose
/// email contains `search` (lowercase), whose subscription is `subscribed` and for whom every
/// restriction in `within` holds, in order.
pub fn matching_in_range(
    conn: &Connection,
    project: &str,
    (search, subscribed, within): (Option<&str>, Option<bool>, &[Within]),
    (after, end): (i64, i64),
) -> Result<Vec<Contact>> {
    let mut sql =
        format!("SELECT {COLUMNS} FROM contacts c WHERE +c.project_id = ?1 AND c.seq > ?2 AND c.seq <= ?3");
    let mut args: Vec<SqlValue> = vec![project.to_string().into(), after.into(), end.into()];
    if let Some(search) = search {
        args.push(SqlValue::Text(substring_glob(search)));
        sql.push_str(&format!(" AND c.email GLOB ?{}", args.len()));
    }
    if let Some(subscribed) = subscribed {
        args.push(SqlValue::Integer(subscribed.into()));
        sql.push_str(&format!(" AND c.subscribed = ?{}", args.len()));
    }
    for restriction in within {
        sql.push_str(&format!(" AND ({})", restriction.sql));
        args.extend(restriction.params.iter().cloned());
    }
    sql.push_str(" ORDER BY c.seq");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(params_from_iter(args), from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The contacts of one page: up to `limit` rows after `after` in the requested order.
pub fn list(conn: &Connection, q: &ListQuery) -> Result<Vec<Contact>> {
    let mut sql = format!("SELECT {COLUMNS}");
    let mut args = Vec::new();
    from_where(q, &mut sql, &mut args);
    let cmp = if q.descending { "<" } else { ">" };
    let dir = if q.descending { "DESC" } else { "ASC" };
    match &q.after {
        After::Start => {}
        After::CreatedAt(at, seq) => {
            args.push(SqlValue::Integer(*at));
            args.push(SqlValue::Integer(*seq));
            sql.push_str(&format!(" AND (c.created_at, c.seq) {cmp} (?{}, ?{})", args.len() - 1, args.len()));
        }
        After::Email(email) => {
            args.push(SqlValue::Text(email.clone()));
            sql.push_str(&format!(" AND c.email {cmp} ?{}", args.len()));
        }
    }
    match q.sort {
        Sort::CreatedAt => sql.push_str(&format!(" ORDER BY c.created_at {dir}, c.seq {dir}")),
        Sort::Email => sql.push_str(&format!(" ORDER BY c.email {dir}")),
    }
    args.push(SqlValue::Integer(q.limit as i64));
    args.push(SqlValue::Integer(q.offset as i64));
    sql.push_str(&format!(" LIMIT ?{} OFFSET ?{}", args.len() - 1, args.len()));
    let mut stmt = conn.prepare_cached(&sql)?;
    Ok(stmt.query_map(params_from_iter(args), from_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
}

/// How many contacts the list's filters match (ignoring the page position).
pub fn count(conn: &Connection, q: &ListQuery) -> Result<i64> {
    if q.search.is_none() && q.within.is_empty() {
        let (total, subscribed) = counts(conn, &q.project)?;
        return Ok(match q.subscribed {
            None => total,
            Some(true) => subscribed,
            Some(false) => total - subscribed,
        });
    }
    let mut sql = String::from("SELECT count(*)");
    let mut args = Vec::new();
    from_where(q, &mut sql, &mut args);
    Ok(conn.prepare_cached(&sql)?.query_row(params_from_iter(args), |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn globs_take_special_characters_literally() {
        assert_eq!(super::substring_glob("a*b?c[d"), "*a[*]b[?]c[[]d*");
        assert_eq!(super::substring_glob("first_last%"), "*first_last%*");
    }
}

#[cfg(test)]
mod plan_tests {
    use super::*;

    #[test]
    fn both_search_plans_give_the_same_pages_and_counts() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO users VALUES ('u', 'u@example.com', 'x', 0, 0, 0);
             INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('p', 'P', 0, 0, 0), ('q', 'Q', 0, 0, 0);",
        )
        .unwrap();
        for n in 0..40 {
            let project = if n % 4 == 0 { "q" } else { "p" };
            let email =
                format!("{}{n}@{}", ["ada_x", "bob*y", "cyd"][n % 3], ["gmail.com", "example.com"][n % 2]);
            insert(&conn, project, &email, n % 5 != 0, Map::new(), 1000 + n as i64, Indexing::AtCommit)
                .unwrap();
        }
        assert_eq!(index_pending(&conn).unwrap(), 40);
        for search in ["gmail", "ada_", "b*y", "example.com", "cyd3", "zzz"] {
            for subscribed in [None, Some(true)] {
                for (sort, descending) in [(Sort::CreatedAt, true), (Sort::Email, false)] {
                    let mut q = ListQuery {
                        project: "p".into(),
                        search: Some(search.into()),
                        search_indexed: true,
                        subscribed,
                        sort,
                        descending,
                        after: After::Start,
                        limit: 7,
                        offset: 0,
                        within: Vec::new(),
                    };
                    let indexed: Vec<String> =
                        list(&conn, &q).unwrap().into_iter().map(|c| c.email).collect();
                    let indexed_count = count(&conn, &q).unwrap();
                    q.search_indexed = false;
                    let scanned: Vec<String> =
                        list(&conn, &q).unwrap().into_iter().map(|c| c.email).collect();
                    assert_eq!(indexed, scanned, "{search} {subscribed:?} {sort:?}");
                    assert_eq!(indexed_count, count(&conn, &q).unwrap(), "{search}");
                    assert!(indexed.iter().all(|e| e.contains(search)), "{search}: {indexed:?}");
                }
            }
        }
    }
}

#[cfg(test)]
mod pending_tests {
    use super::*;

    fn search(conn: &Connection, text: &str) -> Vec<String> {
        let q = ListQuery {
            project: "p".into(),
            search: Some(text.into()),
            search_indexed: true,
            subscribed: None,
            sort: Sort::Email,
            descending: false,
            after: After::Start,
            limit: 100,
            offset: 0,
            within: Vec::new(),
        };
        list(conn, &q).unwrap().into_iter().map(|c| c.email).collect()
    }

    fn intact(conn: &Connection) {
        conn.execute(
            "INSERT INTO contacts_email_search (contacts_email_search) VALUES ('integrity-check')",
            [],
        )
        .expect("the search index matches the contacts");
    }

    #[test]
    fn rows_changed_or_deleted_before_their_commit_are_indexed_as_they_end_up() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::db::migrate::run(&mut conn).unwrap();
        conn.execute_batch(
            "INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('p', 'P', 0, 0, 0)",
        )
        .unwrap();
        let data = Map::new();
        let add = |email: &str| insert(&conn, "p", email, true, data.clone(), 1, Indexing::AtCommit).unwrap();
        let kept = add("kept@old.test");
        index_pending(&conn).unwrap();
        assert_eq!(search(&conn, "old.test"), ["kept@old.test"]);

        // In one transaction: a new row renamed, a new row deleted (its seq, the highest, is
        // given again to the next insert), and an indexed row renamed and one deleted.
        conn.execute_batch("BEGIN").unwrap();
        let mut renamed = add("first@new.test");
        renamed.email = "renamed@new.test".into();
        update(&conn, &renamed).unwrap();
        let gone = add("gone@new.test");
        assert!(delete(&conn, gone.seq).unwrap());
        let reused = add("reused@new.test");
        assert_eq!(reused.seq, gone.seq, "SQLite gave the deleted row's seq again");
        let mut old = kept.clone();
        old.email = "kept@moved.test".into();
        update(&conn, &old).unwrap();
        assert_eq!(index_pending(&conn).unwrap(), 2);
        conn.execute_batch("COMMIT").unwrap();

        intact(&conn);
        assert_eq!(search(&conn, "new.test"), ["renamed@new.test", "reused@new.test"]);
        assert_eq!(search(&conn, "moved"), ["kept@moved.test"]);
        assert!(search(&conn, "old.test").is_empty() && search(&conn, "gone").is_empty());
        assert_eq!(index_pending(&conn).unwrap(), 0, "the list is empty after indexing");
        assert!(delete(&conn, reused.seq).unwrap());
        intact(&conn);
        assert_eq!(search(&conn, "new.test"), ["renamed@new.test"]);
        // The counts follow inserts (in code), deletes and flips (by trigger).
        let real = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        let mut flipped = add("flip@x.test");
        flipped.subscribed = false;
        update(&conn, &flipped).unwrap();
        let expected = (real("SELECT count(*) FROM contacts"), real("SELECT sum(subscribed) FROM contacts"));
        assert_eq!((counts(&conn, "p").unwrap(), expected), ((3, 2), (3, 2)));
    }
}
