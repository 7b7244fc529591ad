//! The references registry: what each segment and campaign names (fields, events, segments,
//! templates, sender domains). It answers the `usage` endpoints and the "in use → 409" checks.
//! An owner's rows are rewritten with it and dropped with it (by triggers on the owner tables).

use super::error::Result;
use rusqlite::{Connection, OptionalExtension, params};

/// What holds references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    Segment,
    Campaign,
    Workflow,
}

impl Owner {
    fn as_str(self) -> &'static str {
        match self {
            Owner::Segment => "segment",
            Owner::Campaign => "campaign",
            Owner::Workflow => "workflow",
        }
    }
}

/// Replaces what `owner` refers to with `refs` (`(kind, name)` pairs).
pub fn set(conn: &Connection, owner: Owner, id: &str, project: &str, refs: &[(&str, &str)]) -> Result<()> {
    conn.prepare_cached("DELETE FROM refs WHERE owner_kind = ?1 AND owner_id = ?2")?
        .execute([owner.as_str(), id])?;
    let mut insert = conn.prepare_cached(
        // A pair named twice is kept once; any other refusal (a kind the table does not know) is
        // an error, not a reference silently lost.
        "INSERT INTO refs (owner_kind, owner_id, project_id, kind, name) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT DO NOTHING",
    )?;
    for (kind, name) in refs {
        insert.execute(params![owner.as_str(), id, project, kind, name])?;
    }
    Ok(())
}

/// What `owner` refers to, as `(kind, name)` pairs.
pub fn of(conn: &Connection, owner: Owner, id: &str) -> Result<Vec<(String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT kind, name FROM refs WHERE owner_kind = ?1 AND owner_id = ?2 ORDER BY kind, name",
        )?
        .query_map([owner.as_str(), id], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A SCHEDULED or SENDING campaign (id, name) of `project` that sends from `domain` or a
/// subdomain of it, if any.
pub fn active_campaign_on_domain(
    conn: &Connection,
    project: &str,
    domain: &str,
) -> Result<Option<(String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT c.id, c.name FROM refs r JOIN campaigns c ON c.id = r.owner_id
         WHERE r.project_id = ?1 AND r.kind = 'domain' AND r.owner_kind = 'campaign'
           AND (r.name = ?2 OR substr(r.name, -length(?2) - 1) = '.' || ?2)
           AND c.status IN ('SCHEDULED', 'SENDING')
         ORDER BY c.name LIMIT 1",
        )?
        .query_row([project, domain], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The segments (id, name) of `project` that name `name` of `kind`.
pub fn segments(conn: &Connection, project: &str, kind: &str, name: &str) -> Result<Vec<(String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT s.id, s.name FROM refs r JOIN segments s ON s.id = r.owner_id
         WHERE r.project_id = ?1 AND r.kind = ?2 AND r.name = ?3 AND r.owner_kind = 'segment'
         ORDER BY s.name, s.id",
        )?
        .query_map([project, kind, name], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The campaigns (id, name, status) of `project` that name `name` of `kind`.
pub fn campaigns(
    conn: &Connection,
    project: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<(String, String, String)>> {
    Ok(conn
        .prepare_cached(
            "SELECT c.id, c.name, c.status FROM refs r JOIN campaigns c ON c.id = r.owner_id
         WHERE r.project_id = ?1 AND r.kind = ?2 AND r.name = ?3 AND r.owner_kind = 'campaign'
         ORDER BY c.name, c.id",
        )?
        .query_map([project, kind, name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The workflows (id, name, enabled) of `project` that name `name` of `kind`.
pub fn workflows(
    conn: &Connection,
    project: &str,
    kind: &str,
    name: &str,
) -> Result<Vec<(String, String, bool)>> {
    Ok(conn
        .prepare_cached(
            "SELECT w.id, w.name, w.enabled FROM refs r JOIN workflows w ON w.id = r.owner_id
         WHERE r.project_id = ?1 AND r.kind = ?2 AND r.name = ?3 AND r.owner_kind = 'workflow'
         ORDER BY w.name, w.id",
        )?
        .query_map([project, kind, name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// A SCHEDULED or SENDING campaign (id, name) of `project` that names `name` of `kind`, if any:
/// what it uses cannot be deleted while it may still send.
pub fn active_campaign(
    conn: &Connection,
    project: &str,
    kind: &str,
    name: &str,
) -> Result<Option<(String, String)>> {
    Ok(campaigns(conn, project, kind, name)?
        .into_iter()
        .find(|(_, _, status)| status == "SCHEDULED" || status == "SENDING")
        .map(|(id, name, _)| (id, name)))
}
