//! List shapes of api.md: cursor pages `{data, cursor, hasMore, total}` and their parameters.
//!
//! A cursor is opaque to clients: base64url of a small JSON object naming the list's order and
//! the last row of the page, so the next page starts right after it (keyset pagination, never
//! OFFSET: rows added meanwhile are neither skipped nor repeated).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;

/// `limit`: default 20, at least 1, larger values clamped to 100.
pub fn limit(raw: Option<&str>) -> Result<usize, ApiError> {
    let Some(raw) = raw else { return Ok(DEFAULT_LIMIT) };
    match raw.trim().parse::<i64>() {
        Ok(n) if n >= 1 => Ok((n as usize).min(MAX_LIMIT)),
        _ => Err(ApiError::bad_request(format!(
            "limit must be an integer from 1 to {MAX_LIMIT} (found {raw:?})"
        ))),
    }
}

/// A boolean query parameter: `true` or `false`.
pub fn boolean(name: &str, raw: Option<&str>) -> Result<Option<bool>, ApiError> {
    match raw {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(ApiError::bad_request(format!("{name} must be true or false (found {other:?})"))),
    }
}

/// The opaque form of a cursor.
pub fn encode<T: Serialize>(position: &T) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(position).unwrap_or_default())
}

/// A cursor from a previous page; 400 when it is not one.
pub fn decode<T: DeserializeOwned>(cursor: &str) -> Result<T, ApiError> {
    URL_SAFE_NO_PAD
        .decode(cursor.trim())
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(malformed)
}

/// The 400 for a cursor that no page of this list made.
pub fn malformed() -> ApiError {
    ApiError::bad_request("The cursor is malformed; pass the cursor of a previous page unchanged")
}

/// `page` and `pageSize` of a page list: page ≥ 1 (default 1), pageSize ≥ 1 (default 20, at
/// most `max`); anything else is 400.
pub fn page_params(page: Option<&str>, page_size: Option<&str>, max: usize) -> Result<(i64, i64), ApiError> {
    let parse = |name: &str, raw: Option<&str>, default: i64| -> Result<i64, ApiError> {
        match raw {
            None => Ok(default),
            Some(raw) => match raw.trim().parse::<i64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(ApiError::bad_request(format!(
                    "{name} must be a whole number of at least 1 (found {raw:?})"
                ))),
            },
        }
    };
    let page = parse("page", page, 1)?;
    let size = parse("pageSize", page_size, DEFAULT_LIMIT as i64)?.min(max as i64);
    Ok((page, size))
}

/// The rows before page `page` of `size` (saturating: any page is a valid question, and one far
/// past the end is simply empty).
pub fn offset(page: i64, size: i64) -> i64 {
    (page - 1).saturating_mul(size)
}

/// The query of a page list of named rows (templates, campaigns): `page` and `pageSize` checked
/// (400), `search` trimmed, `sort` `name`/`createdAt`/`updatedAt` (anything else: `createdAt`),
/// `dir` `asc` or `desc` (the default); `only` a column's value.
pub fn list_query(
    project: String,
    (page, page_size): (Option<&str>, Option<&str>),
    search: Option<&str>,
    (sort, dir): (Option<&str>, Option<&str>),
    only: Option<(&'static str, String)>,
) -> Result<(crate::db::ListQuery, i64, i64), ApiError> {
    let (page, page_size) = page_params(page, page_size, MAX_LIMIT)?;
    let sort = match sort {
        Some("name") => "name",
        Some("updatedAt") => "updated_at",
        _ => "created_at",
    };
    let query = crate::db::ListQuery {
        project,
        only,
        search: search.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string),
        sort,
        descending: dir != Some("asc"),
        offset: offset(page, page_size),
        limit: page_size,
    };
    Ok((query, page, page_size))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn limits_are_clamped_and_checked() {
        assert_eq!(limit(None).unwrap(), 20);
        assert_eq!(limit(Some("5")).unwrap(), 5);
        assert_eq!(limit(Some("1000")).unwrap(), 100);
        for bad in ["0", "-3", "ten", ""] {
            assert_eq!(limit(Some(bad)).unwrap_err().status, 400, "{bad:?}");
        }
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = encode(&json!({ "s": "email", "e": "a@b.co" }));
        assert_eq!(decode::<Value>(&c).unwrap(), json!({ "s": "email", "e": "a@b.co" }));
        assert_eq!(decode::<Value>("%%%").unwrap_err().status, 400);
        assert_eq!(decode::<Value>("bm90IGpzb24").unwrap_err().status, 400);
    }
}
