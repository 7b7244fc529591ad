//! The catalogue of a project's custom fields (`contact_fields`), and the values contacts hold
//! in one.

use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::error::Result;

/// The SQLite JSON path of a dotted field path (`profile.tier` → `$."profile"."tier"`).
pub fn json_path(path: &str) -> String {
    let mut out = String::from("$");
    for part in path.split('.') {
        out.push_str(".\"");
        out.push_str(part);
        out.push('"');
    }
    out
}

/// A field in the catalogue: its path under `data`, its type, and how many contacts have it.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogued {
    pub path: String,
    pub kind: String,
    pub contacts: i64,
}

/// The project's catalogue, by path.
pub fn list(conn: &Connection, project: &str) -> Result<Vec<Catalogued>> {
    Ok(conn
        .prepare_cached(
            "SELECT path, type, contacts FROM contact_fields WHERE project_id = ?1 ORDER BY path",
        )?
        .query_map([project], |r| Ok(Catalogued { path: r.get(0)?, kind: r.get(1)?, contacts: r.get(2)? }))?
        .collect::<rusqlite::Result<_>>()?)
}

/// The type of field `path`, when the catalogue has it.
pub fn kind_of(conn: &Connection, project: &str, path: &str) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT type FROM contact_fields WHERE project_id = ?1 AND path = ?2")?
        .query_row([project, path], |r| r.get(0))
        .optional()?)
}

/// Adds `delta` to the count of contacts having field `path` (never below 0); how many rows
/// that changed (0 when the field is not in the catalogue).
pub fn add_to_count(conn: &Connection, project: &str, path: &str, delta: i64) -> Result<usize> {
    Ok(conn
        .prepare_cached(
            "UPDATE contact_fields SET contacts = max(contacts + ?3, 0) WHERE project_id = ?1 AND path = ?2",
        )?
        .execute(params![project, path, delta])?)
}

/// Puts field `path` of type `kind` in the catalogue, with `contacts` contacts having it. The
/// project's field cap (migration V22) refuses it with `FIELD_LIMIT_EXCEEDED`.
pub fn insert(
    conn: &Connection,
    project: &str,
    path: &str,
    kind: &str,
    contacts: i64,
    now: i64,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO contact_fields (project_id, path, type, contacts, created_at) VALUES (?1, ?2, ?3, max(?4, 0), ?5)",
    )?
    .execute(params![project, path, kind, contacts, now])?;
    Ok(())
}

/// Forgets field `path` and every field under it (`path.…`).
pub fn forget(conn: &Connection, project: &str, path: &str) -> Result<()> {
    conn.execute(
        // A plain prefix test: as a LIKE pattern, `a_b` would also match `axb.c`.
        "DELETE FROM contact_fields WHERE project_id = ?1
           AND (path = ?2 OR substr(path, 1, length(?2) + 1) = ?2 || '.')",
        params![project, path],
    )?;
    Ok(())
}

/// The distinct values contacts hold in field `path`, in order, after `after` (a value from
/// an earlier page), at most `limit`, each with how many contacts have it. `boolean`: the field
/// holds booleans (SQLite gives them as 0 and 1).
pub fn values(
    conn: &Connection,
    project: &str,
    path: &str,
    boolean: bool,
    after: Option<&Value>,
    limit: usize,
) -> Result<Vec<(Value, i64)>> {
    let after = after.map(|v| match v {
        Value::Number(n) => {
            n.as_i64().map(Sql::Integer).unwrap_or_else(|| Sql::Real(n.as_f64().unwrap_or(0.0)))
        }
        Value::String(s) => Sql::Text(s.clone()),
        _ => Sql::Null,
    });
    let rows: Vec<(Sql, i64)> = conn
        .prepare_cached(
            "SELECT v, count(*) FROM (SELECT json_extract(data, ?2) AS v FROM contacts WHERE project_id = ?1)
             WHERE v IS NOT NULL AND (?3 IS NULL OR v > ?3) GROUP BY v ORDER BY v LIMIT ?4",
        )?
        .query_map(params![project, json_path(path), after, limit as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let json = |v: Sql| match v {
        Sql::Integer(i) if boolean => json!(i != 0),
        Sql::Integer(i) => json!(i),
        Sql::Real(f) => json!(f),
        // An object or array comes back as its JSON text.
        Sql::Text(s) => serde_json::from_str::<Value>(&s)
            .ok()
            .filter(|j| j.is_object() || j.is_array())
            .unwrap_or(json!(s)),
        _ => Value::Null,
    };
    Ok(rows.into_iter().map(|(v, n)| (json(v), n)).collect())
}

#[cfg(test)]
mod tests {
    use super::json_path;

    #[test]
    fn dotted_paths_become_quoted_json_paths() {
        assert_eq!(json_path("profile.tier"), "$.\"profile\".\"tier\"");
        assert_eq!(json_path("first name"), "$.\"first name\"");
    }
}
