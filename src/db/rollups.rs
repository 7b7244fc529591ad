//! Events per project, name and hour (migration V16), for analytics and activity counts.

use super::error::Result;
use rusqlite::{Connection, params};

/// (bucket start in ms, name, events) between `from` (inclusive) and `to` (exclusive), by
/// buckets of `bucket_ms` (an hour or a day), for the names given (all when empty).
pub fn series(
    conn: &Connection,
    project: &str,
    (from, to): (i64, i64),
    bucket_ms: i64,
    names: &[&str],
) -> Result<Vec<(i64, String, i64)>> {
    let mut sql = String::from(
        "SELECT (hour / ?4) * ?4 AS bucket, name, sum(events) FROM event_hours
         WHERE project_id = ?1 AND hour >= ?2 AND hour < ?3",
    );
    let mut args: Vec<rusqlite::types::Value> =
        vec![project.to_string().into(), from.into(), to.into(), bucket_ms.into()];
    if !names.is_empty() {
        let marks: Vec<String> = names
            .iter()
            .map(|n| {
                args.push(n.to_string().into());
                format!("?{}", args.len())
            })
            .collect();
        sql.push_str(&format!(" AND name IN ({})", marks.join(", ")));
    }
    sql.push_str(" GROUP BY bucket, name ORDER BY bucket, name");
    Ok(conn
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// Events per name between `from` and `to`, most first.
pub fn totals(conn: &Connection, project: &str, from: i64, to: i64) -> Result<Vec<(String, i64)>> {
    Ok(conn.prepare_cached(
        "SELECT name, sum(events) AS n FROM event_hours WHERE project_id = ?1 AND hour >= ?2 AND hour < ?3
         GROUP BY name HAVING n > 0 ORDER BY n DESC, name",
    )?
    .query_map(params![project, from, to], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect::<rusqlite::Result<Vec<_>>>()?)
}
