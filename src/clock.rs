//! Wall-clock time as stored in the database (milliseconds since the Unix epoch) and as shown in
//! the API (RFC 3339 in UTC with milliseconds, like JavaScript's `toISOString`).

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

const ISO: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let now = OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as i64
}

/// `2026-11-21T12:34:56.789Z` for a millisecond timestamp.
pub fn iso(ms: i64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| t.format(ISO).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".into())
}

/// The current time as [`iso`] renders it.
pub fn now_iso() -> String {
    iso(now_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_has_fixed_millisecond_precision() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_795_000_000_123), "2026-11-18T11:06:40.123Z");
    }
}
