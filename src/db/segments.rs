//! Segments, their stored members and what their conditions refer to.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

/// A segment as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub id: String,
    pub project_id: String,
    pub name: String,
    pub slug: String,
    pub description: Option<String>,
    /// `DYNAMIC` or `STATIC`.
    pub kind: String,
    pub condition: Option<Value>,
    pub track_membership: bool,
    pub member_count: i64,
    pub counted_at: Option<i64>,
    pub compute_cursor: Option<i64>,
    pub compute_entered: i64,
    pub compute_exited: i64,
    pub computed_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Segment {
    pub fn is_static(&self) -> bool {
        self.kind == "STATIC"
    }
}

const COLUMNS: &str = "id, project_id, name, slug, description, type, condition, track_membership, member_count, \
     counted_at, compute_cursor, compute_entered, compute_exited, computed_at, created_at, updated_at";

fn from_row(r: &Row<'_>) -> rusqlite::Result<Segment> {
    let condition: Option<String> = r.get(6)?;
    Ok(Segment {
        id: r.get(0)?,
        project_id: r.get(1)?,
        name: r.get(2)?,
        slug: r.get(3)?,
        description: r.get(4)?,
        kind: r.get(5)?,
        condition: condition.and_then(|c| serde_json::from_str(&c).ok()),
        track_membership: r.get(7)?,
        member_count: r.get(8)?,
        counted_at: r.get(9)?,
        compute_cursor: r.get(10)?,
        compute_entered: r.get(11)?,
        compute_exited: r.get(12)?,
        computed_at: r.get(13)?,
        created_at: r.get(14)?,
        updated_at: r.get(15)?,
    })
}

pub fn insert(conn: &Connection, s: &Segment) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO segments ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
        ),
        params![
            s.id,
            s.project_id,
            s.name,
            s.slug,
            s.description,
            s.kind,
            s.condition.as_ref().map(Value::to_string),
            s.track_membership,
            s.member_count,
            s.counted_at,
            s.compute_cursor,
            s.compute_entered,
            s.compute_exited,
            s.computed_at,
            s.created_at,
            s.updated_at
        ],
    )?;
    Ok(())
}

/// Writes every changeable column back (an UPDATE: replacing the row would drop its members).
pub fn update(conn: &Connection, s: &Segment) -> Result<()> {
    conn.prepare_cached(
        "UPDATE segments SET name = ?2, description = ?3, condition = ?4, track_membership = ?5, member_count = ?6,
             counted_at = ?7, compute_cursor = ?8, compute_entered = ?9, compute_exited = ?10, computed_at = ?11,
             updated_at = ?12
         WHERE id = ?1",
    )?
    .execute(params![
        s.id,
        s.name,
        s.description,
        s.condition.as_ref().map(Value::to_string),
        s.track_membership,
        s.member_count,
        s.counted_at,
        s.compute_cursor,
        s.compute_entered,
        s.compute_exited,
        s.computed_at,
        s.updated_at
    ])?;
    Ok(())
}

/// A segment of `project`.
pub fn get(conn: &Connection, project: &str, id: &str) -> Result<Option<Segment>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM segments WHERE id = ?1 AND project_id = ?2"))?
        .query_row([id, project], from_row)
        .optional()?)
}

/// A segment of any project (for jobs, which carry only the id).
pub fn by_id(conn: &Connection, id: &str) -> Result<Option<Segment>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM segments WHERE id = ?1"))?
        .query_row([id], from_row)
        .optional()?)
}

/// A project's segments, newest first.
pub fn list(conn: &Connection, project: &str) -> Result<Vec<Segment>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM segments WHERE project_id = ?1 ORDER BY created_at DESC, id DESC"
        ))?
        .query_map([project], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Segments of every project after `after` (by id), for the periodic refresh.
pub fn page_all(conn: &Connection, after: &str, limit: usize) -> Result<Vec<Segment>> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM segments WHERE id > ?1 ORDER BY id LIMIT ?2"))?
        .query_map(params![after, limit as i64], from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn delete(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM segments WHERE id = ?1", [id])? > 0)
}

pub fn slug_taken(conn: &Connection, project: &str, slug: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM segments WHERE project_id = ?1 AND slug = ?2")?
        .query_row([project, slug], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())?)
}

/// Adds a stored member; whether it was new.
pub fn add_member(conn: &Connection, segment: &str, contact_seq: i64, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "INSERT INTO segment_members (segment_id, contact_seq, added_at) VALUES (?1, ?2, ?3)
             ON CONFLICT DO NOTHING",
        )?
        .execute(params![segment, contact_seq, now])?
        > 0)
}

/// Removes a stored member; whether it was one.
/// Whether the contact at `contact_seq` is a stored member of `segment`.
pub fn is_member(conn: &Connection, segment: &str, contact_seq: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM segment_members WHERE segment_id = ?1 AND contact_seq = ?2")?
        .query_row(params![segment, contact_seq], |_| Ok(()))
        .optional()?
        .is_some())
}

pub fn remove_member(conn: &Connection, segment: &str, contact_seq: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("DELETE FROM segment_members WHERE segment_id = ?1 AND contact_seq = ?2")?
        .execute(params![segment, contact_seq])?
        > 0)
}

/// Drops every stored member.
pub fn clear_members(conn: &Connection, segment: &str) -> Result<()> {
    conn.prepare_cached("DELETE FROM segment_members WHERE segment_id = ?1")?.execute([segment])?;
    Ok(())
}

/// The stored members of a segment among contacts `seq` `from..=to`.
pub fn members_between(
    conn: &Connection,
    segment: &str,
    from: i64,
    to: i64,
) -> Result<std::collections::HashSet<i64>> {
    Ok(conn
        .prepare_cached(
            "SELECT contact_seq FROM segment_members WHERE segment_id = ?1 AND contact_seq BETWEEN ?2 AND ?3",
        )?
        .query_map(params![segment, from, to], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

/// How many stored members a segment has.
pub fn stored_count(conn: &Connection, segment: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM segment_members WHERE segment_id = ?1")?
        .query_row([segment], |r| r.get(0))?)
}

/// One page of a static segment's members, newest first.
pub fn members_page(
    conn: &Connection,
    segment: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<super::contacts::Contact>> {
    let query = format!(
        "SELECT {} FROM segment_members m JOIN contacts c ON c.seq = m.contact_seq
         WHERE m.segment_id = ?1 ORDER BY m.contact_seq DESC LIMIT ?2 OFFSET ?3",
        super::contacts::COLUMNS
    );
    Ok(conn
        .prepare_cached(&query)?
        .query_map(params![segment, limit, offset], super::contacts::from_row)?
        .collect::<rusqlite::Result<_>>()?)
}
