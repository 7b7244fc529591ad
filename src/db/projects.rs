//! Projects and their memberships.

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde::Serialize;

use crate::clock;

/// A member's role in a project, ordered: a role includes the rights of those below it (owners
/// and admins manage members, keys, billing, reset and deletion; only owners delete and make
/// owners). `api::roles` checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Role {
    Member,
    Admin,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "OWNER",
            Role::Admin => "ADMIN",
            Role::Member => "MEMBER",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "OWNER" => Some(Role::Owner),
            "ADMIN" => Some(Role::Admin),
            "MEMBER" => Some(Role::Member),
            _ => None,
        }
    }
}

impl rusqlite::types::FromSql for Role {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let text = value.as_str()?;
        Role::parse(text)
            .ok_or_else(|| rusqlite::types::FromSqlError::Other(format!("bad role {text}").into()))
    }
}

/// What a wipe of the project does when its batches are done ([`crate::core::wipe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wipe {
    /// The project's data goes; the project, its members, keys, domains, webhook endpoints and
    /// sending history stay.
    Reset,
    /// Everything goes, the project last.
    Delete,
}

impl Wipe {
    pub fn as_str(self) -> &'static str {
        match self {
            Wipe::Reset => "reset",
            Wipe::Delete => "delete",
        }
    }
}

impl rusqlite::types::FromSql for Wipe {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        match value.as_str()? {
            "reset" => Ok(Wipe::Reset),
            "delete" => Ok(Wipe::Delete),
            other => Err(rusqlite::types::FromSqlError::Other(format!("bad wipe {other}").into())),
        }
    }
}

/// A project as stored.
#[derive(Debug, Clone)]
pub struct Project {
    pub id: String,
    pub name: String,
    pub disabled: bool,
    /// Set while a reset or deletion is under way: the keys are refused meanwhile.
    pub wiping: Option<Wipe>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The columns [`from_row`] reads, for queries that alias `projects` as `p`.
pub const COLUMNS: &str = "p.id, p.name, p.disabled, p.wiping, p.created_at, p.updated_at";
/// How many columns [`COLUMNS`] names: a query's own columns come after them.
pub const COLUMN_COUNT: usize = 6;

/// Reads a project from the first [`COLUMN_COUNT`] columns of a row selected with [`COLUMNS`].
pub fn from_row(r: &Row<'_>) -> rusqlite::Result<Project> {
    Ok(Project {
        id: r.get(0)?,
        name: r.get(1)?,
        disabled: r.get(2)?,
        wiping: r.get(3)?,
        created_at: r.get(4)?,
        updated_at: r.get(5)?,
    })
}

/// Inserts a project with `owner` as its OWNER.
pub fn insert(conn: &Connection, name: &str, owner: &str) -> Result<Project> {
    let id = super::ids::new_id();
    let now = clock::now_ms();
    conn.execute(
        "INSERT INTO projects (id, name, created_at, updated_at) VALUES (?1, ?2, ?3, ?3)",
        params![id, name, now],
    )?;
    add_member(conn, &id, owner, Role::Owner)?;
    Ok(Project { id, name: name.into(), disabled: false, wiping: None, created_at: now, updated_at: now })
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Project>> {
    Ok(conn
        .query_row(&format!("SELECT {COLUMNS} FROM projects p WHERE p.id = ?1"), [id], from_row)
        .optional()?)
}

/// The projects `user` belongs to, oldest first, with the user's role in each.
pub fn for_user(conn: &Connection, user: &str) -> Result<Vec<(Project, Role)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS}, m.role FROM projects p JOIN memberships m ON m.project_id = p.id
         WHERE m.user_id = ?1 ORDER BY p.created_at, p.rowid"
    ))?;
    Ok(stmt
        .query_map([user], |r| Ok((from_row(r)?, r.get(COLUMN_COUNT)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The project that owns the mail the server sends itself (migration V17): no members, no keys.
pub const SYSTEM: &str = "system";

/// Every project with its owners' emails, oldest first (for `tidings project list`); not the
/// [`SYSTEM`] one.
pub fn all_with_owners(conn: &Connection) -> Result<Vec<(Project, String)>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS}, coalesce((SELECT group_concat(u.email, ',') FROM memberships m
                 JOIN users u ON u.id = m.user_id WHERE m.project_id = p.id AND m.role = 'OWNER'), '')
         FROM projects p WHERE p.id != ?1 AND p.wiping IS NOT 'delete' ORDER BY p.created_at, p.rowid"
    ))?;
    Ok(stmt
        .query_map([SYSTEM], |r| Ok((from_row(r)?, r.get(COLUMN_COUNT)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Whether the project is being reset or deleted (or no longer exists): the workers then drop
/// its queued work instead of doing it.
pub fn is_wiping(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT wiping IS NOT NULL FROM projects WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()
        .map(|found| found.unwrap_or(true))?)
}

/// Changes the name and/or the disabled flag; returns the updated project.
pub fn update(
    conn: &Connection,
    id: &str,
    name: Option<&str>,
    disabled: Option<bool>,
) -> Result<Option<Project>> {
    conn.execute(
        "UPDATE projects SET name = coalesce(?2, name), disabled = coalesce(?3, disabled), updated_at = ?4
         WHERE id = ?1",
        params![id, name, disabled, clock::now_ms()],
    )?;
    get(conn, id)
}

/// The role of `user` in `project`, if a member.
pub fn role_of(conn: &Connection, project: &str, user: &str) -> Result<Option<Role>> {
    Ok(conn
        .query_row(
            "SELECT role FROM memberships WHERE project_id = ?1 AND user_id = ?2",
            [project, user],
            |r| r.get(0),
        )
        .optional()?)
}

/// One member of a project, as listed.
#[derive(Debug, Clone)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub role: Role,
    pub created_at: i64,
}

const MEMBER_QUERY: &str = "SELECT m.user_id, u.email, m.role, m.created_at FROM memberships m
     JOIN users u ON u.id = m.user_id WHERE m.project_id = ?1";

fn member_row(r: &Row<'_>) -> rusqlite::Result<Member> {
    Ok(Member { user_id: r.get(0)?, email: r.get(1)?, role: r.get(2)?, created_at: r.get(3)? })
}

/// The members of a project, in the order they joined.
pub fn members(conn: &Connection, project: &str) -> Result<Vec<Member>> {
    let mut stmt = conn.prepare(&format!("{MEMBER_QUERY} ORDER BY m.created_at, m.rowid"))?;
    Ok(stmt.query_map([project], member_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
}

pub fn member(conn: &Connection, project: &str, user: &str) -> Result<Option<Member>> {
    Ok(conn
        .query_row(&format!("{MEMBER_QUERY} AND m.user_id = ?2"), [project, user], member_row)
        .optional()?)
}

/// Adds a member; fails on the primary key when the user already belongs to the project.
pub fn add_member(conn: &Connection, project: &str, user: &str, role: Role) -> Result<()> {
    conn.execute(
        "INSERT INTO memberships (project_id, user_id, role, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![project, user, role.as_str(), clock::now_ms()],
    )?;
    Ok(())
}

pub fn set_role(conn: &Connection, project: &str, user: &str, role: Role) -> Result<bool> {
    Ok(conn.execute(
        "UPDATE memberships SET role = ?3 WHERE project_id = ?1 AND user_id = ?2",
        params![project, user, role.as_str()],
    )? > 0)
}

pub fn remove_member(conn: &Connection, project: &str, user: &str) -> Result<bool> {
    Ok(conn.execute("DELETE FROM memberships WHERE project_id = ?1 AND user_id = ?2", [project, user])? > 0)
}

pub fn owner_count(conn: &Connection, project: &str) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT count(*) FROM memberships WHERE project_id = ?1 AND role = 'OWNER'",
        [project],
        |r| r.get(0),
    )?)
}

/// The facts behind a project's onboarding checklist, each one indexed lookup.
#[derive(Debug, Clone)]
pub struct FirstSteps {
    pub domain_verified: bool,
    pub has_contact: bool,
    /// Mail that reached a relay (or the capture outbox), as the reputation counts it by day.
    pub has_sent: bool,
    pub has_campaign: bool,
    /// The event names the project has (the service's own among them).
    pub event_names: Vec<String>,
}

/// The facts behind `project`'s onboarding checklist.
pub fn first_steps(conn: &Connection, project: &str) -> Result<FirstSteps> {
    let exists =
        |sql: &str| conn.query_row(&format!("SELECT EXISTS ({sql})"), [project], |r| r.get::<_, bool>(0));
    Ok(FirstSteps {
        domain_verified: exists("SELECT 1 FROM domains WHERE project_id = ?1 AND status = 'verified'")?,
        has_contact: exists("SELECT 1 FROM contacts WHERE project_id = ?1")?,
        has_sent: exists("SELECT 1 FROM sending_days WHERE project_id = ?1 AND sent > 0")?,
        has_campaign: exists("SELECT 1 FROM campaigns WHERE project_id = ?1")?,
        event_names: conn
            .prepare("SELECT name FROM event_names WHERE project_id = ?1")?
            .query_map([project], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?,
    })
}
